"""Raw bytes to text, and text to safe JSON: the one home of the UTF-8 and lone-surrogate checks.

What this module owns: deciding whether raw bytes from a client are text this server will read,
and whether text, raw JSON or a parsed value holds a lone UTF-16 surrogate, each problem named by
one message. JSON on the wire is UTF-8 (RFC 8259 section 8.1), but Python's `json.loads(bytes)`
also guesses UTF-16 and UTF-32 and decodes with `surrogatepass`, so the raw bytes `ED A0 80`
would become a lone surrogate that no UTF-8 encoder can write back out. `utf8_problem` and
`utf8_text` refuse all of that; `holds_lone_surrogate` finds surrogates that arrive as `\\uD800`
escapes after parsing, and `may_hold_surrogates` says, with one cheap scan of the raw text, when
that walk can be skipped. The core, the ticket codec, the lab and the app's form guards all use
these; nothing here does I/O.
"""

from __future__ import annotations

import codecs
import re

from .errors import ParseError
from .messages import JSON

#: Byte order marks, longest first (the UTF-32 LE mark starts with the UTF-16 LE one).
_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32 LE"),
    (codecs.BOM_UTF32_BE, "UTF-32 BE"),
    (codecs.BOM_UTF16_LE, "UTF-16 LE"),
    (codecs.BOM_UTF16_BE, "UTF-16 BE"),
)
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
#: How a lone surrogate can arrive in raw JSON: as a \\uD800-\\uDFFF escape (or, in text that was
#: never UTF-8, as the character itself). Raw text without either cannot produce one when parsed.
_SURROGATE_IN_TEXT = re.compile(_LONE_SURROGATE.pattern + r"|\\u[dD][89a-fA-F]")
_SURROGATE_IN_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")
_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|.)", re.S)

#: What a client is told when a message holds a lone surrogate.
LONE_SURROGATE_PROBLEM = "message contains a lone UTF-16 surrogate, which is not valid Unicode text"


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


def utf8_problem(raw: bytes) -> str | None:
    """Why `raw` is not strict UTF-8, or None. Bytes are counted from 1 and shown in hex.

    Lone surrogates encoded as UTF-8 (such as `ED A0 80`) are not UTF-8, and are named as such.
    """
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = raw[exc.start:exc.start + 3]
        if len(bad) == 3 and bad[0] == 0xED and 0xA0 <= bad[1] <= 0xBF:
            return f"bytes {exc.start + 1}-{exc.start + 3} ({bad.hex(' ').upper()}) encode a lone UTF-16 surrogate"
        return f"byte {exc.start + 1} ({raw[exc.start:exc.end].hex(' ').upper()}) is not UTF-8"
    return None


def utf8_text(raw: bytes) -> str:
    """`raw` decoded as strict UTF-8 (a UTF-8 byte order mark is ignored, as RFC 8259 allows).

    Raises:
        NotUtf8: UTF-16 or UTF-32 (with or without a byte order mark), bytes that are not UTF-8,
            or an encoded surrogate such as `ED A0 80`; the message says which bytes (`utf8_problem`).
    """
    wide = _wide_encoding(raw)
    if wide:
        raise NotUtf8(f"The body must be UTF-8 JSON; it looks like {wide}")
    if raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8):]
    problem = utf8_problem(raw)
    if problem:
        raise NotUtf8(f"The body must be UTF-8 JSON; {problem}")
    return raw.decode("utf-8")


def has_lone_surrogate(text: str) -> bool:
    """Whether `text` (for example a parsed JSON string) holds a lone UTF-16 surrogate."""
    return _LONE_SURROGATE.search(text) is not None


def holds_lone_surrogate(value: JSON) -> bool:
    """Whether any string in a parsed JSON value, keys included, holds a lone UTF-16 surrogate.

    Iterative, so a value as deep as the parser allowed cannot exhaust the stack.
    """
    stack: list[JSON] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _LONE_SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def may_hold_surrogates(raw: str | bytes) -> bool:
    """Whether parsing raw JSON text could give a string holding a lone surrogate. When it cannot, the
    parsed value needs no walk: one scan of the text is far cheaper than visiting every string."""
    if isinstance(raw, bytes):
        return _SURROGATE_IN_BYTES.search(raw) is not None
    return _SURROGATE_IN_TEXT.search(raw) is not None


def lone_surrogate_escape(text: str) -> bool:
    """Whether raw JSON `text` holds a `\\uD800`-`\\uDFFF` escape that is not half of a proper pair.

    Escapes are read left to right, so `\\\\ud800` (an escaped backslash, then text) is not one.
    """
    if "\\" not in text:
        return False
    high_ends_at = -1  # where the last unpaired high-surrogate escape ended, or -1
    for match in _ESCAPE.finditer(text):
        code = int(match.group(1), 16) if match.group(1) else -1
        if high_ends_at >= 0:
            if match.start() == high_ends_at and 0xDC00 <= code <= 0xDFFF:
                high_ends_at = -1
                continue
            return True
        if 0xD800 <= code <= 0xDBFF:
            high_ends_at = match.end()
        elif 0xDC00 <= code <= 0xDFFF:
            return True
    return high_ends_at >= 0
