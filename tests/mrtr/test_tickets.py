"""The ticket codec: signed and sealed formats, key rotation, strict decoding, and tampering."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from itsdangerous import Signer

from mrtr import KeyConfigError, KeyRing, TicketCodec, TicketRejected, Trace
from mrtr.tickets import MAX_TICKET_LENGTH, b64decode_strict, b64encode, canonical_json, check_binding, read_payload
from mrtr.wire import has_lone_surrogate
from mrtr_settings.keyfiles import load_or_create_key, ring_from_config

NOW = 1_790_000_000.0
OLD = "old-key-0123456789abcdef0123456789abcdef0123"
NEW = "new-key-0123456789abcdef0123456789abcdef0123"


def mint(codec: TicketCodec, **overrides) -> str:
    claims = codec.claims(now=NOW, sub="bob", method="tools/call", target="deploy",
                          arguments={"env": "staging"}, work={"env": "staging"}, step="confirm")
    return codec.encode({**claims, **overrides})


def open_(codec: TicketCodec, token: object) -> dict:
    return codec.open(token, Trace())


@pytest.fixture(params=[False, True], ids=["signed", "sealed"])
def codec(request) -> TicketCodec:
    return TicketCodec(KeyRing([NEW, OLD]), sealed=request.param)


def test_a_minted_ticket_opens_to_its_claims(codec):
    token = mint(codec)
    claims = open_(codec, token)
    assert claims["sub"] == "bob" and claims["work"] == {"env": "staging"}
    assert claims["exp"] - claims["iat"] == 120
    assert claims["step"] == "confirm" and len(claims["jti"]) >= 16


def test_every_ticket_gets_its_own_id(codec):
    assert open_(codec, mint(codec))["jti"] != open_(codec, mint(codec))["jti"]


def test_a_signed_ticket_is_readable_by_anyone():
    """Signed is not secret: base64 is an encoding, not encryption."""
    token = mint(TicketCodec(KeyRing([NEW])))
    prefix, payload, _sig = token.split(".")
    assert prefix == "t1"
    assert json.loads(base64.urlsafe_b64decode(payload + "==="))["work"] == {"env": "staging"}


def itsdangerous_signer(*keys: str) -> Signer:
    """The signer the codec's format is itsdangerous's, configured as the codec describes it (its last key signs)."""
    return Signer(list(reversed(keys)), salt=b"mrtr.requestState.v1", digest_method=hashlib.sha256,
                  key_derivation="hmac")


def test_a_signed_ticket_is_exactly_what_itsdangerous_signs_and_reads():
    """The codec computes the HMAC itself (one per ticket), in itsdangerous' format: each reads the other's."""
    codec = TicketCodec(KeyRing([NEW, OLD]))
    token = mint(codec)
    signer = itsdangerous_signer(NEW, OLD)
    signed, _, _ = token.rpartition(".")
    assert signer.unsign(token.encode()) == signed.encode()
    assert signer.sign(signed.encode()).decode() == token
    by_itsdangerous = signer.sign(f"t1.{b64encode(canonical_json(open_(codec, token)))}".encode()).decode()
    assert open_(codec, by_itsdangerous) == open_(codec, token)
    older = itsdangerous_signer(OLD).sign(signed.encode()).decode()  # a ticket from before a rotation
    assert open_(codec, older)["sub"] == "bob"


@pytest.mark.parametrize("spelling", ["padded", "unused-bits", "standard-alphabet"])
def test_a_right_mac_spelled_another_way_is_refused(spelling):
    """The MAC is compared as text, so only its one canonical spelling passes, and the trace says why."""
    codec = TicketCodec(KeyRing([NEW]), jti=lambda: "fixed-id-for-a-fixed-mac")
    signed, _, sig = mint(codec).rpartition(".")
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    other = {"padded": sig + "=",
             "unused-bits": sig[:-1] + alphabet[alphabet.index(sig[-1]) ^ 1],  # 43 characters: 2 bits unused
             "standard-alphabet": sig.replace("-", "+").replace("_", "/") + "="}[spelling]
    assert "-" in sig or "_" in sig  # so the standard alphabet spells it differently (the fixed jti sees to it)
    lenient = base64.b64decode(other.replace("-", "+").replace("_", "/") + "==")
    assert lenient == b64decode_strict(sig) and other != sig  # the right MAC, spelled another way
    trace = Trace()
    with pytest.raises(TicketRejected) as exc:
        codec.open(f"{signed}.{other}", trace)
    assert exc.value.check == "signature"
    assert trace.checks[0].outcome == "fail"


def test_a_sealed_ticket_hides_its_payload():
    codec = TicketCodec(KeyRing([NEW]), sealed=True)
    token = mint(codec)
    assert token.startswith("s1.")
    raw = b64decode_strict(token[3:])
    assert b"staging" not in raw and b"bob" not in raw
    assert not hasattr(codec, "peek")  # the production codec has no unverified decoding at all


def test_the_newest_key_signs_and_older_keys_still_verify():
    """Key rotation: tickets minted before a rotation stay valid until they expire."""
    before = TicketCodec(KeyRing([OLD]))
    after = TicketCodec(KeyRing([NEW, OLD]))
    assert open_(after, mint(before))["sub"] == "bob"
    only_new = TicketCodec(KeyRing([NEW]))
    assert open_(only_new, mint(after))["sub"] == "bob"
    with pytest.raises(TicketRejected) as exc:
        open_(only_new, mint(before))
    assert exc.value.check == "signature"


def test_a_sealed_ticket_from_a_retired_key_is_refused():
    old = TicketCodec(KeyRing([OLD]), sealed=True)
    with pytest.raises(TicketRejected):
        open_(TicketCodec(KeyRing([NEW]), sealed=True), mint(old))


@pytest.mark.parametrize("token", [None, 42, 3.5, True, [], {}, "", "t1", "t1..", "x1.abc.def", "s1.", "s1.AAAA",
                                   "t1.e30.", "t1..sig", "t1.e30.e30.e30", "t1.e30 .sig", "t1.@@@.###",
                                   "t1.é30.sig", "s1.AAAA\u00e9AAAA", "t1.e3+0.sig", "t1.e30=.sig"],
                         ids=repr)
def test_malformed_tickets_fail_at_the_signature_check(codec, token):
    trace = Trace()
    with pytest.raises(TicketRejected) as exc:
        codec.open(token, trace)
    assert exc.value.check == "signature"
    assert [c.outcome for c in trace.checks] == ["fail"] + ["skipped"] * 5


def test_a_megabyte_ticket_is_refused_before_any_decoding(codec):
    with pytest.raises(TicketRejected) as exc:
        open_(codec, "t1." + "A" * 1_000_000)
    assert str(MAX_TICKET_LENGTH) in exc.value.reason


def test_non_canonical_base64_is_refused():
    """Two strings must never decode to the same ticket: unused bits and padding are refused."""
    assert b64decode_strict("QQ") == b"A"
    for text in ("QR", "QQ==", "Q", "QQ\n", "Q+Q"):
        with pytest.raises(ValueError):
            b64decode_strict(text)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), sealed=st.booleans())
def test_any_change_truncation_or_extension_of_a_ticket_is_refused(data, sealed):
    """Spec-mandated (MRTR server requirement 4): state that fails verification MUST be rejected."""
    codec = TicketCodec(KeyRing([NEW, OLD]), sealed=sealed)
    token = mint(codec)
    kind = data.draw(st.sampled_from(["change", "truncate", "extend"]))
    if kind == "change":
        i = data.draw(st.integers(0, len(token) - 1))
        c = data.draw(st.characters(codec="ascii").filter(lambda ch: ch != token[i]))
        forged = token[:i] + c + token[i + 1:]
    elif kind == "truncate":
        forged = token[: data.draw(st.integers(0, len(token) - 1))]
    else:
        forged = token + data.draw(st.text(min_size=1, max_size=20))
    with pytest.raises(TicketRejected):
        open_(codec, forged)


def bind(claims, *, principal="bob", now=NOW + 8, env="staging"):
    trace = Trace()
    trace.record("signature", "pass")
    check_binding(claims, trace, principal=principal, now=now, method="tools/call", target="deploy",
                  arguments={"env": env})
    return trace


def strings_in(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *strings_in(v))]
    if isinstance(value, list):
        return [s for v in value for s in strings_in(v)]
    return []


# Lone surrogates of both halves, a pair JSON joins into one character, and a backslash with "ud800"
# to make text that only looks like an escape.
_PIECES = ["a", "\\", "ud800", "\u00e9", "\U0001f600", "\ud800", "\udbff", "\udc00", "\udfff", "\ud83d\ude00", '"']
_TRICKY = st.lists(st.sampled_from(_PIECES), max_size=6).map("".join)
_JSON = st.recursive(st.none() | st.booleans() | st.integers() | _TRICKY,
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TRICKY, inner, max_size=3),
                     max_leaves=8)


@settings(max_examples=300)
@given(value=_JSON, ascii_only=st.booleans())
def test_a_payload_is_refused_exactly_when_what_it_parses_to_holds_a_lone_surrogate(value, ascii_only):
    """read_payload only walks a payload whose text could hold a surrogate; the shortcut must never
    let one through, whether it arrives escaped (\\udfff) or raw."""
    text = json.dumps(value, ensure_ascii=ascii_only)
    parsed = json.loads(text)
    if any(has_lone_surrogate(s) for s in strings_in(parsed)):
        with pytest.raises(ValueError, match="lone UTF-16 surrogate"):
            read_payload(text)
    else:
        assert read_payload(text) == parsed


def test_binding_checks_pass_for_the_right_caller_in_time_on_the_same_request(codec):
    trace = bind(open_(codec, mint(codec)))
    assert [c.outcome for c in trace.checks] == ["pass"] * 4


@pytest.mark.parametrize(("kwargs", "check"), [
    ({"principal": "alice"}, "principal"),
    ({"now": NOW + 120}, "expiry"),
    ({"now": NOW + 300}, "expiry"),
    ({"env": "prod"}, "request"),
])
def test_binding_checks_stop_at_the_first_failure(codec, kwargs, check):
    with pytest.raises(TicketRejected) as exc:
        bind(open_(codec, mint(codec)), **kwargs)
    assert exc.value.check == check


@pytest.mark.parametrize("exp", [None, "soon", float("nan"), True])
def test_an_expiry_that_is_not_a_number_never_passes(exp):
    """Positive-form check: a NaN or missing exp must fail, not slip through."""
    codec = TicketCodec(KeyRing([NEW]))
    with pytest.raises(TicketRejected) as exc:
        bind(open_(codec, mint(codec, exp=exp)))
    assert exc.value.check == "expiry"


def test_keys_shorter_than_32_characters_are_refused_with_advice():
    with pytest.raises(KeyConfigError, match="secrets.token_urlsafe"):
        KeyRing(["short"])


def test_configured_keys_are_comma_separated_and_the_first_signs(tmp_path):
    ring = ring_from_config(f" {NEW} , {OLD} ", state_dir=tmp_path)
    assert ring.keys == (NEW.encode(), OLD.encode()) and ring.signing_key == NEW.encode()
    assert NEW not in repr(ring)


def test_without_configuration_a_key_is_generated_once_and_shared(tmp_path):
    first = ring_from_config(None, state_dir=tmp_path)
    second = ring_from_config("", state_dir=tmp_path)
    assert first.keys == second.keys and len(first.signing_key) >= 32
    key_file = tmp_path / "secret.key"
    assert key_file.stat().st_mode & 0o777 == 0o600
    assert load_or_create_key(key_file) == first.signing_key
