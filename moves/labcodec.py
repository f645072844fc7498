"""The lab's own keys and its ticket codec, with the unsafe switch the playground teaches with.

Owns: `LabRing` (keys derived from the app's ring for the lab alone, or the demo's public key),
`LabCodec` (a `TicketCodec` that can be told to skip the signature/tag check, and decodes any
ticket for display without raising), and `lab_codec_for`. The production codec in `mrtr.tickets`
has no such switch; this one refuses any ring that is not a `LabRing`, so the /mcp server can
never be built with it, and a `LabRing` never holds a key /mcp accepts. Never imports Flask.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from collections.abc import Callable
from dataclasses import dataclass

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from mrtr import DEFAULT_TTL, JSON, JSONObject, KeyRing, TicketCodec, TicketRejected, Trace
from mrtr.tickets import (
    MAX_TICKET_LENGTH,
    SEALED_PREFIX,
    SIGNED_PREFIX,
    SignedParts,
    b64decode_strict,
    parse_claims,
    seal_key,
    seal_key_id,
    split_ticket,
)
from mrtr.wire import holds_lone_surrogate

#: The purpose label lab keys are derived under; changing it changes every lab key.
LAB_PURPOSE = b"mrtr-lab: keys of the pages' lab servers, never accepted by /mcp. v1"


class LabRing(KeyRing):
    """A key ring for lab servers only. Build one with `lab_ring_from` (derived) or `LabRing.public`."""

    @classmethod
    def public(cls, key: str) -> LabRing:
        """A ring on a key that is public on purpose (the presenter's demo key)."""
        return cls([key])

    def __repr__(self) -> str:
        return "Lab" + super().__repr__()


def lab_ring_from(ring: KeyRing) -> LabRing:
    """Keys for the lab, derived one by one from the app's ring for a separate purpose (HMAC-SHA256).

    Nothing signed or sealed under them verifies under the app's ring, and the app's keys cannot
    be recovered from them.
    """
    derived = [base64.urlsafe_b64encode(hmac.new(key, LAB_PURPOSE, hashlib.sha256).digest()).rstrip(b"=")
               for key in ring.keys]
    return LabRing(derived)


@dataclass(frozen=True)
class Peek:
    """A ticket decoded for display, never verified. `claims` is None when it could not be read."""

    claims: JSONObject | None
    text: str | None  # the claims as pretty JSON, safe to render
    problem: str | None  # why it could not be shown, in plain words


class LabCodec(TicketCodec):
    """A ticket codec for lab servers: lab keys only, and a switch that removes the integrity check."""

    def __init__(self, ring: LabRing, *, sealed: bool = False, ttl: int = DEFAULT_TTL,
                 jti: Callable[[], str] | None = None, verify_signature: bool = True) -> None:
        if not isinstance(ring, LabRing):
            raise TypeError("the lab codec runs on lab keys only (a LabRing), never on the app's key ring")
        super().__init__(ring, sealed=sealed, ttl=ttl, jti=jti)
        self.verify_signature = verify_signature
        self._ctr_keys = [(seal_key_id(k), seal_key(k)) for k in ring.keys]

    def open(self, token: JSON, trace: Trace) -> JSONObject:
        if self.verify_signature:
            return super().open(token, trace)
        try:
            claims = self._open_unverified(token)
        except (ValueError, binascii.Error, UnicodeError) as exc:
            reason = str(exc) or exc.__class__.__name__
            trace.record("signature", "fail", reason)
            trace.skip_rest("an earlier check failed")
            raise TicketRejected("signature", reason) from None
        trace.record("signature", "skipped", "the payload was trusted as-is", "switched-off")
        return claims

    def _open_unverified(self, token: JSON) -> JSONObject:
        """Decode without checking the MAC or the AEAD tag (the lab's "remove signature" switch)."""
        parts = split_ticket(token)
        if isinstance(parts, SignedParts):
            body = parts.body
        else:
            key = next((k for i, k in self._ctr_keys if hmac.compare_digest(i, parts.kid)), None)
            if key is None:
                raise ValueError("sealed with a key this server does not hold")
            # Without the tag check AES-GCM is plain counter mode: decrypt, trust the result.
            ctr = Cipher(algorithms.AES(key), modes.CTR(parts.nonce + b"\x00\x00\x00\x02")).decryptor()
            body = ctr.update(parts.blob[:-16]) + ctr.finalize()
        claims = parse_claims(body)
        surrogate_problem(claims)
        return claims


def surrogate_problem(claims: JSON) -> None:
    """Raise ValueError when decoded text holds a lone surrogate, which no page or log can show."""
    if holds_lone_surrogate(claims):
        raise ValueError("the payload holds a lone surrogate (half of a UTF-16 pair), which is not text")


def peek(token: object) -> Peek:
    """Decode a signed ticket's payload for display, WITHOUT verifying it. Never raises.

    Sealed tickets are not readable without the key: they come back with claims None and no problem.
    """
    if not isinstance(token, str) or not token.startswith(SIGNED_PREFIX + "."):
        return Peek(None, None, None if isinstance(token, str) and token.startswith(SEALED_PREFIX + ".")
                    else "This is not a ticket the server could decode.")
    try:
        if len(token) > MAX_TICKET_LENGTH:
            raise ValueError(f"it is {len(token)} characters long; the limit is {MAX_TICKET_LENGTH}")
        payload, sep, _sig = token[len(SIGNED_PREFIX) + 1:].rpartition(".")
        if not sep or not payload:
            raise ValueError("it is not prefix.payload.signature")
        claims = parse_claims(b64decode_strict(payload))
        surrogate_problem(claims)
        text = json.dumps(claims, indent=2, ensure_ascii=False)
    except RecursionError:
        return Peek(None, None, "The payload nests too deeply to show.")
    except Exception as exc:  # noqa: BLE001 - display decoding must never fail the page
        reason = str(exc) if isinstance(exc, ValueError) and str(exc).isascii() else exc.__class__.__name__
        return Peek(None, None, f"The payload could not be decoded: {reason[:200]}.")
    return Peek(claims, text, None)
