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

It also owns the JSON codec the request path uses (`json_loads`, `json_dumps`, `canonical_bytes`):
msgspec where it gives exactly what the standard library would (it needs some 4 to 6 times fewer
instructions), the standard library for everything else, and the standard library alone where
msgspec is not installed (Pyodide's in-page checker).
"""

from __future__ import annotations

import codecs
import json
import re

from .errors import ParseError
from .messages import JSON

try:
    import msgspec
except ImportError:  # the in-page checker on Pyodide, or an install without it: the standard library does it all
    msgspec = None  # type: ignore[assignment]

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
    try:
        return raw.decode("utf-8")  # once: the reason is worked out only for bytes that are not UTF-8
    except UnicodeDecodeError:
        raise NotUtf8(f"The body must be UTF-8 JSON; {utf8_problem(raw)}") from None


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
    # Substring tests first: most text holds no "\\u" at all, and ASCII text no surrogate character.
    if isinstance(raw, bytes):
        return b"\\u" in raw and _SURROGATE_IN_BYTES.search(raw) is not None
    return ("\\u" in raw and _SURROGATE_IN_TEXT.search(raw) is not None) or (
        not raw.isascii() and _LONE_SURROGATE.search(raw) is not None)


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


# -- JSON text <-> values ------------------------------------------------------------------------

_DECODER = msgspec.json.Decoder() if msgspec is not None else None
_ENCODER = msgspec.json.Encoder() if msgspec is not None else None
_SORTED_ENCODER = msgspec.json.Encoder(order="sorted") if msgspec is not None else None
_STDLIB_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True)


class _FloatSeen(Exception):
    pass


def _no_floats(text: str) -> None:
    raise _FloatSeen


#: Reads JSON and stops at its first float: the one kind of value whose JSON msgspec and the standard library
#: spell differently (1e16 against 1e+16; null against NaN and Infinity). One pass in C over the output.
_FLOAT_PROBE = msgspec.json.Decoder(float_hook=_no_floats) if msgspec is not None else None


def _holds_float(out: bytes) -> bool:
    assert _FLOAT_PROBE is not None
    try:
        _FLOAT_PROBE.decode(out)
    except _FloatSeen:
        return True
    except Exception:  # msgspec wrote it, so msgspec reads it; if not, play safe
        return True
    return False


def json_loads(text: str | bytes) -> JSON:
    """What `json.loads(text)` returns, or the exception it raises.

    msgspec parses first: it accepts strictly RFC 8259 JSON and, for whatever it accepts, gives the
    value the standard library gives (integers of any size included). What it refuses (NaN and
    Infinity, numbers that overflow to infinity, `\\ud800` escapes, a UTF-8 byte order mark, nesting
    past its limit, anything malformed) goes to `json.loads`, so the value or the exception and its
    message are always the standard library's.
    """
    if _DECODER is not None:
        try:
            value: JSON = _DECODER.decode(text)
            return value
        except Exception:  # msgspec's DecodeError, ValidationError, RecursionError, UnicodeError: ask json
            pass
    result: JSON = json.loads(text)
    return result


def json_dumps(value: JSON) -> bytes:
    """Compact JSON as UTF-8 bytes: the one encoder of responses on the request path.

    Text is written as UTF-8, not `\\u` escapes (RFC 8259 section 8.1). A value msgspec cannot write
    (a lone surrogate, a non-string key) falls back to `json.dumps`, which escapes it. Non-finite
    numbers, which JSON cannot express, are written as null (the standard library wrote `NaN`, which
    no strict parser reads).
    """
    if _ENCODER is not None:
        try:
            return _ENCODER.encode(value)
        except (TypeError, ValueError, UnicodeError, RecursionError):
            pass
    return json.dumps(value, separators=(",", ":")).encode()


def canonical_bytes(value: JSON) -> bytes:
    """Sorted, compact, ASCII-only JSON, byte for byte what `json.dumps(value, sort_keys=True,
    separators=(",", ":"), ensure_ascii=True)` writes: one byte string per value, whatever text it holds.

    msgspec writes it when the value holds no float and its output is ASCII without DEL or null, where the two
    agree byte for byte (tests/mrtr/test_json_codec.py checks that against the standard library); the standard
    library writes everything else.
    """
    if _SORTED_ENCODER is not None:
        try:
            out = _SORTED_ENCODER.encode(value)
        except (TypeError, ValueError, UnicodeError, RecursionError):
            pass
        else:
            # DEL is ASCII, but `ensure_ascii` escapes it and msgspec does not.
            # null may be a NaN or an infinity msgspec wrote so: the standard library writes it when there is one.
            if out.isascii() and b"\x7f" not in out and b"null" not in out and not _holds_float(out):
                return out
    return _STDLIB_CANONICAL.encode(value).encode("ascii")


def nesting_bound(text: str | bytes) -> int:
    """An upper bound on how deep the JSON in `text` nests: its count of `{` and `[`, strings included.

    Each level needs an opening bracket of its own, so a message whose text holds no more brackets than
    a depth limit cannot pass it, and the parsed value need not be walked (two scans in C instead).
    """
    if isinstance(text, bytes):
        return text.count(b"{") + text.count(b"[")
    return text.count("{") + text.count("[")
