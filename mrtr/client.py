"""A small dual-era MCP client that resolves input_required, for the lab, the demos and tests.

It probes `server/discover` and falls back to `initialize`. In the modern era it answers each
`input_required` through callbacks and retries with a new id, the answers in `inputResponses`
and the ticket echoed byte for byte (and none sent when none was given), for a bounded number of
rounds. In the legacy era it answers the server's own requests as they arrive. Every line sent
and received is kept in `transcript`. The client does no I/O itself: a transport moves messages.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ._connection import Connection
from .messages import JSONObject, as_list, as_object, error_json, error_of
from .protocol import LEGACY_VERSION, META_CAPABILITIES, META_CLIENT_INFO, META_VERSION, MODERN_VERSION

#: Answers one embedded question (an elicitation/create request) with the user's reply.
Answerer = Callable[[JSONObject], JSONObject]


class Transport(Protocol):
    def send(self, message: JSONObject) -> None: ...

    def receive(self, timeout: float) -> JSONObject | None: ...


class ClientError(Exception):
    """The server answered with an error, or the exchange could not finish."""

    def __init__(self, message: str, error: JSONObject | None = None) -> None:
        super().__init__(message)
        self.error = error or {}


@dataclass(frozen=True)
class Line:
    direction: str  # "-->" sent, "<--" received
    message: JSONObject
    note: str = ""

    @property
    def text(self) -> str:
        return json.dumps(self.message, separators=(",", ":"), ensure_ascii=False)


class InMemoryTransport:
    """Talks to a `Connection` in this process, through JSON text as a real transport would."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self._inbox: list[JSONObject] = []

    def send(self, message: JSONObject) -> None:
        self._inbox.extend(self.connection.receive_text(json.dumps(message)).messages)

    def receive(self, timeout: float) -> JSONObject | None:
        return self._inbox.pop(0) if self._inbox else None


def accept_all(request: JSONObject) -> JSONObject:
    """An answerer that says yes to every form field it knows how to fill."""
    schema = as_object(as_object(request.get("params")).get("requestedSchema"))
    content: JSONObject = {k: True if as_object(p).get("type") == "boolean" else "yes"
                           for k, p in as_object(schema.get("properties")).items()}
    return {"action": "accept", "content": content}


class Client:
    def __init__(
        self,
        transport: Transport,
        *,
        on_elicit: Answerer = accept_all,
        capabilities: JSONObject | None = None,
        client_info: dict[str, str] | None = None,
        max_rounds: int = 10,
        timeout: float = 10.0,
    ) -> None:
        self.transport = transport
        self.on_elicit = on_elicit
        self.capabilities = capabilities if capabilities is not None else {"elicitation": {"form": {}}}
        self.client_info = client_info or {"name": "mrtr-lab-client", "version": "1.0"}
        self.max_rounds = max_rounds
        self.timeout = timeout
        self.era: str | None = None
        self.transcript: list[Line] = []
        self._next_id = 1

    # -- plumbing --------------------------------------------------------------------------------

    def _send(self, message: JSONObject, note: str = "") -> None:
        self.transcript.append(Line("-->", message, note))
        self.transport.send(message)

    def _new_id(self) -> int:
        request_id, self._next_id = self._next_id, self._next_id + 1
        return request_id

    def meta(self, version: str = MODERN_VERSION) -> JSONObject:
        return {META_VERSION: version, META_CAPABILITIES: self.capabilities, META_CLIENT_INFO: dict(self.client_info)}

    def request(self, method: str, params: JSONObject | None = None, *, note: str = "") -> JSONObject:
        """Send one request and return its response, answering server requests on the way."""
        request_id = self._new_id()
        message: JSONObject = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self._send(message, note)
        while True:
            incoming = self.transport.receive(self.timeout)
            if incoming is None:
                raise ClientError(f"no response to {method} (id {request_id})")
            self.transcript.append(Line("<--", incoming))
            if "method" in incoming and "id" in incoming:
                self._serve(incoming)
            elif incoming.get("id") == request_id:
                return incoming

    def _serve(self, request: JSONObject) -> None:
        if request.get("method") == "elicitation/create":
            reply: JSONObject = {"jsonrpc": "2.0", "id": request.get("id"), "result": self.on_elicit(request)}
        else:
            reply = {"jsonrpc": "2.0", "id": request.get("id"),
                     "error": {"code": -32601, "message": f"this client does not answer {request.get('method')}"}}
        self._send(reply, "the client answers the server's question")

    def notify(self, method: str, params: JSONObject | None = None) -> None:
        message: JSONObject = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)

    # -- lifecycle -------------------------------------------------------------------------------

    def connect(self, *, prefer: str = "auto") -> str:
        """Pick the era: probe `server/discover`, else fall back to `initialize`."""
        if prefer != "legacy":
            try:
                response = self.request("server/discover", {"_meta": self.meta()}, note="probe for a modern server")
            except ClientError:
                response = {}
            if MODERN_VERSION in as_list(as_object(response.get("result")).get("supportedVersions")):
                self.era = "modern"
                return self.era
        response = self.request("initialize", {"protocolVersion": LEGACY_VERSION, "capabilities": self.capabilities,
                                               "clientInfo": dict(self.client_info)})
        if "result" not in response:
            raise ClientError("initialize failed", as_object(response.get("error")))
        self.notify("notifications/initialized")
        self.era = "legacy"
        return self.era

    def call_tool(self, name: str, arguments: JSONObject) -> JSONObject:
        """Call a tool to completion and return its final result."""
        if self.era is None:
            self.connect()
        if self.era == "legacy":
            response = self.request("tools/call", {"name": name, "arguments": arguments})
            return self._result(response)
        params: JSONObject = {"name": name, "arguments": arguments, "_meta": self.meta()}
        for _round in range(self.max_rounds):
            result = self._result(self.request("tools/call", params))
            if result.get("resultType") != "input_required":
                return result
            answers: JSONObject = {key: self._answer(as_object(req))
                                   for key, req in as_object(result.get("inputRequests")).items()}
            params = {"name": name, "arguments": arguments, "_meta": self.meta(), "inputResponses": answers}
            if "requestState" in result:
                params["requestState"] = result["requestState"]  # echoed exactly, never parsed
        raise ClientError(f"gave up after {self.max_rounds} rounds of input_required")

    def _answer(self, request: JSONObject) -> JSONObject:
        if request.get("method") == "elicitation/create":
            return self.on_elicit(request)
        raise ClientError(f"this client cannot answer {request.get('method')}")

    @staticmethod
    def _result(response: JSONObject) -> JSONObject:
        error = error_of(response)
        if error is not None:
            raise ClientError(error["message"], error_json(error))
        if "error" in response or not isinstance(response.get("result"), dict):
            raise ClientError("the response has neither a result object nor a well-formed error")
        return as_object(response.get("result"))
