"""mrtr_client: the transports `mrtr.Client` talks through, outside the sans-IO core.

`HttpTransport` (Streamable HTTP: JSON or SSE answers, the 2026-07-28 headers mirrored from the body, the
`x-mcp-header` parameter headers learnt from tools/list) and `StdioTransport` (a server command spawned as a child
process) move messages; `mrtr.Client` decides what they are. `connect` picks one from what a person typed.
This package opens sockets and processes, so it stands above `mrtr` and below the checker (`moves`) and the
`mrtr` command, which both use it; it never imports either.

    from mrtr import Client
    from mrtr_client import HttpTransport

    client = Client(HttpTransport("http://127.0.0.1:5000/mcp", token="..."))
    tools = client.list_tools()
    result = client.call_tool("deploy", {"env": "staging"})
"""

from __future__ import annotations

from .http_transport import HttpTransport
from .mcp_headers import header_value, mirrored_headers
from .stdio_transport import StdioTransport

__all__ = ["HttpTransport", "StdioTransport", "header_value", "mirrored_headers"]
