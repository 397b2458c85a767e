# Chinese test texts are written with full-width punctuation, as Chinese is.
# ruff: noqa: RUF001
"""Tests for :mod:`crawler.content.extract`: main text, decoding, and the outcome of bad input."""

from __future__ import annotations

import gzip
import json
import logging
import os
import re
import statistics
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import trafilatura
from hypothesis import given, settings
from hypothesis import strategies as st

import crawler.content.extract
from crawler.content.extract import (
    DEFAULT_MAX_BYTES,
    TRAFILATURA_OPTIONS,
    Extraction,
    decode_html,
    extract,
    landmark_text,
    main_text,
)
from tests.conftest import REPO_ROOT

CORPUS_DIR = Path(os.environ.get("DEDUP_CORPUS_DIR") or REPO_ROOT.parent / "shared" / "corpus")
STATUSES = {"ok", "truncated", "no_text", "binary", "failed"}

PARAGRAPHS = [
    "The old stone bridge over the river Wend reopened on Saturday after two years of "
    "repairs, and the first people to cross it were the children of the village school.",
    "Engineers found that water had worked its way into the mortar of the central arch. "
    "Rather than replace the arch, the council chose to take it apart and rebuild it with "
    "the original stones.",
    "Each stone was numbered, photographed and stored in a barn on the edge of the village "
    "while the foundations were strengthened with new piles driven deep into the riverbed.",
    "Masons from three counties worked on the project. Several of them said they had never "
    "handled stones cut so precisely, and that the medieval builders must have worked from "
    "careful drawings.",
    "Local shops suffered while the bridge was closed, since visitors had to drive a long "
    "way round to reach the market square. Several owners said trade had fallen by a third.",
    "At the reopening the mayor thanked the masons, the engineers and the families who had "
    "put up with the noise of the pile drivers through two summers.",
]
NAV_ITEMS = ["Home page", "World news", "Sport results", "Weather forecast", "Subscribe today"]
FOOTER = "Copyright Wend Valley Gazette. All rights reserved. Privacy policy and contact."
COMMENTS = [
    "Great news, we walked across it this morning with the dog!",
    "About time too, the detour was a nightmare for deliveries.",
]
CHINESE_PARAGRAPHS = [
    "本市第一座跨江步行桥于周六正式开放，清晨便有数百名市民沿着新桥散步，不少老人带着孙子孙女前来"
    "拍照留念。",
    "这座步行桥全长约四百米，连接江北的老城区和江南的新建公园。设计团队表示，桥面采用了轻质钢结构，"
    "既能减轻对河床的影响，也便于日后维护。",
    "工程于两年前动工，期间因汛期水位上涨曾两度停工。施工单位在枯水季节加快进度，最终比原计划推迟"
    "了三个月完工。",
    # 镕 and 堃 are in GBK but not in GB2312: a page labelled gb2312 uses them all the time
    "总工程师朱镕介绍，主桥的钢箱梁在工厂分段预制，再由浮吊运到江面拼装。市民李堃说，以后每天傍晚"
    "都可以带孩子来江边散步。",
    "管理部门希望市民爱护桥上设施，文明游览，不要在桥上投喂鸟类或者向江中丢弃杂物，共同维护江边的"
    "良好环境。",
]


def article_page(
    paragraphs: list[str] = PARAGRAPHS,
    *,
    head: str = '<meta charset="utf-8">',
    title: str = "Old bridge reopens after two years",
) -> str:
    nav = "".join(f'<li><a href="/{index}">{item}</a></li>' for index, item in enumerate(NAV_ITEMS))
    body = "".join(f"<p>{paragraph}</p>" for paragraph in paragraphs)
    comments = "".join(
        f'<div class="comment"><p class="comment-author">reader{index}</p><p>{comment}</p></div>'
        for index, comment in enumerate(COMMENTS)
    )
    return (
        f"<!DOCTYPE html>\n<html><head>{head}<title>{title}</title></head><body>"
        f"<header><nav><ul>{nav}</ul></nav></header>"
        f"<main><article><h1>{title}</h1>{body}</article>"
        f'<section id="comments" class="comments"><h2>Comments</h2>{comments}</section></main>'
        f"<footer><p>{FOOTER}</p></footer></body></html>"
    )


def chinese_page(head: str) -> str:
    return article_page(CHINESE_PARAGRAPHS, head=head, title="跨江步行桥正式开放")


def assert_is_the_article(text: str, paragraphs: list[str] = PARAGRAPHS) -> None:
    for paragraph in paragraphs:
        assert paragraph in text
    for excluded in [*NAV_ITEMS, FOOTER, *COMMENTS]:
        assert excluded not in text


# main text


def test_main_text_keeps_the_article_and_drops_navigation_footer_and_comments() -> None:
    text = main_text(article_page(), url="https://news.example/bridge")
    assert_is_the_article(text)
    assert text.startswith("Old bridge reopens after two years\n")
    assert text == "\n".join(["Old bridge reopens after two years", *PARAGRAPHS])


def test_extract_reports_ok_and_the_encoding() -> None:
    page = article_page().encode("utf-8")
    result = extract(page)
    assert result == Extraction(
        "\n".join(["Old bridge reopens after two years", *PARAGRAPHS]),
        "ok",
        "utf-8",
        result.page_chars,
    )
    # the whole page: the article, and its navigation, footer and comments
    assert len(result.text) + 200 < result.page_chars < len(page)
    assert main_text(page) == result.text
    assert extract(article_page()).encoding is None  # str input is not decoded


def test_the_options_exclude_comments() -> None:
    assert TRAFILATURA_OPTIONS["include_comments"] is False
    with_comments = trafilatura.extract(
        article_page(), **{**TRAFILATURA_OPTIONS, "include_comments": True}
    )
    assert COMMENTS[0] in with_comments  # so the page does have comments to drop


def test_a_page_without_main_text() -> None:
    page = (
        "<html><head><title>Sign in</title></head><body>"
        "<form><input name='user'><input type='password'></form>"
        "<script>var tracker = 1;</script><img src='logo.png'></body></html>"
    )
    assert extract(page) == Extraction("", "no_text")
    assert main_text(page.encode()) == ""


def test_a_fragment_without_html_element_is_extracted() -> None:
    fragment = "".join(f"<p>{paragraph}</p>" for paragraph in PARAGRAPHS)
    assert extract(fragment).text == "\n".join(PARAGRAPHS)


def test_broken_html_is_extracted() -> None:
    broken = (
        "<html><head><title>x</title><body><div><p>"
        + PARAGRAPHS[0]
        + "<p>"
        + PARAGRAPHS[1]
        + "</span></td></div></div><p><b><i>"
        + PARAGRAPHS[2]
        + "<<<>>> <!-- unterminated comment"
    )
    result = extract(broken.encode("utf-8"))
    assert result.status == "ok"
    assert PARAGRAPHS[0] in result.text
    assert PARAGRAPHS[1] in result.text


# decoding


@pytest.mark.parametrize(
    "head",
    [
        '<meta charset="gb2312">',
        "<meta charset=GBK>",
        '<meta http-equiv="Content-Type" content="text/html; charset=gb2312">',
        "<meta content='text/html;charset=gbk' http-equiv='content-type'>",
    ],
)
def test_gbk_bytes_with_a_meta_charset(head: str) -> None:
    page = chinese_page(head).encode("gbk")
    result = extract(page)
    assert result.status == "ok"
    assert result.encoding == "gb18030"  # gb2312 and gbk are read as their superset
    assert_is_the_article(result.text, CHINESE_PARAGRAPHS)
    assert "朱镕" in result.text
    assert "\ufffd" not in result.text


def test_gb18030_characters_under_a_gb2312_label() -> None:
    paragraphs = [*CHINESE_PARAGRAPHS, "姓氏𠮷字不在GBK里，只有GB18030才能表示。" * 2]
    page = article_page(paragraphs, head='<meta charset="gb2312">').encode("gb18030")
    assert_is_the_article(main_text(page), paragraphs)


def test_gbk_bytes_without_any_declaration_are_detected() -> None:
    page = chinese_page("").encode("gbk")
    result = extract(page)
    assert result.encoding == "gb18030"
    assert_is_the_article(result.text, CHINESE_PARAGRAPHS)


def test_the_http_encoding_wins_over_a_wrong_meta() -> None:
    page = chinese_page('<meta charset="iso-8859-1">').encode("gbk")
    for header in ("gbk", "GB2312", "text/html; charset=GBK", "x-gbk"):
        result = extract(page, encoding=header)
        assert result.encoding == "gb18030", header
        assert_is_the_article(result.text, CHINESE_PARAGRAPHS)


def test_an_http_encoding_that_fails_to_decode_gives_way_to_the_meta() -> None:
    page = chinese_page('<meta charset="gbk">').encode("gbk")
    result = extract(page, encoding="utf-8")
    assert result.encoding == "gb18030"
    assert_is_the_article(result.text, CHINESE_PARAGRAPHS)


@pytest.mark.parametrize("header", ["no-such-charset", "", "utf-7", "text/html"])
def test_an_unknown_http_encoding_is_ignored(header: str) -> None:
    page = chinese_page('<meta charset="gbk">').encode("gbk")
    assert extract(page, encoding=header).encoding == "gb18030"


def test_utf8_bytes_under_a_stale_legacy_declaration_are_read_as_utf8() -> None:
    paragraphs = [*PARAGRAPHS, "The café served naïve crème brûlée — “twice” a week."]
    page = article_page(paragraphs, head='<meta charset="iso-8859-1">').encode("utf-8")
    result = extract(page)
    assert result.encoding == "utf-8"
    assert_is_the_article(result.text, paragraphs)


def test_cp1252_bytes_without_declaration_are_detected() -> None:
    paragraphs = [
        *PARAGRAPHS,
        "À la fête du village, le maire a remercié les maçons, les ingénieurs et les familles "
        "qui ont supporté le bruit pendant deux étés. « C'était nécessaire », a-t-il déclaré.",
    ]
    page = article_page(paragraphs, head="").encode("cp1252")
    result = extract(page)
    assert result.encoding == "cp1252"
    assert_is_the_article(result.text, paragraphs)


@pytest.mark.parametrize(
    ("bom", "codec", "expected"),
    [
        (b"\xef\xbb\xbf", "utf-8", "utf-8"),
        (b"\xff\xfe", "utf-16-le", "utf-16-le"),
        (b"\xfe\xff", "utf-16-be", "utf-16-be"),
    ],
)
def test_byte_order_marks(bom: bytes, codec: str, expected: str) -> None:
    # the BOM wins over a declaration that contradicts it
    page = bom + article_page(head='<meta charset="windows-1252">').encode(codec)
    result = extract(page)
    assert result.status == "ok"
    assert result.encoding == expected
    assert_is_the_article(result.text)
    assert "\ufeff" not in result.text


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
def test_utf16_without_byte_order_mark(codec: str) -> None:
    page = chinese_page("").encode(codec)
    result = extract(page)
    assert result.encoding == codec
    assert_is_the_article(result.text, CHINESE_PARAGRAPHS)


def test_decode_html_examples() -> None:
    assert decode_html(b"<p>caf\xc3\xa9</p>") == ("utf-8", "<p>café</p>")
    assert decode_html(b"<p>caf\xe9</p>", "latin-1") == ("cp1252", "<p>café</p>")
    assert decode_html(b"\xef\xbb\xbf<p>x</p>") == ("utf-8", "<p>x</p>")
    assert decode_html(b'<meta charset="gb2312"><p>\xd6\xd0\xce\xc4</p>') == (
        "gb18030",
        '<meta charset="gb2312"><p>中文</p>',
    )
    # a stray invalid byte in a long declared page does not make the declaration fail
    noisy = ("<p>" + "正文内容" * 400 + "</p>").encode("gbk") + b"\xff" + "结束".encode("gbk")
    codec, text = decode_html(b'<meta charset="gbk">' + noisy)
    assert codec == "gb18030"
    assert text.count("\ufffd") == 1
    assert text.endswith("结束")


# bad input


@pytest.mark.parametrize(
    "data",
    [
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(64),
        b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n",
        b"GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff",
        b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01",
        b"PK\x03\x04\x14\x00\x00\x00\x08\x00<html>inside a zip</html>",
        b"\x1f\x8b\x08\x00" + gzip.compress(b"<html>compressed</html>")[4:],
        b"RIFF\x24\x00\x00\x00WEBPVP8 ",
        bytes(range(256)) * 8,  # NUL bytes that are not UTF-16
    ],
    ids=["png", "pdf", "gif", "jpeg", "zip", "gzip", "webp", "nul-bytes"],
)
def test_binary_data(data: bytes) -> None:
    assert extract(data) == Extraction("", "binary", None)
    assert main_text(data) == ""


def test_binary_data_received_as_str() -> None:
    assert extract("%PDF-1.4\n...").status == "binary"
    assert extract("<html>\x00\x00\x00</html>").status == "binary"


@pytest.mark.parametrize("data", [b"", "", None, b" \n\t ", "   ", bytearray(), 12345, ["<p>"]])
def test_empty_and_unsupported_input(data: object) -> None:
    assert extract(data) == Extraction("", "no_text", None)  # type: ignore[arg-type]
    assert main_text(data) == ""  # type: ignore[arg-type]


def test_bytearray_and_memoryview_are_bytes() -> None:
    page = article_page().encode("utf-8")
    assert extract(bytearray(page)) == extract(page) == extract(memoryview(page))


def numbered_page(paragraphs: int) -> str:
    body = "".join(
        f"<p>Paragraph number {index} of the long report says something new about item "
        f"{index}, and that makes it a real paragraph of its own.</p>"
        for index in range(paragraphs)
    )
    return f'<html><head><meta charset="utf-8"></head><body><article>{body}</article></body></html>'


@pytest.mark.parametrize("as_bytes", [True, False])
def test_a_page_above_max_bytes_is_cut_at_a_tag_and_reported_as_truncated(
    as_bytes: bool,
) -> None:
    page = numbered_page(400)
    data: str | bytes = page.encode("utf-8") if as_bytes else page
    result = extract(data, max_bytes=20_000)
    assert result.status == "truncated"
    assert "Paragraph number 0 of the long report" in result.text
    assert "Paragraph number 100 of" in result.text
    assert "Paragraph number 399 of" not in result.text
    last = int(re.findall(r"Paragraph number (\d+)", result.text)[-1])
    assert result.text.endswith(f"item {last}, and that makes it a real paragraph of its own.")
    full = extract(data, max_bytes=None)
    assert full.status == "ok"
    assert "Paragraph number 399 of" in full.text


def test_a_page_above_the_default_limit() -> None:
    page = numbered_page(60_000).encode("utf-8")
    assert len(page) > DEFAULT_MAX_BYTES == 5 * 1024 * 1024
    result = extract(page)
    assert result.status == "truncated"
    assert "Paragraph number 0 of" in result.text
    assert "Paragraph number 59999 of" not in result.text


def test_a_cut_through_a_multibyte_character_is_clean() -> None:
    page = chinese_page('<meta charset="utf-8">').encode("utf-8")
    for limit in range(len(page) - 400, len(page) - 300):
        result = extract(page, max_bytes=limit)
        assert result.status == "truncated"
        assert "\ufffd" not in result.text
        assert CHINESE_PARAGRAPHS[0] in result.text


@pytest.mark.parametrize("max_bytes", [0, -1])
def test_max_bytes_below_one_is_refused(max_bytes: int) -> None:
    with pytest.raises(ValueError, match="max_bytes must be 1 or more"):
        extract(b"<p>x</p>", max_bytes=max_bytes)


def test_an_error_inside_trafilatura_falls_back_to_resiliparse(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def explode(*args: object, **kwargs: object) -> str:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(trafilatura, "extract", explode)
    with caplog.at_level(logging.DEBUG, logger="crawler.content.extract"):
        result = extract(article_page().encode(), url="https://news.example/bridge")
    assert (result.status, result.fallback) == ("ok", True)
    assert all(paragraph in result.text for paragraph in PARAGRAPHS)
    assert caplog.record_tuples == [
        (
            "crawler.content.extract",
            logging.DEBUG,
            "trafilatura failed on https://news.example/bridge",
        )
    ]


def test_an_error_inside_both_extractors_is_reported_as_failed(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def explode(*args: object, **kwargs: object) -> str:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(trafilatura, "extract", explode)
    monkeypatch.setitem(crawler.content.extract._EXTRACT, "resiliparse", explode)
    with caplog.at_level(logging.DEBUG, logger="crawler.content.extract"):
        result = extract(article_page().encode(), url="https://news.example/bridge")
    assert result == Extraction("", "failed", "utf-8", fallback=True)
    assert [message for *_, message in caplog.record_tuples] == [
        "trafilatura failed on https://news.example/bridge",
        "resiliparse failed on https://news.example/bridge",
    ]


def test_without_the_other_extractor_an_error_is_failed(monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(*args: object, **kwargs: object) -> str:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(trafilatura, "extract", explode)
    monkeypatch.setattr(crawler.content.extract, "_installed", lambda name: name == "trafilatura")
    assert extract(article_page().encode()) == Extraction("", "failed", "utf-8")


def test_resiliparse_keeps_the_article_and_drops_navigation_footer_and_comments() -> None:
    result = extract(article_page().encode(), extractor="resiliparse")
    assert (result.status, result.encoding, result.fallback) == ("ok", "utf-8", False)
    assert_is_the_article(result.text)
    # the same measure of the whole page as with trafilatura, within a few characters
    assert abs(result.page_chars - extract(article_page().encode()).page_chars) < 40


def test_auto_gives_resiliparse_text_when_it_holds_the_article() -> None:
    page = article_page().encode()
    result = extract(page, extractor="auto")
    assert result == extract(page, extractor="resiliparse")
    assert_is_the_article(result.text)


def test_auto_asks_trafilatura_when_resiliparse_keeps_little_of_the_page() -> None:
    # a theme that names its article column "sidebar": resiliparse's heuristics drop it
    body = "".join(f"<p>{paragraph}</p>" for paragraph in PARAGRAPHS)
    page = (
        f'<html><body><nav><a href="/">{NAV_ITEMS[0]}</a></nav>'
        f'<div class="sidebar"><h1>Old bridge reopens</h1>{body}</div>'
        f"<footer><p>{FOOTER}</p></footer></body></html>"
    ).encode()
    fast = extract(page, extractor="resiliparse")
    assert len(fast.text) < crawler.content.extract.AUTO_MIN_SHARE * fast.page_chars
    result = extract(page, extractor="auto")
    expected = trafilatura.extract(page, **crawler.content.extract.AUTO_TRAFILATURA_OPTIONS)
    assert result.text == expected
    assert_is_the_article(result.text)
    # the page's size is resiliparse's count either way, so that sizes compare
    assert result.page_chars == fast.page_chars


def sidebar_article_page(*, landmark: str) -> str:
    """An article in a column named like a sidebar (resiliparse's heuristics drop it), under
    a menu and over a footer; *landmark* wraps the column (``"main"``), or a byline beside
    it (``"byline"``), or nothing (``""``)."""
    body = "".join(f"<p>{paragraph}</p>" for paragraph in PARAGRAPHS)
    column = f'<div class="sidebar"><h1>Old bridge reopens</h1>{body}</div>'
    if landmark == "main":
        column = f"<main>{column}</main>"
    elif landmark == "byline":
        column = f"<main><p>By the desk</p></main>{column}"
    return (
        f'<html><body><nav><a href="/">{NAV_ITEMS[0]}</a></nav>{column}'
        f"<footer><p>{FOOTER}</p></footer></body></html>"
    )


def test_auto_reads_the_main_landmark_of_a_page_resiliparse_kept_little_of() -> None:
    """Where resiliparse missed the article, the element its author marked as the main
    content holds it: its whole text, without asking trafilatura (not even imported)."""
    page = sidebar_article_page(landmark="main")
    fast = extract(page.encode(), extractor="resiliparse")
    assert len(fast.text) < crawler.content.extract.AUTO_MIN_SHARE * fast.page_chars
    script = (
        "import sys\n"
        "from crawler.content.extract import extract, load_extractor\n"
        "load_extractor('auto')\n"
        "print(extract(sys.stdin.read().encode(), extractor='auto').text)\n"
        "print('trafilatura' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        input=page,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    *text_lines, imported = result.stdout.strip().splitlines()
    text = "\n".join(text_lines)
    assert imported == "False"
    assert text.startswith("Old bridge reopens")
    assert_is_the_article(text)
    assert text == extract(page.encode(), extractor="auto").text
    assert extract(page.encode(), extractor="auto").page_chars == fast.page_chars


def test_auto_asks_trafilatura_when_the_main_landmark_holds_little_too() -> None:
    page = sidebar_article_page(landmark="byline").encode()
    result = extract(page, extractor="auto")
    expected = trafilatura.extract(page, **crawler.content.extract.AUTO_TRAFILATURA_OPTIONS)
    assert result.text == expected
    assert_is_the_article(result.text)


def test_the_main_landmark_is_the_largest_element_marked_as_main_content() -> None:
    from resiliparse.parse.html import HTMLTree

    page = (
        "<html><body><article><p>A teaser of another story.</p></article>"
        '<div role="main"><h1>Old bridge reopens</h1><p>The river rose.</p>'
        "<p>It fell again in May.</p></div></body></html>"
    )
    text = landmark_text(HTMLTree.parse(page))
    lines = [line for line in text.splitlines() if line]
    assert lines == ["Old bridge reopens", "The river rose.", "It fell again in May."]
    assert (
        landmark_text(HTMLTree.parse("<html><body><div><p>No mark.</p></div></body></html>")) == ""
    )
    assert landmark_text(HTMLTree.parse("")) == ""


def test_auto_asks_trafilatura_without_the_stop_words_of_every_language() -> None:
    """trafilatura's justext fallback builds a set of every language's stop words (14 MiB
    kept in the process): ``"auto"`` asks trafilatura without its fallbacks, so a process
    that only ever extracts with ``"auto"`` never holds it. A process of its own: another
    test may have built the set in this one. The page: resiliparse finds nothing (so
    ``"auto"`` asks trafilatura), and trafilatura's own extraction is short (so its full
    run asks justext)."""
    page = '<html><body><div class="sidebar"><p>Opening hours: 9 to 5.</p></div></body></html>'
    script = (
        "import sys, trafilatura.external as external\n"
        "from crawler.content.extract import extract\n"
        "text = extract(sys.stdin.read().encode(), extractor=sys.argv[1]).text\n"
        "print(bool(text), external.JT_STOPLIST is not None)\n"
    )
    built = {}
    for extractor in ("auto", "trafilatura"):
        result = subprocess.run(
            [sys.executable, "-c", script, extractor],
            input=page,
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        built[extractor] = result.stdout.split()
    assert built == {"auto": ["True", "False"], "trafilatura": ["True", "True"]}


def test_auto_leaves_out_the_lines_that_write_out_a_url() -> None:
    printed = "<p>Printed on 12 March 2024 from https://news.example/bridge</p>"
    page = article_page([*PARAGRAPHS, printed[3:-4]]).encode()
    assert "https://news.example/bridge" in extract(page, extractor="resiliparse").text
    text = extract(page, extractor="auto").text
    assert "Printed on" not in text
    assert_is_the_article(text)


def test_auto_keeps_resiliparse_text_of_a_small_page_unless_it_is_empty() -> None:
    nav = "".join(f'<li><a href="/{n}">Section number {n} of the site</a></li>' for n in range(14))
    hours = "<p>Opening hours: 9 to 5, Monday to Friday.</p>"
    page = f"<html><body><nav><ul>{nav}</ul></nav><main>{hours}</main></body></html>".encode()
    fast = extract(page, extractor="resiliparse")
    assert fast.page_chars < crawler.content.extract.AUTO_MIN_PAGE_CHARS
    assert len(fast.text) < crawler.content.extract.AUTO_MIN_SHARE * fast.page_chars
    assert extract(page, extractor="auto") == fast
    # nothing at all: trafilatura is asked, however small the page
    hidden = b'<html><body><div class="sidebar"><p>Opening hours: 9 to 5.</p></div></body></html>'
    assert extract(hidden, extractor="resiliparse").text == ""
    assert extract(hidden, extractor="auto").text == "Opening hours: 9 to 5."


@pytest.mark.parametrize("extractor", ["boilerpipe", "", "Trafilatura"])
def test_an_unknown_extractor_is_refused(extractor: str) -> None:
    with pytest.raises(ValueError, match="choose one of 'trafilatura', 'resiliparse'"):
        extract(b"<p>x</p>", extractor=extractor)  # type: ignore[arg-type]


def test_deeply_nested_html_does_not_raise() -> None:
    page = "<html><body>" + "<div>" * 5000 + PARAGRAPHS[0] + "</div>" * 5000 + "</body></html>"
    result = extract(page)
    assert result.status in {"ok", "no_text", "failed"}
    assert bool(result.text) == (result.status == "ok")


@given(st.binary(max_size=3000))
@settings(max_examples=150, deadline=None)
def test_any_bytes_give_a_documented_outcome(data: bytes) -> None:
    result = extract(data)
    assert result.status in STATUSES
    assert bool(result.text) == (result.status in {"ok", "truncated"})
    assert result.text == result.text.strip()


@given(st.text(max_size=3000), st.sampled_from([None, "utf-8", "gbk", "bogus", "utf-16"]))
@settings(max_examples=150, deadline=None)
def test_any_text_gives_a_documented_outcome(text: str, encoding: str | None) -> None:
    result = extract("<html><body><p>" + text + "</p></body></html>", encoding=encoding)
    assert result.status in STATUSES - {"truncated"}
    assert bool(result.text) == (result.status == "ok")
    as_bytes = extract(text.encode("utf-8", "surrogatepass"), encoding=encoding)
    assert as_bytes.status in STATUSES


# the corpus


def _corpus_pages() -> Path:
    pages = CORPUS_DIR / "pages"
    if not (pages / "wcxb-dev" / "html").is_dir() or not (pages / "chinese-cx").is_dir():
        pytest.skip(f"corpus not found in {CORPUS_DIR} (set DEDUP_CORPUS_DIR)")
    return pages


def _token_f1(predicted: str, gold: str) -> float:
    predicted_tokens = Counter(re.findall(r"\w+", predicted.lower()))
    gold_tokens = Counter(re.findall(r"\w+", gold.lower()))
    common = sum((predicted_tokens & gold_tokens).values())
    if not common:
        return 0.0
    precision = common / sum(predicted_tokens.values())
    recall = common / sum(gold_tokens.values())
    return 2 * precision * recall / (precision + recall)


def test_corpus_english_pages_match_the_human_checked_main_text() -> None:
    pages = _corpus_pages() / "wcxb-dev"
    scores = []
    for path in sorted((pages / "html").glob("*.html.gz")):
        truth = json.loads(
            (pages / "ground-truth" / path.name.replace(".html.gz", ".json")).read_text()
        )
        result = extract(gzip.decompress(path.read_bytes()), truth["url"])
        assert result.status == "ok", path.name
        scores.append(_token_f1(result.text, truth["ground_truth"]["main_content"]))
    assert len(scores) == 400
    assert statistics.fmean(scores) >= 0.89  # 0.910 when measured


def test_corpus_chinese_pages_decode_and_extract() -> None:
    pages = _corpus_pages() / "chinese-cx"
    recalls = []
    for path in sorted((pages / "RawHtml").glob("*.html")):
        result = extract(path.read_bytes())
        assert result.status == "ok", path.name
        assert result.encoding == "gb18030", path.name
        assert "\ufffd" not in result.text, path.name
        reference = (pages / "Text" / f"{path.stem}.txt").read_bytes().decode("gb18030")
        expected = Counter(char for char in reference if "\u4e00" <= char <= "\u9fff")
        found = Counter(char for char in result.text if "\u4e00" <= char <= "\u9fff")
        recalls.append(sum((expected & found).values()) / sum(expected.values()))
    assert len(recalls) == 74
    assert statistics.fmean(recalls) >= 0.95


@pytest.mark.parametrize(
    ("body", "chars"),
    [
        ("<p>abc def</p><script>var x = [1, 2, 3];</script><p>ghi</p>", (10, 11)),
        ("<style>p { color: red }</style><p>  many   spaces\n\n here </p>", (16, 17)),
        ("<nav>menu</nav><article><p>" + "word " * 100 + "</p></article>", (503, 504)),
    ],
)
def test_page_chars_is_the_text_of_the_whole_body(body: str, chars: tuple[int, int]) -> None:
    result = extract(f"<html><head><title>t</title></head><body>{body}</body></html>")
    assert chars[0] <= result.page_chars <= chars[1]


def test_page_chars_is_zero_when_nothing_was_parsed() -> None:
    assert extract(b"").page_chars == 0
    assert extract(b"%PDF-1.7 ...").page_chars == 0


def test_a_page_of_one_giant_paragraph_keeps_its_head() -> None:
    page = "<html><body><p>" + "plain words of one endless paragraph " * 20_000
    result = extract(page.encode(), max_bytes=100_000)
    assert result.status == "truncated"
    assert 50_000 < len(result.text) <= 100_000
    assert result.text.startswith("plain words of one endless paragraph")
