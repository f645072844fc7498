"""The 2026-07-28 Streamable HTTP request headers that mirror a message's body (SEP-2243).

`mirrored_headers` gives `MCP-Protocol-Version` (the body's `_meta` version, else the legacy session's), `Mcp-Method`,
`Mcp-Name` (for tools/call, prompts/get and resources/read) and one `Mcp-Param-{suffix}` for each argument a tool
marks `x-mcp-header`; `header_value` writes a value as the transport wants it (plain when it is safe visible ASCII,
else the `=?base64?...?=` sentinel). A null or absent argument gets no header. Pure functions: no I/O.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping

from mrtr import JSONObject, as_object
from mrtr.protocol import META_VERSION, MODERN_VERSION

NAMED_METHODS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


def header_value(value: str) -> str:
    """A header value as the transport wants it: plain when safe ASCII, else the base64 sentinel."""
    safe = value.isascii() and value.isprintable() and value == value.strip() and not value.startswith("=?")
    return value if safe else "=?base64?" + base64.b64encode(value.encode()).decode("ascii") + "?="


def mirrored_headers(message: JSONObject, param_headers: Mapping[str, Mapping[str, str]],
                     session_version: str | None = None) -> dict[str, str]:
    """The request headers that mirror `message`'s body; `param_headers` maps a tool to its x-mcp-header arguments,
    `session_version` is the version a legacy session agreed (a legacy body carries none)."""
    params = as_object(message.get("params"))
    version = as_object(params.get("_meta")).get(META_VERSION)
    if not isinstance(version, str):
        initialize = params.get("protocolVersion") if message.get("method") == "initialize" else None
        version = initialize if isinstance(initialize, str) else session_version or MODERN_VERSION
    headers = {"MCP-Protocol-Version": version}
    method = message.get("method")
    if isinstance(method, str):
        headers["Mcp-Method"] = header_value(method)
        key = NAMED_METHODS.get(method)
        named = params.get(key) if key else None
        if isinstance(named, str):
            headers["Mcp-Name"] = header_value(named)
        tool = params.get("name")
        if method == "tools/call" and isinstance(tool, str):
            headers.update(param_header_values(as_object(params.get("arguments")), param_headers.get(tool, {})))
    return headers


def param_header_values(arguments: JSONObject, marked: Mapping[str, str]) -> dict[str, str]:
    """`Mcp-Param-*` headers for the marked arguments that are present and not null."""
    headers = {}
    for prop, suffix in marked.items():
        raw = arguments.get(prop)
        if raw is None:
            continue
        if isinstance(raw, bool):
            text = "true" if raw else "false"
        else:
            text = raw if isinstance(raw, str) else json.dumps(raw, separators=(",", ":"))
        headers[f"Mcp-Param-{suffix}"] = header_value(text)
    return headers
