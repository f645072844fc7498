"""The engine reads any JWT-like ticket's payload (not only the lab's t1): for the late move's `exp` and for
the tampered move's edit, which must change the payload's value and keep the old signature."""

from __future__ import annotations

import base64
import dataclasses
import json

from moves.catalog import load_moves
from moves.engine import edit_ticket, readable_claims, readable_expiry

TAMPERED = next(move for move in load_moves() if move.ticket == "edit-work")


def b64(value: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(value, separators=(",", ":")).encode()).rstrip(b"=").decode()


def test_a_typescript_codec_ticket_is_read_and_its_env_edited_under_the_old_signature() -> None:
    # The shape the official TypeScript SDK's createRequestStateCodec mints: v1.<payload>.<mac>.
    ticket = f"v1.{b64({'p': {'step': 'confirm', 'env': 'staging'}, 'exp': 1796224737})}.RCmlE4PbxU_axY-p7kyaEIKJ"
    assert readable_claims(ticket) == {"p": {"step": "confirm", "env": "staging"}, "exp": 1796224737}
    assert readable_expiry(ticket) == 1796224737.0
    edited = edit_ticket(ticket, TAMPERED)
    head, payload, sig = edited.split(".")
    assert (head, sig) == ("v1", "RCmlE4PbxU_axY-p7kyaEIKJ")
    # The value named like the move's edit_path (work.env -> env) changed; nothing else did.
    assert readable_claims(edited) == {"p": {"step": "confirm", "env": "prod"}, "exp": 1796224737}
    assert payload == b64({"p": {"step": "confirm", "env": "prod"}, "exp": 1796224737})


def test_a_real_jwt_has_its_payload_edited_not_its_header() -> None:
    header = b64({"alg": "HS256", "typ": "JWT"})
    ticket = f"{header}.{b64({'sub': 'bob', 'exp': 1700000000, 'work': {'env': 'staging'}})}.c2lnbmF0dXJl"
    assert readable_expiry(ticket) == 1700000000.0
    edited = edit_ticket(ticket, TAMPERED)
    assert edited.startswith(header + ".") and edited.endswith(".c2lnbmF0dXJl")
    assert readable_claims(edited) == {"sub": "bob", "exp": 1700000000, "work": {"env": "prod"}}


def test_padding_is_kept_as_the_ticket_wrote_it() -> None:
    payload = base64.urlsafe_b64encode(b'{"work":{"env":"staging"},"exp":1}').decode()
    assert payload.endswith("=")
    edited = edit_ticket(f"w1.{payload}.sig", TAMPERED)
    assert edited.split(".")[1].endswith("=")
    assert readable_claims(edited) == {"work": {"env": "prod"}, "exp": 1}


def test_sealed_opaque_or_non_json_tickets_are_unreadable_and_get_a_character_flipped() -> None:
    for ticket in ("s1.AAAABBBBCCCC", "opaque-ticket-without-dots", f"v1.{b64(['not', 'an', 'object'])}.sig",
                   "v1.!!!notbase64!!!.sig", "a.b.c.d.e", f"v1.{b64({'exp': 5})}."):
        assert readable_claims(ticket) is None, ticket
        assert readable_expiry(ticket) is None, ticket
        edited = edit_ticket(ticket, TAMPERED)
        assert edited != ticket and len(edited) == len(ticket), ticket


def test_a_payload_with_no_string_to_edit_is_flipped_instead() -> None:
    ticket = f"v1.{b64({'exp': 5, 'n': 1})}.sig"
    edited = edit_ticket(ticket, dataclasses.replace(TAMPERED, edit_path="work.env"))
    assert edited != ticket and readable_claims(edited) != {"exp": 5, "n": 1}


def test_a_hostile_payload_is_unreadable_and_never_crashes_the_edit() -> None:
    # What a peer under test could mint: lone surrogates, nesting deeper than the parser allows, bad UTF-8.
    lone = base64.urlsafe_b64encode(b'{"work":{"env":"\\ud800"},"exp":1}').rstrip(b"=").decode()
    deep = base64.urlsafe_b64encode(b'{"a":' * 5000 + b"1" + b"}" * 5000).rstrip(b"=").decode()
    binary = base64.urlsafe_b64encode(b'{"env":"\xff"}').rstrip(b"=").decode()
    for payload in (lone, deep, binary):
        ticket = f"v1.{payload}.sig"
        assert readable_claims(ticket) is None
        assert edit_ticket(ticket, TAMPERED) != ticket


def test_non_ascii_values_are_re_encoded_as_ascii_json() -> None:
    ticket = f"v1.{b64({'work': {'env': 'staging', 'who': 'zoë'}})}.sig"
    edited = edit_ticket(ticket, TAMPERED)
    raw = base64.urlsafe_b64decode(edited.split(".")[1] + "==")
    assert raw == b'{"work":{"env":"prod","who":"zo\\u00eb"}}'
