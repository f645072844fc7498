"""Page weight: every page reachable from `/`, with the assets it loads, as a browser would fetch them.

A bounded crawl from `/` follows same-origin `<a href>` links. For each page it counts the HTML
and every asset the page references (stylesheets, scripts, images, icons, preloads, and the
`url(...)`/`@import` inside stylesheets), each asset once per page, as a cold browser cache
would. The crawler asks for gzip as every browser does, so "bytes" are what crosses the wire:
response bodies as sent plus status line and headers. Requests count the page itself too.
"""

from __future__ import annotations

import gzip
import http.client
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import urldefrag, urljoin, urlsplit

MAX_PAGES = 80
MAX_ASSETS_PER_PAGE = 100
CSS_URL = re.compile(r"""url\(\s*['"]?([^'")]+)['"]?\s*\)|@import\s+['"]([^'"]+)['"]""")


class _Refs(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.assets: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
        elif tag == "link" and a.get("href"):
            rel = a.get("rel", "").lower().split()
            if {"stylesheet", "icon", "preload", "modulepreload", "manifest", "apple-touch-icon"} & set(rel):
                self.assets.append(a["href"])
        elif tag in ("script", "img", "source", "audio", "video", "iframe") and a.get("src"):
            self.assets.append(a["src"])


@dataclass
class PageWeight:
    path: str
    status: int
    bytes: int
    requests: int
    #: the same responses without compression: what a client that asks for none would receive
    plain_bytes: int = 0
    assets: list[tuple[str, int]] = field(default_factory=list)


class Fetcher:
    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.conn = http.client.HTTPConnection(host, port, timeout=10)

    def get(self, path: str) -> tuple[int, dict[str, str], bytes, int]:
        """GET `path` on a keep-alive connection; returns status, headers, the decoded body and the
        bytes that crossed the wire."""
        for attempt in range(2):
            try:
                self.conn.request("GET", path, headers={"Accept": "text/html,*/*", "Accept-Encoding": "gzip"})
                resp = self.conn.getresponse()
                body = resp.read()
                break
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=10)
                if attempt:
                    raise
        headers = resp.getheaders()
        head = len(f"HTTP/1.1 {resp.status} {resp.reason}\r\n") + sum(len(k) + len(v) + 4 for k, v in headers) + 2
        wire = head + len(body)
        lowered = {k.lower(): v for k, v in headers}
        if lowered.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        return resp.status, lowered, body, wire

    def close(self) -> None:
        self.conn.close()


def _local(base: str, ref: str) -> str | None:
    url = urldefrag(urljoin(base, ref))[0]
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or parts.netloc != urlsplit(base).netloc:
        return None
    return parts.path + (f"?{parts.query}" if parts.query else "")


def weigh(host: str, port: int, start: str = "/") -> list[PageWeight]:
    origin = f"http://{host}:{port}"
    fetcher = Fetcher(host, port)
    seen_pages: set[str] = {start}
    queue = [start]
    out: list[PageWeight] = []
    try:
        while queue and len(out) < MAX_PAGES:
            path = queue.pop(0)
            status, headers, body, wire = fetcher.get(path)
            if "text/html" not in headers.get("content-type", ""):
                continue
            refs = _Refs()
            refs.feed(body.decode("utf-8", "replace"))
            page = PageWeight(path, status, wire, 1, len(body))
            pending = [p for p in (_local(origin + path, r) for r in refs.assets) if p]
            fetched: set[str] = set()
            while pending and len(fetched) < MAX_ASSETS_PER_PAGE:
                asset = pending.pop(0)
                if asset in fetched:
                    continue
                fetched.add(asset)
                a_status, a_headers, a_body, a_wire = fetcher.get(asset)
                page.bytes += a_wire
                page.plain_bytes += len(a_body)
                page.requests += 1
                page.assets.append((asset, a_wire))
                if "text/css" in a_headers.get("content-type", ""):
                    for m in CSS_URL.finditer(a_body.decode("utf-8", "replace")):
                        ref = m.group(1) or m.group(2)
                        if ref and not ref.startswith("data:"):
                            local = _local(origin + asset, ref)
                            if local:
                                pending.append(local)
            out.append(page)
            for link in refs.links:
                local = _local(origin + path, link)
                if local and local not in seen_pages and not local.startswith(("/static/", "/mcp")):
                    seen_pages.add(local)
                    queue.append(local)
    finally:
        fetcher.close()
    return out
