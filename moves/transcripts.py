"""The "run it raw" lab: four scenes played by the real client against a real server, every line kept.

`run_lab` plays each scene on a fresh transport (in process for the lesson page, a subprocess
for `python -m mrtr lab`); every line shown is produced by a real exchange at the moment it is
asked for, so the lesson can never show what the server does not do. Never imports Flask.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass

from mrtr import (
    JSON,
    Client,
    ClientError,
    FakeClock,
    InMemoryTransport,
    JSONObject,
    KeyRing,
    MemoryStore,
    Server,
    Transport,
    as_object,
)
from mrtr.client import Line
from mrtr.messages import as_list, error_of
from mrtr.protocol import META_CAPABILITIES, META_CLIENT_INFO, META_VERSION
from mrtr_toolsets.lesson import lesson_catalog

from .story import FIGURE_EPOCH

__all__ = ["Line", "Scene", "lab_scenes", "run_lab", "tamper_one_char"]

ACCEPT: JSONObject = {"confirm": {"action": "accept", "content": {"confirm": True}}}


@dataclass
class Scene:
    key: str
    title: str
    lines: list[Line]
    ok: bool
    expected: str


def tamper_one_char(token: str) -> str:
    """Change one character in the middle of a ticket to another valid base64url character."""
    middle = len(token) // 2
    while token[middle] == ".":
        middle += 1
    replacement = "A" if token[middle] != "A" else "B"
    return token[:middle] + replacement + token[middle + 1:]


def _first_text(result: JSONObject) -> JSON:
    """The text of a tool result's first content block, if it has one."""
    return as_object(next(iter(as_list(result.get("content"))), None)).get("text")


def _modern(client: Client) -> bool:
    client.connect()
    result = client.call_tool("deploy", {"env": "staging"})
    return client.era == "modern" and _first_text(result) == "deployed to staging"


def _legacy(client: Client) -> bool:
    client.connect(prefer="legacy")
    result = client.call_tool("deploy", {"env": "staging"})
    asked = any(line.message.get("method") == "elicitation/create" for line in client.transcript)
    return asked and _first_text(result) == "deployed to staging"


def _version(client: Client) -> bool:
    meta: JSONObject = {META_VERSION: "1900-01-01", META_CAPABILITIES: {}, META_CLIENT_INFO: dict(client.client_info)}
    error = error_of(client.request("tools/list", {"_meta": meta}))
    supported = as_list(as_object(error.get("data")).get("supported")) if error else []
    return error is not None and error["code"] == -32022 and "2026-07-28" in supported


def _one_char_changed(client: Client) -> bool:
    params: JSONObject = {"name": "deploy", "arguments": {"env": "staging"}, "_meta": client.meta()}
    first = client.request("tools/call", params)
    ticket = as_object(first.get("result")).get("requestState")
    if not isinstance(ticket, str) or not ticket:
        return False
    retry: JSONObject = {**params, "inputResponses": copy.deepcopy(ACCEPT), "requestState": tamper_one_char(ticket)}
    error = error_of(client.request("tools/call", retry, note="one character of the ticket changed"))
    return error is not None and error["code"] == -32602


SCENES: tuple[tuple[str, str, str, Callable[[Client], bool]], ...] = (
    ("modern", "Modern (2026-07-28): probe, call, input_required, retry, complete",
     "deployed to staging", _modern),
    ("legacy", "Legacy (2025-11-25): initialize, call, the server asks, the answer, the result",
     "deployed to staging, asked through elicitation/create", _legacy),
    ("version", "An unsupported protocol version (1900-01-01)", "-32022 listing the supported versions", _version),
    ("one-char-changed", "A ticket with one character changed", "-32602 Invalid or expired requestState",
     _one_char_changed),
)


def run_lab(transport_for: Callable[[str], Transport], *, close: Callable[[Transport], None] | None = None
            ) -> list[Scene]:
    """Play the four lab scenes, each on a fresh transport from `transport_for(scene_key)`."""
    scenes = []
    for key, title, expected, body in SCENES:
        transport = transport_for(key)
        client = Client(transport, timeout=10.0)
        try:
            ok = body(client)
        except ClientError:
            ok = False
        finally:
            if close:
                close(transport)
        scenes.append(Scene(key, title, client.transcript, ok, expected))
    return scenes


def lab_scenes(ring: KeyRing | None = None) -> list[Scene]:
    """The lab played in process against a real server (fixed demo key unless a ring is given)."""
    ring = ring or KeyRing(["mrtr-lab-demo-key-not-a-secret-0000000000"])
    server = Server(ring=ring, store=MemoryStore(), clock=FakeClock(FIGURE_EPOCH), catalog=lesson_catalog(),
                    operator_log=False)
    return run_lab(lambda key: InMemoryTransport(server.connect("bob")))
