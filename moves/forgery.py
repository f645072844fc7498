"""What an attacker does to a ticket: read a JWT-like payload without verifying it (`readable_claims`) and its
expiry (`readable_expiry`), edit one field under the old signature (`edit_ticket`, `edits_of`), drop or empty the
signature (`unsigned_of`), or flip one character of a sealed one (`flip_one_character`). Nothing read here is
trusted; pure functions.
"""

from __future__ import annotations

import base64
import json

from mrtr import JSON, JSONObject
from mrtr.tickets import SIGNED_PREFIX, b64decode_strict, b64encode, canonical_json, read_payload

from .catalog import Move
from .target import Role


def _payload_part(ticket: str) -> tuple[str, str, str] | None:
    """`(head, payload, signature)` of a JWT-like ticket: three dot-separated parts, the middle base64url."""
    parts = ticket.split(".") if isinstance(ticket, str) and len(ticket) <= 65536 else []
    if len(parts) != 3 or not parts[1] or not parts[2]:
        return None
    return parts[0], parts[1], parts[2]


def readable_claims(ticket: str) -> JSONObject | None:
    """A signed ticket's payload, decoded WITHOUT verification (what any holder can read), or None.

    Reads the lab's `t1.payload.signature` strictly, and any other JWT-like `header.payload.signature`
    (a JWT, the TypeScript SDK codec's `v1.…`) whose middle part is base64url JSON. Sealed or opaque
    tickets give None. Nothing read here is trusted.
    """
    parts = _payload_part(ticket)
    if parts is None:
        return None
    head, payload, _sig = parts
    try:
        if head == SIGNED_PREFIX:
            raw = b64decode_strict(payload)
        else:
            raw = base64.urlsafe_b64decode(payload.rstrip("=") + "=" * (-len(payload.rstrip("=")) % 4))
        claims = read_payload(raw.decode("utf-8"))
    except (ValueError, RecursionError):  # not base64, not UTF-8, not JSON, too deep, lone surrogates
        return None
    return claims if isinstance(claims, dict) else None


def _encode_claims(head: str, old_payload: str, claims: JSONObject) -> str:
    """The edited payload in the ticket's own encoding: the lab's canonical JSON for t1, else compact ASCII
    JSON in the original key order, padded only if the original was."""
    if head == SIGNED_PREFIX:
        return b64encode(canonical_json(claims))
    body = b64encode(json.dumps(claims, separators=(",", ":")).encode("ascii"))
    return body + "=" * (-len(body) % 4) if old_payload.endswith("=") else body


def _string_leaf(value: JSON, path: list[str], skip: frozenset[str]) -> list[str] | None:
    if isinstance(value, str) and (not path or path[-1] not in skip):
        return path
    if isinstance(value, dict):
        for key, inner in value.items():
            found = _string_leaf(inner, [*path, key], skip)
            if found:
                return found
    return None


def flip_one_character(ticket: str) -> str:
    """Change one character in the middle of a ticket's body to another base64url character."""
    prefix, dot, rest = ticket.partition(".")
    body = rest if dot else ticket
    if not body:
        return ticket + "x"
    middle = len(body) // 2
    while body[middle] == "." and middle + 1 < len(body):
        middle += 1
    flipped = "B" if body[middle] != "B" else "C"
    body = body[:middle] + flipped + body[middle + 1:]
    return f"{prefix}.{body}" if dot else body


def _named_leaf(value: JSON, name: str, path: list[str]) -> list[str] | None:
    """The path of the first string leaf whose key is `name`, anywhere in `value`."""
    if isinstance(value, dict):
        for key, inner in value.items():
            if key == name and isinstance(inner, str):
                return [*path, key]
            found = _named_leaf(inner, name, [*path, key])
            if found:
                return found
    return None


def edit_ticket(ticket: str, move: Move) -> str:
    """What an attacker does: set the payload's `edit_path` to `edit_value` and keep the old signature.

    Works on any readable (JWT-like) payload. Fallback paths, in order: a string leaf named like
    `edit_path`'s last key anywhere in the payload (the TypeScript codec keeps `p.env`), the first string
    leaf under "work", any string leaf that is not sub/jti/req. An unreadable ticket (sealed, unknown
    format) gets one character flipped in the middle instead.
    """
    claims = readable_claims(ticket)
    parts = _payload_part(ticket)
    if claims is None or parts is None:
        return flip_one_character(ticket)
    path = move.edit_path.split(".") if move.edit_path else []
    node = _object_at(claims, path[:-1])
    if not path or node is None or path[-1] not in node:
        skip = frozenset({"sub", "jti", "req"})
        found = (_named_leaf(claims, path[-1], []) if path else None) \
            or _string_leaf(claims.get("work"), ["work"], skip) or _string_leaf(claims, [], skip)
        if not found:
            return flip_one_character(ticket)
        path, node = found, _object_at(claims, found[:-1])
        assert node is not None  # the leaf finders return paths through objects only
    node[path[-1]] = move.edit_value
    head, payload, sig = parts
    return f"{head}.{_encode_claims(head, payload, claims)}.{sig}"


def _object_at(claims: JSONObject, path: list[str]) -> JSONObject | None:
    """The object at `path` in `claims` (`claims` itself for an empty path), or None when there is none."""
    node: JSON = claims
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else None


def readable_expiry(ticket: str) -> float | None:
    """The `exp` of a readable payload (`readable_claims`) as a number, or None: when the late moves wait until
    (the targets' `ticket_expiry` also reads less regular tickets). Read, never trusted."""
    claims = readable_claims(ticket)
    exp = claims.get("exp") if claims else None
    return float(exp) if isinstance(exp, int | float) and not isinstance(exp, bool) else None


def _changed(value: JSON, owner: str, other: str) -> tuple[JSON, bool] | None:
    """An attacker's edit of one payload value, and whether the other principal sends it (the owner's name
    rewritten to the other's); None when the value is nothing to edit (null, a list)."""
    if isinstance(value, bool):
        return not value, False
    if isinstance(value, int | float):
        return value + 3600, False  # a later expiry, a later issue time: what a thief would want
    if isinstance(value, str):
        if value == owner:
            return other, True
        last = value[-1:] if value else ""
        return (value[:-1] + ("B" if last == "A" else "A")) if last.isalnum() else value + "A", False
    if isinstance(value, dict):
        for key, inner in value.items():
            changed = _changed(inner, owner, other) if isinstance(inner, str) else None
            if changed is not None:
                return {**value, key: changed[0]}, changed[1]
    return None


def edits_of(ticket: str, owner: str = "", other: str = "") -> list[tuple[str, str, Role]]:
    """Each field of a readable payload edited in turn under the old signature: (label, ticket, sender). An
    unreadable ticket gets one flipped character (one retry)."""
    claims = readable_claims(ticket)
    parts = _payload_part(ticket)
    if claims is None or parts is None:
        return [("one character flipped (the ticket is unreadable)", flip_one_character(ticket), "owner")]
    head, payload, sig = parts
    edits: list[tuple[str, str, Role]] = []
    for name, value in list(claims.items())[:16]:
        changed = _changed(value, owner, other)
        if changed is None:
            continue
        body = _encode_claims(head, payload, {**claims, name: changed[0]})
        edits.append((f"edited {str(name)[:30]}", f"{head}.{body}.{sig}", "other" if changed[1] else "owner"))
    return edits or [("one character flipped (nothing to edit)", flip_one_character(ticket), "owner")]


def unsigned_of(ticket: str) -> list[tuple[str, str]]:
    """The ticket with its signature part emptied, then removed; a JWT whose header names its alg also comes with
    alg "none" (the mistake of taking an unsigned ticket as valid)."""
    head, dot, _sig = ticket.rpartition(".")
    if not dot:
        return [("signature appended empty", ticket + "."), ("signature part removed", ticket[: len(ticket) // 2])]
    shapes = [("signature emptied", f"{head}."), ("signature part removed", head)]
    first, _, rest = head.partition(".")
    try:
        header = json.loads(base64.urlsafe_b64decode(first + "=" * (-len(first) % 4)))
    except (ValueError, RecursionError):
        header = None
    if isinstance(header, dict) and "alg" in header and rest:
        none = b64encode(json.dumps({**header, "alg": "none"}, separators=(",", ":")).encode())
        shapes.append(("alg none", f"{none}.{rest}."))
    return shapes
