"""Query parameters that only carry tracking data, stripped from canonical URLs by default.

Entries are glob patterns in the syntax of
:attr:`crawler.url.canonical.UrlRules.strip_params`: ``*`` and ``?`` wildcards, matched
against the decoded parameter name, ignoring case. An entry written ``domain:pattern``
applies only to that host and its subdomains.

A parameter belongs here only when its name is specific to an analytics or advertising
vendor. Generic words that a site could use for content or navigation (``page``, ``id``,
``ref``, ``source``, ``campaign``, ``cid``, ``si``...) never do, even when a vendor also uses
them: a wrong entry merges distinct pages, a missing one only costs a duplicate fetch.
Prefix wildcards are used only for vendor-owned prefixes (``utm_``, ``hsa_``, ``mtm_``...).
"""

from __future__ import annotations

DEFAULT_STRIP_PARAMS: tuple[str, ...] = (
    # Google Analytics campaign parameters (support.google.com/analytics/answer/10917952)
    # and cross-domain linker (answer/10071811).
    "utm_*",
    "_ga",
    "_gl",
    # Google Ads / Campaign Manager / Merchant Center click identifiers
    # (support.google.com/google-ads/answer/10417364, searchads/answer/6292795,
    # campaignmanager/answer/9182069, google-ads/answer/13327296, analytics/answer/11479699).
    "gclid",
    "gclsrc",
    "dclid",
    "gbraid",
    "wbraid",
    "gad_source",
    "srsltid",
    # Meta (Facebook, Instagram), from the Meta Conversions API docs; igshid from the
    # mpchadwick/tracking-query-params-registry list (public domain).
    "fbclid",
    "igshid",
    # Microsoft Advertising (help.ads.microsoft.com/apex/index/3/en/60000).
    "msclkid",
    # Yandex / Yahoo Japan click id (yandex.com/support/metrica/data/yclid.html), Yahoo.
    "yclid",
    "vmcid",
    # X/Twitter, TikTok, LinkedIn, Snapchat, Pinterest, Nextdoor click identifiers
    # (each vendor's conversion-tracking docs; listed in mpchadwick's registry).
    "twclid",
    "ttclid",
    # X/Twitter's impression id on links from its site; ClearURLs globalRules
    # ((?:%3F)?__twitter_impression).
    "__twitter_impression",
    "li_fat_id",
    "sccid",
    "epik",
    "ndclid",
    # Adobe Analytics / Adobe Advertising Cloud.
    "s_kwcid",
    "ef_id",
    # Matomo and its former name Piwik (matomo.org/docs/tracking-campaigns/). The pk_
    # prefix is spelled out because "pk" alone is a common primary-key prefix.
    "mtm_*",
    "matomo_*",
    "piwik_*",
    "pk_campaign",
    "pk_cpn",
    "pk_kwd",
    "pk_keyword",
    "pk_source",
    "pk_medium",
    "pk_content",
    "pk_cid",
    "pk_group",
    "pk_placement",
    # HubSpot ads (knowledge.hubspot.com/ads/ad-tracking-in-hubspot) and email/CTA tracking.
    "hsa_*",
    "_hsenc",
    "_hsmi",
    "__hstc",
    "__hssc",
    "__hsfp",
    "hsctatracking",
    # Email service providers: Mailchimp, Marketo, Drip, Omeda, Vero, dotdigital,
    # Bronto, Listrak, Klaviyo (mpchadwick's registry and vendor docs).
    "mc_cid",
    "mc_eid",
    "mc_tc",  # ClearURLs globalRules (?:%3F)?mc_(?:eid|cid|tc)
    "mkt_tok",
    "__s",
    "oly_anon_id",
    "oly_enc_id",
    "vero_id",
    "vero_conv",
    "dm_i",
    "_bta_tid",
    "_bta_c",
    "trk_contact",
    "trk_msg",
    "trk_module",
    "trk_sid",
    "_ke",
    "_kx",
    # Affiliate and attribution networks: Wicked Reports, Rakuten Advertising, Impact,
    # Branch, eBay Partner Network, Marin, Springbot, GoDataFeed, Wunderkind,
    # Triple Whale (mpchadwick's registry).
    "wickedid",
    "rb_clickid",
    "irclickid",
    "irgwc",
    "_branch_match_id",
    "mkevt",
    "mkcid",
    "mkrid",
    "mkwid",
    "pcrid",
    "redirect_log_mongo_id",
    "redirect_mongo_id",
    "sb_referer_host",
    "gdfms",
    "gdftrk",
    "gdffi",
    "sms_click",
    "sms_source",
    "sms_uph",
    "tw_source",
    "tw_campaign",
    "tw_term",
    "tw_content",
    "tw_adid",
    # Names that two or more public parameter registries strip on every site (ClearURLs,
    # AdGuard's URL tracking filter, Brave's query filter and clean-link list, DuckDuckGo,
    # Neat URL, mpchadwick's registry), each reviewed as specific to one vendor:
    # Facebook share links,
    "fb_action_ids",
    "fb_action_types",
    "fb_source",
    "fb_ref",
    "fb_comment_id",
    "action_object_map",
    "action_type_map",
    "action_ref_map",
    # Google Analytics (legacy campaign names), Google search and Ads, AMP,
    "ga_source",
    "ga_medium",
    "ga_term",
    "ga_content",
    "ga_campaign",
    "ga_place",
    "gs_l",
    "gad_campaignid",
    "usqp",
    # Yandex and Yahoo (search click ids, consent redirects),
    "ysclid",
    "ymclid",
    "guce_referrer",
    "guce_referrer_sig",
    "guccounter",
    # Adobe, Webtrekk (Mapp Intelligence; wtmc and wtzmc are the spellings without "_" of
    # ClearURLs' (?:%3F)?wt_?z?mc), Openstat, AT Internet (Piano), Cxense, Matomo's visitor id,
    "s_cid",
    "wt_mc",
    "wt_zmc",
    "wtmc",
    "wtzmc",
    "_openstat",
    "at_medium",
    "at_campaign",
    "at_campaign_type",
    "at_creation",
    "at_emailtype",
    "at_link",
    "at_link_id",
    "at_link_origin",
    "at_link_type",
    "at_ptr_name",
    "at_recipient_id",
    "at_recipient_list",
    "at_send_date",
    "at_custom1",
    "at_custom2",
    "at_custom3",
    "at_custom4",
    "cx_click",
    "cx_recsorder",
    "cx_recswidget",
    "pk_vid",
    # newsletters: MailerLite, beehiiv,
    "ml_subscriber",
    "ml_subscriber_hash",
    "_bhlid",
    # internal-campaign conventions with their own prefixes (itm_, hmb_, dpg_),
    "itm_source",
    "itm_medium",
    "itm_campaign",
    "itm_term",
    "itm_content",
    "hmb_source",
    "hmb_medium",
    "hmb_campaign",
    "dpg_source",
    "dpg_medium",
    "dpg_content",
    "dpg_campaign",
    # affiliate networks: Impact, Branch, Unicorn.
    "ir_partnerid",
    "ir_campaignid",
    "ir_adid",
    "_branch_referrer",
    "unicorn_click_id",
    # Listed by one registry, and named after its vendor: AliExpress affiliate links,
    # ad servers and affiliate networks (Adsterra, Admitad, CJ, Awin, Tradedoubler,
    # ShareASale), newsletters (ConvertKit, Salesforce Marketing Cloud), Adobe.
    "aff_platform",
    "aff_trace_key",
    "adsterra_clid",
    "adsterra_placement_id",
    "admitad_uid",
    "cjevent",
    "cjdata",
    "tduid",
    "sscid",
    "ck_subscriber_id",
    "sfmc_id",
    "sfmc_activityid",
    "adobe_mc_sdid",
    "adobe_mc_ref",
    # Named after one vendor, each listed by at least one registry on every site and
    # reviewed one by one (a name a site could use for content stays out: see
    # crawler.url.tracking_registries.REVIEWED_NOT_STRIPPED and the tests' generic names):
    # Adjust (adjust.com); AdGuard general_url.txt "adjust.com tracking". gps_adid is the
    # Google Play advertising id Adjust appends, listed in the same block.
    "adj_campaign",
    "adj_creative",
    "adj_label",
    "adjust_adgroup",
    "adjust_campaign",
    "adjust_creative",
    "adjust_referrer",
    "adjust_tracker",
    "adjust_tracker_limit",
    "gps_adid",
    # AppsFlyer OneLink; AdGuard general_url.txt (its "AappsFlyer" block).
    "af_ad",
    "af_adset",
    "af_click_lookback",
    "af_force_deeplink",
    "af_xp",
    # MyTracker (tracker.my.com); AdGuard "MyTracker" and "tracker.my.com".
    "mt_adset",
    "mt_campaign",
    "mt_click_id",
    "mt_creative",
    "mt_link_id",
    "mt_medium",
    "mt_network",
    "mt_sub1",
    "mt_sub2",
    "mt_sub3",
    "mt_sub4",
    "mt_sub5",
    # AD EBiS (ebis.ne.jp); AdGuard "AD EBiS" and support.ebis.ne.jp/s/article/23146.
    "ebisadid",
    "ebisother1",
    "ebisother2",
    "ebisother3",
    "ebisother4",
    "ebisother5",
    # Oracle Eloqua; AdGuard "Oracle Eloqua" (elq, elqaid, elqak, elqat, elqTrackId,
    # elqCampaignId), Neat URL "Campaign tracking (Oracle Eloqua)" (elqTrack).
    "elq*",
    # Blueshift; AdGuard "email subscriptions tracking" (six bsft_ names), Brave
    # query-filter.json.
    "bsft_*",
    # Mindbox (mindbox.ru); AdGuard "mindbox.ru" and "Mindbox email tracking".
    "mindbox-*",
    # Segmentify; AdGuard "Segmentify" and segmentify.github.io/segmentify-dev-doc.
    "_sgm_*",
    # IBM Coremetrics / Acoustic marketing-channel parameters; AdGuard "Coremetrics"
    # ($removeparam=/^cm_mmc/), Brave clean-urls.json (cm_mmc, cm_mmca1 to cm_mmca15).
    "cm_mmc*",
    # AT Internet / Piano Analytics campaign parameters; AdGuard "Campaign link tracking"
    # (xtor, developers.atinternet-solutions.com), Brave clean-urls.json (at_*). "at_type"
    # is left out: it is in GENERIC_PARAM_NAMES.
    "xtor",
    "at_channel",
    "at_detail_placement",
    "at_format",
    "at_general_placement",
    "at_identifier",
    "at_network",
    "at_platform",
    "at_term",
    "at_variant",
    # Northbeam; AdGuard, Brave clean-urls.json.
    "nb_adid",
    "nb_aname",
    "nb_asize",
    "nb_atype",
    "nb_cid",
    "nb_expid_meta",
    "nb_mtype",
    "nb_partner_name",
    "nb_partner_shared_id",
    "nb_pid",
    "nb_placement",
    "nb_platform",
    "nb_product_sku",
    # Dialog Insight (Openfield) email tracking; Brave query-filter.json (eight oft_ names).
    "oft_*",
    # Emarsys; AdGuard "Emarsys".
    "ems_dl",
    "emcs_t",
    # Salesforce Marketing Cloud (ExactTarget) email links; Brave clean-urls.json lists the
    # three together.
    "et_cid",
    "et_lid",
    "et_rid",
    # Squarespace email campaigns; Brave query-filter.json (ss_email_id) and clean-urls.json.
    "ss_campaign_id",
    "ss_campaign_name",
    "ss_campaign_sent_date",
    "ss_email_id",
    # IBM Acoustic Campaign (Silverpop); Neat URL "Campaign tracking (IBM Acoustic Campaign)".
    "spjobid",
    "spmailingid",
    "spreportid",
    # MailerLite; Brave clean-urls.json (short forms of the existing ml_subscriber*).
    "ml_sub",
    "ml_sub_hash",
    # Triple Whale; AdGuard (kb.triplewhale.com/en/articles/5740620), completes the tw_ set.
    "tw_medium",
    "tw_profile_id",
    # Brave Ads; Brave clean-urls.json.
    "brave-campaign-id",
    "brave-creative-id",
    "brave-creative-set-id",
    # Yandex click/order ids; Brave clean-urls.json, listed with yclid, ymclid, ysclid.
    "yadclid",
    "yadordid",
    # LY Corporation (Yahoo! JAPAN / LINE) ads; AdGuard "Yahoo JP" and "LINE Ad click ID".
    "_ly_c",
    "_ly_r",
    "yj_r",
    "ldtag_cl",
    # Email and CRM platforms: ActiveCampaign (vgo_ee), Blackbaud (bbeml), Shopify Email
    # (syclid); Brave query-filter.json.
    "vgo_ee",
    "bbeml",
    "syclid",
    # Affiliate and ad networks named by AdGuard: Awin ("awin.com"), ChannelSight
    # ("channelsight.com"), BeMob (docs.bemob.com), AD Counter ("AD Counter by
    # live-revolution.co.jp"), Bance, Winfluencer, LOGLY, Jimoty ("jmty.jp"), Visumo,
    # TCS, Zucks (named in the parameter).
    "awc",
    "cstrackid",
    "bemobdata",
    "adc_publisher",
    "adc_token",
    "bance_xuid",
    "winflncrtag",
    "loclid",
    "jmtyclid",
    "vsm_cid",
    "vsm_pid",
    "vsm_type",
    "tcsack",
    "_zucks_suid",
    # Analytics and widgets: IO Technologies ("IO Technologies"), Spot.IM/OpenWeb
    # ("spot.im"), Meta ad id (fbadid); Echobox (ClearURLs globalRules).
    "__io_lv",
    "_io_session_id",
    "spot_im_redirect_source",
    "fbadid",
    "echobox",
    # Ceneo (ceneo.pl, price comparison) offer clicks; ClearURLs globalRules.
    "ceneo_spo",
    # Share-link identifiers whose name is generic, so they are stripped only on the
    # hosts that define them: YouTube and Spotify "si" (mpchadwick's registry).
    "youtube.com:si",
    "youtu.be:si",
    "open.spotify.com:si",
)
