"""``scrapy canonicalize``, run as a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys

from crawler.url.canonical import UrlCanonicalizer, canonicalize_url
from tests.conftest import REPO_ROOT, _child_env, scrapy_command

MESSY = "HTTP://Example.COM:80/a/./b/?utm_source=x&b=2&a=1#top"


def test_prints_canonical_form_and_the_rules_that_changed_it():
    result = scrapy_command("canonicalize", MESSY, "http://example.com/a")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        MESSY,
        "  http://example.com/a/b?a=1&b=2  (lowercase-scheme, lowercase-host, "
        "drop-default-port, drop-fragment, resolve-dot-segments, strip-tracking-params, "
        "sort-query, strip-trailing-slash)",
        "http://example.com/a",
        "  http://example.com/a  (already canonical)",
    ]


def test_reads_urls_from_stdin_and_json_matches_the_library():
    urls = [MESSY, "http://example.com/x/;jsessionid=A1/", "https://b.example:443/?fbclid=1"]
    stdin = "\n".join([urls[0], "", urls[1], "  ", urls[2]]) + "\n"
    for arguments in (["--json"], ["--json", "-"]):
        result = scrapy_command("canonicalize", *arguments, input=stdin)
        assert result.returncode == 0, result.stderr
        lines = [json.loads(line) for line in result.stdout.splitlines()]
        assert lines == [
            {
                "url": url,
                "canonical": canonicalize_url(url),
                "rules": UrlCanonicalizer().explain(url),
                "changed": True,
                "handled": True,
            }
            for url in urls
        ]


def test_malformed_url_comes_back_unchanged_and_says_so():
    bad = ["http://exa mple.com/", "http://[::1/", "mailto:someone@example.com", "not a url"]
    result = scrapy_command("canonicalize", *bad, "http://Example.com/")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stdout.splitlines()
    for index, url in enumerate(bad):
        assert lines[2 * index : 2 * index + 2] == [
            url,
            f"  {url}  (not an absolute http(s) URL with a valid host: left unchanged)",
        ]
    assert lines[-1] == "  http://example.com/  (lowercase-host)"
    as_json = json.loads(scrapy_command("canonicalize", "--json", bad[0]).stdout)
    assert as_json["handled"] is False
    assert as_json["canonical"] == bad[0]


def test_project_settings_apply():
    url = "http://example.com/a?ref=mail&id=3"
    kept = scrapy_command("canonicalize", url)
    stripped = scrapy_command("canonicalize", "-s", "DEDUP_URL_STRIP_PARAMS=ref,utm_*", url)
    assert kept.stdout.splitlines()[1] == "  http://example.com/a?id=3&ref=mail  (sort-query)"
    assert stripped.stdout.splitlines()[1] == (
        "  http://example.com/a?id=3  (strip-tracking-params)"
    )
    bad = scrapy_command("canonicalize", "-s", "DEDUP_URL_STRIP_PARAMS=:x", url)
    assert bad.returncode == 2
    assert "Traceback" not in bad.stderr
    assert "strip_params" in bad.stderr


def test_works_outside_a_project_and_in_a_new_one(tmp_path):
    outside = scrapy_command("canonicalize", "--json", MESSY, cwd=tmp_path)
    assert outside.returncode == 0, outside.stderr
    assert json.loads(outside.stdout)["canonical"] == canonicalize_url(MESSY)

    created = scrapy_command("startproject", "shop", cwd=tmp_path)
    assert created.returncode == 0, created.stderr
    project = tmp_path / "shop"
    listing = scrapy_command("-h", cwd=project)
    assert "active project: shop" in listing.stdout
    for command in ("canonicalize", "dedup-inspect", "dedup-forget"):
        assert f"\n  {command} " in listing.stdout, listing.stdout
    settings = project / "shop" / "settings.py"
    settings.write_text(settings.read_text() + '\nDEDUP_URL_KEEP_PARAMS = ["utm_source"]\n')
    result = scrapy_command(
        "canonicalize", "http://example.com/?utm_source=x&utm_medium=y", cwd=project
    )
    assert result.stdout.splitlines()[1] == (
        "  http://example.com/?utm_source=x  (strip-tracking-params)"
    )


def test_any_bytes_in_give_valid_utf8_out():
    """A Latin-1 line (not UTF-8) is percent-encoded as a browser sends it, and the output
    is UTF-8 whatever the locale says."""
    stdin = "http://a.test/caf\xe9?utm_source=x\nhttp://b.test/na\u00efve\n".encode("latin-1")
    result = subprocess.run(
        [sys.executable, "-m", "scrapy", "canonicalize", "--json"],
        cwd=REPO_ROOT,
        env={**_child_env(), "PYTHONIOENCODING": "ascii", "LC_ALL": "C"},
        input=stdin + "http://c.test/日本\n".encode(),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    lines = [json.loads(line) for line in result.stdout.decode("utf-8").splitlines()]
    assert [(line["url"], line["canonical"]) for line in lines] == [
        ("http://a.test/caf%E9?utm_source=x", "http://a.test/caf%E9"),
        ("http://b.test/na%EFve", "http://b.test/na%EFve"),
        ("http://c.test/日本", canonicalize_url("http://c.test/日本")),
    ]
