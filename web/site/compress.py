"""Gzip for pages and static assets, so a lesson page and its assets stay well under 100 KB.

Only text a browser renders is compressed (HTML, CSS, JavaScript, SVG); `/mcp` JSON and event
streams pass through untouched, because MCP clients expect them byte-exact and unbuffered.
Static files are compressed once per version (their ETag) and kept in memory.
"""

from __future__ import annotations

import gzip
import threading

from flask import Flask, Response, request

COMPRESSIBLE = frozenset({"text/html", "text/css", "text/javascript", "application/javascript", "image/svg+xml"})
MIN_SIZE = 1024
_cache: dict[tuple[str, str], bytes] = {}
_lock = threading.Lock()


def _accepts_gzip() -> bool:
    return any(part.split(";")[0].strip() == "gzip" for part in request.headers.get("Accept-Encoding", "").split(","))


def init_app(app: Flask) -> None:
    @app.after_request
    def compress(response: Response) -> Response:
        generated = response.is_streamed and not response.direct_passthrough  # e.g. an event stream
        if (response.status_code != 200 or response.mimetype not in COMPRESSIBLE or generated
                or "Content-Encoding" in response.headers or "Content-Range" in response.headers):
            return response
        response.vary.add("Accept-Encoding")
        if not _accepts_gzip():
            return response
        etag, weak = response.get_etag()
        cache_key = (request.path, etag) if etag and not weak else None
        body = _cache.get(cache_key) if cache_key else None
        source = response.response  # a static file's wrapper must be closed once we replace it
        if body is None:
            response.direct_passthrough = False
            raw = response.get_data()
            if len(raw) < MIN_SIZE:
                return response
            body = gzip.compress(raw, compresslevel=6, mtime=0)
            if cache_key:
                with _lock:
                    _cache[cache_key] = body
        if hasattr(source, "close"):
            source.close()
        response.direct_passthrough = False
        response.set_data(body)
        response.headers["Content-Encoding"] = "gzip"
        if etag:
            response.set_etag(f"{etag}-gz", weak=bool(weak))
        return response
