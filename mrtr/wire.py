"""Raw bytes to JSON text: only UTF-8, and never a lone surrogate.

What this module owns: deciding whether raw bytes from a client are text this server will parse.
JSON on the wire is UTF-8 (RFC 8259 section 8.1), but Python's `json.loads(bytes)` also guesses
UTF-16 and UTF-32 and decodes with `surrogatepass`, so the raw bytes `ED A0 80` would become a
lone surrogate that no UTF-8 encoder can write back out. `utf8_text` refuses all of that with a
message a client can act on; `has_lone_surrogate` finds the ones that arrive as `\\uD800` escapes
after parsing. Adapters (the `/mcp` endpoint, form guards) share these; nothing here does I/O.
"""

from __future__ import annotations

import codecs
import re

from .errors import ParseError

#: Byte order marks, longest first (the UTF-32 LE mark starts with the UTF-16 LE one).
_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32 LE"),
    (codecs.BOM_UTF32_BE, "UTF-32 BE"),
    (codecs.BOM_UTF16_LE, "UTF-16 LE"),
    (codecs.BOM_UTF16_BE, "UTF-16 BE"),
)
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# Where a surrogate in parsed JSON can come from: the text itself, or a \uD800-\uDFFF escape.
_SURROGATE_SOURCE = re.compile(_LONE_SURROGATE.pattern + r"|\\u[dD][89a-fA-F]")


class NotUtf8(ParseError, ValueError):
    """Bytes that are not UTF-8 text (HTTP 400, JSON-RPC parse error; also a ValueError for form guards)."""


def _wide_encoding(raw: bytes) -> str | None:
    """The UTF-16/32 flavour `raw` looks like, by its byte order mark or its NUL pattern."""
    for bom, name in _BOMS:
        if raw.startswith(bom):
            return f"{name} (byte order mark)"
    head = raw[:4]
    if len(head) == 4 and head[:3] == b"\0\0\0":
        return "UTF-32 BE"
    if len(head) == 4 and head[1:] == b"\0\0\0":
        return "UTF-32 LE"
    if len(head) >= 2 and head[0] == 0:
        return "UTF-16 BE"
    if len(head) >= 2 and head[1] == 0:
        return "UTF-16 LE"
    return None


def utf8_text(raw: bytes) -> str:
    """`raw` decoded as strict UTF-8 (a UTF-8 byte order mark is ignored, as RFC 8259 allows).

    Raises:
        NotUtf8: UTF-16 or UTF-32 (with or without a byte order mark), bytes that are not UTF-8,
            or an encoded surrogate such as `ED A0 80`; the message names the byte offset.
    """
    wide = _wide_encoding(raw)
    if wide:
        raise NotUtf8(f"The body must be UTF-8 JSON; it looks like {wide}")
    if raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8):]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = raw[exc.start:exc.start + 3]
        what = ("an encoded UTF-16 surrogate, which is not valid Unicode text"
                if len(bad) >= 2 and bad[0] == 0xED and bad[1] >= 0xA0 else "not valid UTF-8")
        raise NotUtf8(f"The body must be UTF-8 JSON; byte {exc.start} starts {what}") from None


def has_lone_surrogate(text: str) -> bool:
    """Whether `text` (for example a parsed JSON string) holds a lone UTF-16 surrogate."""
    return _LONE_SURROGATE.search(text) is not None


def may_yield_surrogate(json_text: str) -> bool:
    """Whether parsing `json_text` could give a string holding a lone surrogate. When it cannot, the
    parsed value needs no walk: one scan of the text is far cheaper than visiting every string."""
    return _SURROGATE_SOURCE.search(json_text) is not None
