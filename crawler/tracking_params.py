"""Query parameters that only carry tracking data, stripped from canonical URLs by default.

Entries are glob patterns in the syntax of :attr:`crawler.urls.UrlRules.strip_params`: ``*``
and ``?`` wildcards, matched against the decoded parameter name, ignoring case. An entry
written ``domain:pattern`` applies only to that host and its subdomains.

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
    # Share-link identifiers whose name is generic, so they are stripped only on the
    # hosts that define them: YouTube and Spotify "si" (mpchadwick's registry).
    "youtube.com:si",
    "youtu.be:si",
    "open.spotify.com:si",
)
