"""mrtr_client: the transports `mrtr.Client` talks through, outside the sans-IO core.

`HttpTransport` (Streamable HTTP: JSON or SSE answers, the 2026-07-28 headers mirrored from the body, the
`x-mcp-header` parameter headers learnt from tools/list) and `StdioTransport` (a server command spawned as a child
process) move messages; `mrtr.Client` decides what they are. `connect` picks one from what a person typed.
This package opens sockets and processes, so it stands above `mrtr` and below the checker (`moves`) and the
`mrtr` command, which both use it; it never imports either. `HttpEndpoint` is the one HTTP client under both:
one POST on a connection of its own, to a pinned address if asked, under a time and a byte budget, redirects
never followed, its status, headers and body handed back raw (`HttpAnswer`); `HttpTransport` sends through it, and so
does the checker's HTTP target, which reports what came back as evidence.

    from mrtr import Client
    from mrtr_client import HttpTransport

    client = Client(HttpTransport("http://127.0.0.1:5000/mcp", token="..."))
    tools = client.list_tools()
    result = client.call_tool("deploy", {"env": "staging"})
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .mcp_headers import header_value, mirrored_headers
from .stdio_transport import StderrTail, StdioTransport

if TYPE_CHECKING:
    from .http_transport import HttpTransport
    from .http_wire import NETWORK_ERRORS, HttpAnswer, HttpEndpoint, Posted, TooLarge, failure

# The HTTP names load http.client when first used, not on import: the stdio side (`python -m mrtr serve`, the lab,
# the core's users) loads no HTTP stack (tests/mrtr/test_stdio.py checks it).
_HTTP = {"HttpTransport": "http_transport", **dict.fromkeys(
    ("NETWORK_ERRORS", "HttpAnswer", "HttpEndpoint", "Posted", "TooLarge", "failure"), "http_wire")}


def __getattr__(name: str) -> object:
    module = _HTTP.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)


__all__ = ["NETWORK_ERRORS", "HttpAnswer", "HttpEndpoint", "HttpTransport", "Posted", "StderrTail", "StdioTransport",
           "TooLarge", "failure", "header_value", "mirrored_headers"]
