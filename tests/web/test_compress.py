"""Pages and assets go out gzipped to browsers that ask; MCP traffic never does."""

from __future__ import annotations

import gzip
import json

import pytest

GZIP = {"Accept-Encoding": "gzip, deflate, br"}
PAGES = ["/", "/lessons/when-the-server-needs-input", "/playground", "/quiz/when-the-server-needs-input",
         "/static/vendor/htmx-2.0.11.min.js", "/static/css/site.css"]


@pytest.mark.parametrize("path", PAGES)
def test_pages_and_assets_are_gzipped_and_decompress_to_the_same_bytes(client, path):
    plain = client.get(path)
    packed = client.get(path, headers=GZIP)
    plain_data, packed_data = plain.data, packed.data
    plain.close()
    packed.close()
    assert packed.status_code == plain.status_code == 200
    assert packed.headers["Content-Encoding"] == "gzip" and "Accept-Encoding" in packed.headers["Vary"]
    assert len(packed_data) < len(plain_data) / 2
    assert int(packed.headers["Content-Length"]) == len(packed_data)
    body = gzip.decompress(packed_data)
    # pages are rendered afresh (new tickets), so compare assets byte for byte and pages by shape
    if path.startswith("/static/"):
        assert body == plain_data
    else:
        assert body.startswith(b"<!doctype html>") or body.lower().startswith(b"<!doctype html>")


def test_clients_that_do_not_ask_get_plain_bytes(client):
    response = client.get("/lessons/when-the-server-needs-input")
    assert "Content-Encoding" not in response.headers and response.data.lower().startswith(b"<!doctype html>")


def test_the_heaviest_page_with_its_assets_stays_under_100_kb(client):
    page = client.get("/lessons/when-the-server-needs-input", headers=GZIP)
    assets = ["/static/vendor/htmx-2.0.11.min.js", "/static/css/site.css", "/static/css/playground.css",
              "/static/js/app.js", "/static/js/playground.js"]
    total = len(page.data)
    for asset in assets:
        response = client.get(asset, headers=GZIP)
        total += len(response.data)
        response.close()
    assert total < 100_000, total


def test_mcp_json_is_never_compressed(client):
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}}
    response = client.post("/mcp", data=json.dumps(message), headers={
        **GZIP, "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "Authorization": "Bearer bob-token", "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"})
    assert response.status_code == 200 and "Content-Encoding" not in response.headers
