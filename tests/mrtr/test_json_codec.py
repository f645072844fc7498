"""mrtr.wire's JSON codec: msgspec where it agrees with the standard library, the standard library everywhere else.

The promise is exactness, not speed: `json_loads` returns what `json.loads` returns or raises what it raises,
`canonical_bytes` writes what `json.dumps(sort_keys=True, separators=(",", ":"))` writes, byte for byte (ticket
digests and payloads depend on it), and both behave the same without msgspec, as on Pyodide.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mrtr import wire
from mrtr.wire import canonical_bytes, json_dumps, json_loads


def stdlib_canonical(value: object) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def outcome(fn, arg):
    try:
        return ("value", repr(fn(arg)))  # repr: tells 1 from 1.0 and True, and compares NaN
    except Exception as exc:  # noqa: BLE001 - the exception is what is compared
        return ("error", type(exc), str(exc))


scalars = (st.none() | st.booleans() | st.integers() | st.integers(min_value=-(2**70), max_value=2**70)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text()
           | st.text(alphabet=st.characters(codec="ascii")))
values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20)

#: Texts msgspec refuses or reads differently on its own, each of which must come out as the standard library's.
EDGE_TEXTS = [
    "NaN", "[Infinity, -Infinity]", '{"a": NaN}', "1e400", "-1e400", '"\\ud800"', '"\\udc00x"', '"\ud800"',
    "123456789012345678901234567890", "-9223372036854775809", "1" * 5000, "[" * 2000 + "]" * 2000,
    '{"a":' * 100 + "1" + "}" * 100, '{"a":1,"a":2}', "\ufeff[1]", "[1,]", "", " ", "01", "1.", ".5", '"\\x"',
    '"a\x01"', "\x7f", '"\x7f"', "true false", "-0", "-0.0", "1E5", "[1] x", '"\\ud83d\\ude00"', "0.1", "5e-324",
]


@pytest.mark.parametrize("text", EDGE_TEXTS, ids=lambda t: repr(t[:20]))
def test_json_loads_gives_the_standard_librarys_value_or_error_for_the_edge_cases(text):
    assert outcome(json_loads, text) == outcome(json.loads, text)
    raw = text.encode("utf-8", "surrogatepass")
    assert outcome(json_loads, raw) == outcome(json.loads, raw)


@pytest.mark.parametrize("raw", [b'"\xed\xa0\x80"', b'"\xff"', b"\xef\xbb\xbf[1]", b"\xff\xfe[\x001\x00]\x00",
                                 b'[1]\x00'], ids=repr)
def test_json_loads_reads_bytes_as_the_standard_library_does(raw):
    assert outcome(json_loads, raw) == outcome(json.loads, raw)


@settings(max_examples=400, deadline=None)
@given(value=values)
def test_json_loads_agrees_with_the_standard_library_on_whatever_it_wrote(value):
    for text in (json.dumps(value), json.dumps(value, ensure_ascii=False), json.dumps(value, indent=1)):
        assert outcome(json_loads, text) == outcome(json.loads, text)


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list('{}[]",:0123456789.eE+-tfnrulsaNIy\\u \n')), max_size=30))
def test_json_loads_agrees_with_the_standard_library_on_json_like_garbage(text):
    assert outcome(json_loads, text) == outcome(json.loads, text)


@settings(max_examples=400, deadline=None)
@given(value=values)
def test_canonical_bytes_are_the_standard_librarys_byte_for_byte(value):
    assert outcome(canonical_bytes, value) == outcome(stdlib_canonical, value)


@pytest.mark.parametrize("value", [
    [1e16], [1e-7], [float("nan")], [float("inf")], {"k": None}, {"a": "\x7f"}, {"é": "ü"}, {"b": 1.5, "a": [0.1]},
    {"hex": "3e4f", "dots": "v1.2", "word": "null"}, 2**80, -(2**80), True, {1: "a"}, {"a": (1, 2)}, "\ud800",
    {"z": {"y": {"x": [None, False, ""]}}},
], ids=repr)
def test_canonical_bytes_where_msgspec_and_the_standard_library_part(value):
    assert outcome(canonical_bytes, value) == outcome(stdlib_canonical, value)


def test_json_dumps_writes_compact_utf8_that_reads_back_to_the_value():
    value = {"text": "déploiement ✓", "n": [1, 2**70, -3], "ok": True, "none": None, "f": 0.25}
    out = json_dumps(value)
    assert out.decode("utf-8") == json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    assert json.loads(out) == value


def test_json_dumps_escapes_what_utf8_cannot_carry_and_writes_no_bare_nan():
    assert json.loads(json_dumps({"s": "\ud800"})) == {"s": "\ud800"}  # the standard library's \ud800 escape
    assert json_dumps([float("nan"), math.inf]) == b"[null,null]"  # JSON has no NaN; strict parsers refuse one


@pytest.fixture
def without_msgspec(monkeypatch):
    """What Pyodide's in-page checker runs: mrtr.wire with no msgspec installed."""
    for name in ("_DECODER", "_ENCODER", "_SORTED_ENCODER", "_FLOAT_PROBE"):
        monkeypatch.setattr(wire, name, None)


@pytest.mark.parametrize("text", EDGE_TEXTS[:12], ids=lambda t: repr(t[:20]))
def test_without_msgspec_the_standard_library_does_it_all(without_msgspec, text):
    assert outcome(json_loads, text) == outcome(json.loads, text)
    value = {"b": [1, 2.5, None], "a": "é\x7f"}
    assert canonical_bytes(value) == stdlib_canonical(value)
    assert json_dumps(value) == json.dumps(value, separators=(",", ":")).encode()
