"""A downloaded page's bytes as text, as browsers read them; and bytes that are no page.

Decoding follows the order of the WHATWG Encoding Standard, as browsers and Scrapy
do, with the label rules of :mod:`w3lib.encoding` (``gb2312`` and ``gbk`` are read as their
superset ``gb18030``, ``iso-8859-1`` and ``ascii`` as ``cp1252``):

1. a byte order mark (UTF-8, UTF-16, UTF-32);
2. the *encoding* argument (the charset of the HTTP ``Content-Type`` header);
3. the document's own declaration: ``<meta charset>``, ``<meta http-equiv="Content-Type">``
   or ``<?xml encoding?>``, unless it names another encoding than UTF-8 while the bytes
   are valid UTF-8 with non-ASCII characters (a page converted to UTF-8 that kept its old
   declaration);
4. UTF-8, when the bytes are valid UTF-8;
5. detection by charset-normalizer on the first 64 KiB, among the legacy encodings browsers
   support (``cp1252`` when it is as likely as the best guess, as browsers default to it);
6. ``cp1252``, which decodes any byte.

A declared encoding (2, 3) is used unless it is unknown or fails to decode: more than one
undecodable sequence per 1000 characters sends the decoder to the next step.

:func:`is_binary` and :func:`is_binary_text` tell the files a crawler downloads by mistake
(images, PDFs, archives, a body left compressed) from pages.

Nothing here imports Scrapy.
"""

from __future__ import annotations

import logging
from typing import Final

from charset_normalizer import from_bytes as detect_charsets
from w3lib.encoding import (
    html_body_declared_encoding,
    http_content_type_encoding,
    read_bom,
    resolve_encoding,
    to_unicode,
)

__all__ = [
    "DETECTION_BYTES",
    "SNIFF_BYTES",
    "decode_html",
    "is_binary",
    "is_binary_text",
]

logger = logging.getLogger(__name__)

# Leading bytes of file formats a crawler downloads by mistake; none of them is a page.
BINARY_SIGNATURES: Final = (
    b"\x89PNG\r\n\x1a\n",
    b"%PDF-",
    b"GIF87a",
    b"GIF89a",
    b"\xff\xd8\xff",  # JPEG
    b"PK\x03\x04",  # ZIP, and the formats built on it (docx, xlsx, epub, jar)
    b"PK\x05\x06",  # empty ZIP
    b"\x1f\x8b",  # gzip (a body left compressed)
)
#: The start of a page where a file format's NULs and an ``<html>`` tag are looked for.
SNIFF_BYTES: Final = 4096
#: The start of a page where its declared charset is read and its encoding detected.
DETECTION_BYTES: Final = 64 * 1024
_MAX_DECODING_ERRORS_PER_CHAR: Final = 0.001
# The legacy encodings of the WHATWG Encoding Standard, as Python codecs: what detection may
# choose from (a page cannot be in an encoding no browser reads).
_DETECTABLE_CODECS: Final = (
    "cp1252",
    "cp1250",
    "cp1251",
    "cp1253",
    "cp1254",
    "cp1255",
    "cp1256",
    "cp1257",
    "cp1258",
    "cp866",
    "cp874",
    "iso8859_2",
    "iso8859_4",
    "iso8859_5",
    "iso8859_6",
    "iso8859_7",
    "iso8859_8",
    "iso8859_10",
    "iso8859_13",
    "iso8859_14",
    "iso8859_15",
    "iso8859_16",
    "koi8_r",
    "koi8_u",
    "mac_roman",
    "gb18030",
    "big5",
    "euc_jp",
    "shift_jis",
    "euc_kr",
)
# WHATWG labels that Python's codec registry does not know
_EXTRA_LABELS: Final = {"x-gbk": "gb18030"}
# Codecs read as the superset browsers decode them with: w3lib resolves ``gb2312`` and
# ``gbk`` to Python's ``gbk`` since its 2.6 (to ``gb18030`` before), which lacks the euro
# sign at 0x80 and GB18030's four-byte sequences.
_SUPERSETS: Final = {"gbk": "gb18030"}


def decode_html(
    data: bytes, encoding: str | None = None, sample: bytes | None = None
) -> tuple[str, str]:
    """Decode the bytes of a page; return the codec used and the text.

    - The steps and their order are those of the module documentation: byte order mark,
      *encoding* (a label or a ``Content-Type`` value), the page's declaration, valid
      UTF-8, detection, ``cp1252``.
    - A declared encoding is skipped when unknown or when more than one sequence per 1000
      characters does not decode with it; the codec finally used replaces undecodable
      sequences with U+FFFD.
    - Bytes without a byte order mark whose NULs alternate like UTF-16 are read as
      UTF-16 of that byte order.
    - *sample* (default: the start of *data*) is where the declaration and detection look;
      pass the start of the full page when *data* is a cut of it.
    - The byte order mark is not part of the text. Never raises.

    >>> decode_html('<meta charset="gb2312"><p>中文'.encode("gbk"))
    ('gb18030', '<meta charset="gb2312"><p>中文')
    """
    bom_codec, bom = read_bom(data)
    if bom_codec is not None and bom is not None:
        return bom_codec, to_unicode(data[len(bom) :], bom_codec)
    head = data[:DETECTION_BYTES] if sample is None else sample
    utf16 = _utf16_byte_order(head[:SNIFF_BYTES])
    if utf16 is not None:
        return utf16, to_unicode(data, utf16)

    declared = _ascii_compatible(_resolve_label(encoding), head)
    if declared is not None:
        text = _decode_tolerantly(data, declared)
        if text is not None:
            return declared, text
        logger.debug("bytes do not decode as the declared %(encoding)s", {"encoding": declared})
    declared = _declared_in_page(head)
    if declared is not None:
        if declared != "utf-8" and not data.isascii():
            # a page converted to UTF-8 that kept its old declaration
            try:
                return "utf-8", data.decode("utf-8")
            except UnicodeDecodeError:
                pass
        text = _decode_tolerantly(data, declared)
        if text is not None:
            return declared, text
        logger.debug("bytes do not decode as the declared %(encoding)s", {"encoding": declared})
    try:
        return "utf-8", data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    detected = _detect(head)
    if detected is not None:
        text = _decode_tolerantly(data, detected)
        if text is not None:
            return detected, text
    return "cp1252", to_unicode(data, "cp1252")


def _superset(codec: str | None) -> str | None:
    return _SUPERSETS.get(codec, codec) if codec else codec


def _resolve_label(label: str | None) -> str | None:
    return _superset(_resolved(label))


def _resolved(label: str | None) -> str | None:
    if not label:
        return None
    label = label.strip().strip("\"'").lower()
    if label in _EXTRA_LABELS:
        return _EXTRA_LABELS[label]
    if "=" in label or ";" in label or "/" in label:
        resolved = http_content_type_encoding(label)
        return _EXTRA_LABELS.get(resolved or "", resolved)
    try:
        return resolve_encoding(label)
    except Exception:  # a label that trips the codec registry is no label
        return None


def _declared_in_page(head: bytes) -> str | None:
    # a declaration readable as ASCII is not in UTF-16 or UTF-32 (WHATWG: read UTF-8)
    return _ascii_compatible(_superset(html_body_declared_encoding(head)), head)


def _ascii_compatible(codec: str | None, head: bytes) -> str | None:
    if codec is not None and codec.startswith(("utf-16", "utf-32")) and b"\x00" not in head:
        return "utf-8"
    return codec


def _decode_tolerantly(data: bytes, codec: str) -> str | None:
    try:
        return data.decode(codec)
    except UnicodeDecodeError:
        pass
    except LookupError:
        return None
    text = to_unicode(data, codec)
    errors = text.count("\ufffd")
    if errors > max(1, len(text) * _MAX_DECODING_ERRORS_PER_CHAR):
        return None
    return text


def _detect(head: bytes) -> str | None:
    try:
        matches = detect_charsets(head, cp_isolation=list(_DETECTABLE_CODECS))
    except Exception:
        logger.debug("charset detection failed", exc_info=True)
        return None
    best = matches.best()
    if best is None:
        return None
    for match in matches:
        # between equally likely readings, the one browsers default to (WHATWG)
        tied = (match.chaos, match.coherence) == (best.chaos, best.coherence)
        if tied and "cp1252" in match.could_be_from_charset:
            return "cp1252"
    return _superset(resolve_encoding(best.encoding))


def is_binary(data: bytes) -> bool:
    """Whether *data* is a file no browser shows as a page: an image, a PDF, an archive or a
    gzipped body by its leading bytes, or NULs near its start that are no UTF-16 or UTF-32.

    >>> is_binary(b"%PDF-1.7 ..."), is_binary("<p>page</p>".encode("utf-16"))
    (True, False)
    """
    if data.startswith(BINARY_SIGNATURES) or (data[8:12] == b"WEBP" and data.startswith(b"RIFF")):
        return True
    head = data[:SNIFF_BYTES]
    if b"\x00" not in head:
        return False
    return read_bom(head)[0] is None and _utf16_byte_order(head) is None


def is_binary_text(page: str) -> bool:
    """Binary data that reached us as ``str`` (decoded as Latin-1, say)."""
    head = page[:SNIFF_BYTES]
    return "\x00" in head or head.encode("latin-1", "replace").startswith(BINARY_SIGNATURES)


def _utf16_byte_order(head: bytes) -> str | None:
    """UTF-16 without a byte order mark: markup is ASCII, so every other byte is NUL."""
    pairs = len(head) // 2
    if pairs < 2 or b"\x00" not in head:
        return None
    nul_even = head[0 : 2 * pairs : 2].count(0)
    nul_odd = head[1 : 2 * pairs : 2].count(0)
    if nul_odd >= pairs * 0.4 and nul_even <= pairs * 0.02:
        return "utf-16-le"
    if nul_even >= pairs * 0.4 and nul_odd <= pairs * 0.02:
        return "utf-16-be"
    return None
