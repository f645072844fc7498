"""A live class driven over HTTP, as a presenter's browser and a learner's phone would: start it, read its tally.

Shared by bench/class_load.py (200 learners, measured) and the tests of a class served by real processes.
"""

from __future__ import annotations

import http.client
import re
import urllib.parse

FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def cookie_of(response: http.client.HTTPResponse, name: str) -> str:
    for header, value in response.getheaders():
        if header.lower() == "set-cookie" and value.startswith(name + "="):
            return value.split(";", 1)[0]
    raise ValueError(f"no {name} cookie in the response")


def form_request(conn: http.client.HTTPConnection, method: str, path: str, body: dict[str, str] | None = None,
                 headers: dict[str, str] | None = None) -> tuple[http.client.HTTPResponse, bytes]:
    data = urllib.parse.urlencode(body).encode() if body is not None else None
    conn.request(method, path, body=data, headers={**(FORM if data is not None else {}), **(headers or {})})
    response = conn.getresponse()
    return response, response.read()


def start_class(port: int) -> tuple[str, str]:
    """Start a class and push its first question; returns (code, the presenter's cookie)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        response, body = form_request(conn, "POST", "/class/start", {})
        if response.status != 201:
            raise RuntimeError(f"start: HTTP {response.status}")
        code = re.search(rb'data-join-code="(\w+)"', body).group(1).decode()  # type: ignore[union-attr]
        cookie = cookie_of(response, "mrtr_host")
        response, _ = form_request(conn, "POST", f"/class/{code}/host/question", {}, {"Cookie": cookie})
        if response.status != 303:
            raise RuntimeError(f"push question: HTTP {response.status}")
        return code, cookie
    finally:
        conn.close()


def host_tally(port: int, code: str, cookie: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        _, body = form_request(conn, "GET", f"/class/{code}/host", headers={"Cookie": cookie})
        # How many answered: the split per option is drawn only after the reveal, the total always.
        found = re.search(rb'data-answered="(\d+)"', body)
        return int(found.group(1)) if found else 0
    finally:
        conn.close()
