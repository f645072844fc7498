"""The requestState ticket: how it is minted, opened and checked.

Threat model: the ticket comes back from the client, so every byte of it is attacker-controlled.
A server holds nothing between rounds; the ticket carries the half-done work, bound to the
principal, the originating request and a short expiry, and protected by HMAC-SHA256 (signed,
readable) or AES-256-GCM (sealed, unreadable). Verification runs six checks in a fixed order —
signature, principal, expiry, request, answer, single-use — and records each as pass, fail or
skipped. The first failure stops the rest. The wire never learns which check failed: callers
raise `TicketRejected`, whose message is frozen; the reason goes to the trace and the log.

"requestState" is the wire name; "ticket" is what this module calls the token inside it.
"""

from __future__ import annotations

import binascii
import hashlib
import hmac
import math
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, NamedTuple, NoReturn

from itsdangerous import Signer

from .errors import TicketRejected
from .keys import KeyRing
from .messages import JSON, JSONObject
from .wire import canonical_bytes, holds_lone_surrogate, json_loads, may_hold_surrogates

if TYPE_CHECKING:  # sealing needs `cryptography`, imported only when a sealed ticket is made or opened
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

CHECKS: tuple[str, ...] = ("signature", "principal", "expiry", "request", "answer", "single-use")
CHECK_TITLES: dict[str, str] = {
    "signature": "Signature matches",
    "principal": "Principal is the caller",
    "expiry": "Not expired",
    "request": "Same method and arguments",
    "answer": "Answer included",
    "single-use": "Not already redeemed",
}

CheckOutcome = Literal["pass", "fail", "skipped"]
#: Why a check was skipped: an earlier one failed, the handler never needed it, or a switch removed it.
SkipReason = Literal["", "not-reached", "not-needed", "switched-off", "unavailable"]

SIGNED_PREFIX = "t1"
SEALED_PREFIX = "s1"
_SIGNED_HEAD = f"{SIGNED_PREFIX}."
#: Tickets longer than this are refused before any decoding work is done.
MAX_TICKET_LENGTH = 4096
DEFAULT_TTL = 120

_SALT = b"mrtr.requestState.v1"
_SEAL_INFO = b"mrtr.requestState.seal.v1"


_new_tuple = tuple.__new__


class Check(NamedTuple):
    """One check's result. A tuple, because a verification builds several per request."""

    name: str
    outcome: CheckOutcome
    detail: str = ""
    why: SkipReason = ""  # set for skipped checks only

    @property
    def title(self) -> str:
        return CHECK_TITLES[self.name]


@dataclass
class Trace:
    """The checks run on one request's ticket, in order."""

    checks: list[Check] = field(default_factory=list)

    def record(self, name: str, outcome: CheckOutcome, detail: str = "", why: SkipReason = "") -> None:
        # tuple.__new__ directly: a NamedTuple's own __new__ is Python code, run four times per verification.
        self.checks.append(_new_tuple(Check, (name, outcome, detail, why if outcome == "skipped" else "")))

    def skip_rest(self, detail: str, why: SkipReason = "not-reached") -> None:
        done = {c.name for c in self.checks}
        for name in CHECKS:
            if name not in done:
                self.checks.append(Check(name, "skipped", detail, why))

    @property
    def first_failure(self) -> Check | None:
        return next((c for c in self.checks if c.outcome == "fail"), None)

    def outcome_of(self, name: str) -> CheckOutcome | None:
        return next((c.outcome for c in self.checks if c.name == name), None)

    def as_dicts(self) -> list[dict[str, str]]:
        return [{"check": c.name, "outcome": c.outcome, "detail": c.detail, "why": c.why} for c in self.checks]


def read_payload(text: str) -> JSON:
    """Parse a ticket's JSON payload, refusing (ValueError) what no server writes and no page can show.

    An unverified payload (the lab's "remove signature" switch, or counter-mode plaintext without
    its tag) is whatever a visitor made it: nesting deep enough to exhaust the parser's recursion,
    or lone UTF-16 surrogates (`\\ud800`) that no UTF-8 encoder can write back out.
    """
    try:
        value: JSON = json_loads(text)
    except RecursionError:
        raise ValueError("ticket payload nests too deeply to read") from None
    if may_hold_surrogates(text) and holds_lone_surrogate(value):
        raise ValueError("ticket payload holds a lone UTF-16 surrogate, which is not valid text")
    return value


_TO_URLSAFE = bytes.maketrans(b"+/", b"-_")


def b64encode(raw: bytes) -> str:
    """Unpadded base64url (binascii directly: `base64.urlsafe_b64encode` is two more Python calls)."""
    return binascii.b2a_base64(raw, newline=False).translate(_TO_URLSAFE).rstrip(b"=").decode("ascii")


_ALPHABET = {c: i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")}
_TO_STANDARD = bytes.maketrans(b"-_", b"+/")


def b64decode_strict(text: str) -> bytes:
    """Decode unpadded base64url, refusing anything that would not re-encode to the same text.

    Lenient decoders ignore stray characters and the unused low bits of the last character, so
    two different strings can decode to the same bytes. A ticket must be accepted only in the
    exact form the server wrote: no padding, no stray characters, unused bits all zero.
    """
    # binascii's strict mode refuses anything outside the standard alphabet once "-_" are mapped,
    # so only the three characters that are standard but not url-safe need refusing first.
    if not text or "+" in text or "/" in text or "=" in text:
        raise ValueError("not canonical base64url")
    tail = len(text) % 4
    if tail == 1 or (tail and _ALPHABET.get(text[-1], 0) & (0x0F if tail == 2 else 0x03)):
        raise ValueError("not canonical base64url")
    padded = text.encode("ascii").translate(_TO_STANDARD) + b"=" * (-len(text) % 4)
    return binascii.a2b_base64(padded, strict_mode=True)


def canonical_json(value: JSON) -> bytes:
    """Sorted, compact, ASCII-only JSON: one byte string per value, whatever text it holds."""
    return canonical_bytes(value)


def request_digest(method: str, target: str, arguments: JSON) -> str:
    """A short fingerprint of the request a ticket belongs to: method, target, canonical arguments."""
    return hashlib.sha256(canonical_json([method, target, arguments])).hexdigest()[:24]


class _Signer(Signer):
    """itsdangerous's HMAC signer, deriving each key once instead of on every verification."""

    def __init__(self, keys: list[bytes], *, salt: bytes) -> None:
        super().__init__(keys, salt=salt, digest_method=hashlib.sha256, key_derivation="hmac")
        self._derived: dict[bytes, bytes] = {}

    def derive_key(self, secret_key: str | bytes | None = None) -> bytes:
        cache_key = secret_key if isinstance(secret_key, bytes) else str(secret_key).encode()
        derived = self._derived.get(cache_key)
        if derived is None:
            derived = self._derived[cache_key] = super().derive_key(secret_key)
        return derived

    def verify_raw(self, value: bytes, mac: bytes) -> bool:
        """Check an already-decoded MAC against every key (newest first), in constant time each."""
        return any(self.algorithm.verify_signature(self.derive_key(k), value, mac) for k in reversed(self.secret_keys))


class TicketCodec:
    """Mints and opens tickets under a key ring, signed (readable) or sealed (AEAD)."""

    def __init__(self, ring: KeyRing, *, sealed: bool = False, ttl: int = DEFAULT_TTL,
                 jti: Callable[[], str] | None = None) -> None:
        self.ring = ring
        self.sealed = sealed
        self.ttl = int(ttl)
        # Ticket ids are random by default. The presenter injects a seeded sequence instead, so a
        # demo replays byte for byte on a fixed key and clock; production never passes one.
        self.jti = jti or (lambda: secrets.token_urlsafe(12))
        # itsdangerous signs with the *last* key of its list; our ring's first key signs.
        self._signer = _Signer(list(reversed(ring.keys)), salt=_SALT)
        # Each ring key's HMAC-SHA256, keyed once with the key itsdangerous derives from it, newest first:
        # minting and verifying copy one and feed it the ticket, so a ticket costs one HMAC and nothing else
        # of itsdangerous per request, in the format its `Signer` writes and reads (tests/mrtr/test_tickets.py).
        self._macs = [hmac.new(self._signer.derive_key(k), digestmod=hashlib.sha256) for k in ring.keys]
        self._aead_by_kid: list[tuple[bytes, AESGCM]] | None = None  # built on first use

    @property
    def _aead(self) -> list[tuple[bytes, AESGCM]]:
        """Each key's id and AEAD, newest first (built once, on the first sealed ticket)."""
        if self._aead_by_kid is None:
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM

            self._aead_by_kid = [(seal_key_id(k), AESGCM(seal_key(k))) for k in self.ring.keys]
        return self._aead_by_kid

    # -- minting -----------------------------------------------------------------------------

    def claims(
        self,
        *,
        now: float,
        sub: str,
        method: str,
        target: str,
        arguments: JSON,
        work: JSONObject,
        step: str,
    ) -> JSONObject:
        return {
            "v": 1,
            "jti": self.jti(),
            "sub": sub,
            "req": request_digest(method, target, arguments),
            "iat": int(now),
            "exp": int(now) + self.ttl,
            "step": step,
            "work": work,
        }

    def encode(self, claims: JSONObject, *, sealed: bool | None = None) -> str:
        body = canonical_json(claims)
        if self.sealed if sealed is None else sealed:
            kid, aead = self._aead[0]
            nonce = os.urandom(12)
            blob = aead.encrypt(nonce, body, SEALED_PREFIX.encode())
            return f"{SEALED_PREFIX}.{b64encode(kid + nonce + blob)}"
        signed = f"{SIGNED_PREFIX}.{b64encode(body)}"
        mac = self._macs[0].copy()
        mac.update(signed.encode("ascii"))
        return f"{signed}.{b64encode(mac.digest())}"

    # -- opening -----------------------------------------------------------------------------

    def open(self, token: JSON, trace: Trace) -> JSONObject:
        """Verify the ticket's integrity and return its claims; record the signature check.

        Raises:
            TicketRejected: the token is not a string, too long, malformed, or fails its MAC/tag.
        """
        try:
            claims = self._open(token)
        except (ValueError, binascii.Error, UnicodeDecodeError) as exc:
            reason = str(exc) or exc.__class__.__name__
            trace.record("signature", "fail", reason)
            trace.skip_rest("an earlier check failed")
            raise TicketRejected("signature", reason) from None
        trace.record("signature", "pass", "integrity verified with a shared key")
        return claims

    def _open(self, token: JSON) -> JSONObject:
        body = self._signed_body(token)
        if body is not None:
            return parse_claims(body)
        # Not a signed ticket this ring wrote: taken apart step by step, so the trace says what is wrong with it.
        parts = split_ticket(token)
        if isinstance(parts, SignedParts):
            if not self._signer.verify_raw(parts.signed, parts.mac):
                raise ValueError("signature mismatch: the payload is not what a server signed")
            return parse_claims(parts.body)
        aead = next((aead for i, aead in self._aead if hmac.compare_digest(i, parts.kid)), None)
        if aead is None:
            raise ValueError("sealed with a key this server does not hold")
        try:
            body = aead.decrypt(parts.nonce, parts.blob, SEALED_PREFIX.encode())
        except Exception:  # InvalidTag: the ciphertext or tag was changed
            raise ValueError("authentication tag mismatch: the sealed ticket was altered") from None
        return parse_claims(body)


    def _signed_body(self, token: JSON) -> bytes | None:
        """The payload of a signed ticket whose MAC is one of this ring's, decoded; None for anything else.

        One HMAC over the signed text, compared with the ticket's MAC as text: the unpadded base64url of
        a MAC has exactly one spelling, so this accepts the same tickets as decoding the MAC strictly first.
        """
        if not isinstance(token, str) or len(token) > MAX_TICKET_LENGTH or not token.startswith(_SIGNED_HEAD):
            return None
        signed, _, sig = token.rpartition(".")
        if len(signed) <= len(_SIGNED_HEAD) or not sig or not token.isascii():
            return None
        data = signed.encode("ascii")
        expected = sig.encode("ascii")
        for key in self._macs:
            mac = key.copy()
            mac.update(data)
            if hmac.compare_digest(b64encode(mac.digest()).encode("ascii"), expected):
                # The MAC says a ring key's holder wrote this payload, and this codec writes only canonical
                # base64url, so it is decoded without the strict checks an unverified one needs.
                payload = data[len(_SIGNED_HEAD):]
                return binascii.a2b_base64(payload.translate(_TO_STANDARD) + b"=" * (-len(payload) % 4))
        return None


@dataclass(frozen=True)
class SignedParts:
    """A signed ticket taken apart, not verified: the signed text, its decoded payload and MAC."""

    signed: bytes  # "t1.<payload>", what the MAC covers
    body: bytes
    mac: bytes


@dataclass(frozen=True)
class SealedParts:
    """A sealed ticket taken apart, not opened: key id, nonce, and ciphertext with its 16-byte tag."""

    kid: bytes
    nonce: bytes
    blob: bytes


def split_ticket(token: JSON) -> SignedParts | SealedParts:
    """Take a ticket apart by its format, checking its size and encoding but NOT its integrity.

    Raises:
        ValueError: not a string, too long, an unknown prefix, or parts that are not canonical base64url.
    """
    if not isinstance(token, str):
        raise ValueError(f"requestState must be a string, got {type(token).__name__}")
    if len(token) > MAX_TICKET_LENGTH:
        raise ValueError(f"requestState is {len(token)} characters; the limit is {MAX_TICKET_LENGTH}")
    prefix, _, rest = token.partition(".")
    if prefix == SIGNED_PREFIX:
        payload, sep, sig = rest.rpartition(".")
        if not sep or not payload or not sig:
            raise ValueError("ticket is not prefix.payload.signature")
        mac = b64decode_strict(sig)
        return SignedParts(f"{prefix}.{payload}".encode("ascii"), b64decode_strict(payload), mac)
    if prefix == SEALED_PREFIX:
        kid, nonce, blob = split_sealed(rest)
        return SealedParts(kid, nonce, blob)
    raise ValueError("unknown ticket format")


def seal_key(key: bytes) -> bytes:
    """The AES-256 key a ring key seals tickets with (HKDF-SHA256 under this codec's salt and label)."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    return HKDF(algorithm=hashes.SHA256(), length=32, salt=_SALT, info=_SEAL_INFO).derive(key)


def seal_key_id(key: bytes) -> bytes:
    """The 4-byte public id a sealed ticket names its key by."""
    return hashlib.sha256(b"mrtr.kid\x00" + key).digest()[:4]


def split_sealed(rest: str) -> tuple[bytes, bytes, bytes]:
    """A sealed ticket's body (after "s1.") as key id, nonce and ciphertext-with-tag."""
    raw = b64decode_strict(rest)
    if len(raw) < 4 + 12 + 16:
        raise ValueError("sealed ticket is too short")
    return raw[:4], raw[4:16], raw[16:]


def parse_claims(body: bytes) -> JSONObject:
    """Decoded ticket bytes as a version-1 claims object; ValueError for anything else."""
    claims = read_payload(body.decode("utf-8"))
    if not isinstance(claims, dict) or claims.get("v") != 1:
        raise ValueError("ticket payload is not a version-1 claims object")
    return claims


#: A tuple, not `int | float`: the union is rebuilt each time the expression runs, on every request.
_NUMBER = (int, float)


def _fail(trace: Trace, check: str, reason: str) -> NoReturn:
    trace.record(check, "fail", reason)
    trace.skip_rest("an earlier check failed")
    raise TicketRejected(check, reason)


def check_binding(
    claims: JSONObject,
    trace: Trace,
    *,
    principal: str,
    now: float,
    method: str,
    target: str,
    arguments: JSON,
) -> None:
    """Run the principal, expiry and request checks on verified claims, in that order.

    Raises:
        TicketRejected: at the first check that fails; later checks are recorded as skipped.
    """

    sub = claims.get("sub")
    if not (isinstance(sub, str) and hmac.compare_digest(sub.encode(), principal.encode())):
        _fail(trace, "principal", f"ticket is bound to {sub!r} but the caller is {principal!r}")
    trace.record("principal", "pass", f"bound to {principal!r}, the caller")

    exp = claims.get("exp")
    # Positive form, so a missing or non-numeric exp can never pass.
    if not (isinstance(exp, _NUMBER) and not isinstance(exp, bool) and now < exp):
        # Whole seconds, as iat and exp are: 300.4 s past an exp of 120 reads "180 s ago", not 181.
        if isinstance(exp, _NUMBER) and not isinstance(exp, bool) and math.isfinite(exp):
            age = f"{math.floor(now) - math.floor(exp)} s ago"
        else:
            age = "at an unknown time"
        _fail(trace, "expiry", f"ticket expired {age}")
    assert isinstance(exp, _NUMBER)  # narrowed by the positive check above
    trace.record("expiry", "pass", f"{math.floor(exp) - math.floor(now)} s left")

    expected = request_digest(method, target, arguments)
    if claims.get("req") != expected:
        _fail(trace, "request",
              f"ticket belongs to another request (digest {claims.get('req')!r}, this one {expected!r})")
    trace.record("request", "pass", f"{method} {target} with the same arguments")
