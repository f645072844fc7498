"""The public deployment for real: a TLS terminator (Debian's nginx, a certificate made now) in front of
`scripts/cluster.sh` with `MRTR_TRUSTED_PROXIES` naming it. Every limit counts the visitor behind the proxy, not
the proxy; cookies are `Secure` on https; a forged `X-Forwarded-For` or `X-Forwarded-Proto` gains nothing;
IPv6 visitors count per /64; bodies up to `MRTR_MAX_BODY` pass and one byte more gets nginx's clean 413.

Visitors are loopback addresses (all of 127.0.0.0/8 is this machine), each test its own, so no test spends
another's allowance. The terminator connects to the cluster from 127.0.0.1, the one trusted address.
"""

from __future__ import annotations

import contextlib
import datetime
import http.client
import ipaddress
import json
import os
import re
import resource
import shutil
import socket
import ssl
import subprocess
import time
import urllib.parse
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from loopback.loadgen import deploy_request, flow_headers
from web.classroom.services import GUESS_LIMIT, START_LIMIT
from web.site.deployment import REPLICA_HEADER

from .conftest import ROOT, Cluster, answers, free_port, running_cluster

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
BOB = "bob-secret-cluster"
#: The body limit the cluster runs with in this module (MRTR_MAX_BODY): small, so the test bodies stay small.
MAX_BODY = 128 * 1024


@dataclass
class Chain:
    cluster: Cluster
    tls_port: int
    context: ssl.SSLContext


def _certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1, made for this run only."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "mrtr-test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(hours=2))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


#: The recipe's terminator, run as the docs give it (docs/deploy-tls-proxy.md points at this file).
RECIPE = ROOT / "deploy" / "tls-proxy.conf"


def render_recipe(prefix: Path, port: int, cert: Path, key: Path, upstream: int) -> str:
    text = RECIPE.read_text()
    for marker, value in (("@USER@", ""), ("@PREFIX@", str(prefix)), ("@LISTEN@", f"127.0.0.1:{port}"),
                          ("@SERVER_NAME@", "127.0.0.1"), ("@CERT@", str(cert)), ("@KEY@", str(key)),
                          ("@UPSTREAM@", f"127.0.0.1:{upstream}")):
        text = text.replace(marker, value)
    assert "@" not in re.sub(r"#.*", "", text), "a marker of the recipe was left unreplaced"
    return text


@pytest.fixture(scope="module")
def chain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chain]:
    tmp = tmp_path_factory.mktemp("tls-chain")
    # Live views end after 2 s (not 30): a flood of them must not keep the test waiting.
    port = free_port()
    with running_cluster(tmp, {"MRTR_TRUSTED_PROXIES": "127.0.0.1", "MRTR_MAX_BODY": str(MAX_BODY),
                               "MRTR_CLASS_STREAM_SECONDS": "2",
                               "MRTR_PUBLIC_URL": f"https://127.0.0.1:{port}"}) as cluster:
        prefix = tmp / "terminator"
        prefix.mkdir()
        prefix.chmod(0o711)  # started as root, nginx's workers must reach the temp folders it makes here
        cert, key = _certificate(prefix)
        conf = prefix / "nginx.conf"
        conf.write_text(render_recipe(prefix, port, cert, key, cluster.port))
        # In the foreground (the recipe itself daemonises, as a service manager expects): the process started here
        # is nginx's master, so stopping it stops the terminator and nothing is left running after the tests.
        base = [NGINX, "-p", str(prefix), "-e", str(prefix / "error.log"), "-c", str(conf), "-g", "daemon off;"]
        subprocess.run([*base, "-t", "-q"], check=True, capture_output=True, timeout=30)
        terminator = subprocess.Popen(base, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      start_new_session=True)
        try:
            deadline = time.monotonic() + 20
            while not answers(port):
                assert terminator.poll() is None and time.monotonic() < deadline, \
                    (prefix / "error.log").read_text(errors="replace")[-2000:]
                time.sleep(0.05)
            context = ssl.create_default_context(cafile=str(cert))
            yield Chain(cluster, port, context)
        finally:
            terminator.terminate()
            terminator.wait(timeout=20)
            assert not (prefix / "nginx.pid").exists(), "the terminator's nginx is still running"


@dataclass
class Answer:
    status: int
    headers: http.client.HTTPMessage
    body: bytes


def https(chain: Chain, method: str, path: str, *, source: str, body: bytes | None = None,
          headers: dict[str, str] | None = None) -> Answer:
    """One request through the TLS terminator, from the loopback address `source`."""
    conn = http.client.HTTPSConnection("127.0.0.1", chain.tls_port, timeout=15, context=chain.context,
                                       source_address=(source, 0))
    return _send(conn, method, path, body, headers)


def direct(port: int, method: str, path: str, *, source: str, body: bytes | None = None,
           headers: dict[str, str] | None = None) -> Answer:
    """One plain-http request straight to `port` (the cluster's nginx), from `source`."""
    return _send(http.client.HTTPConnection("127.0.0.1", port, timeout=15, source_address=(source, 0)),
                 method, path, body, headers)


def _send(conn: http.client.HTTPConnection, method: str, path: str, body: bytes | None,
          headers: dict[str, str] | None) -> Answer:
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return Answer(response.status, response.headers, response.read())
    finally:
        conn.close()


FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def wrong_code(send: Any, **kw: Any) -> int:
    return int(send("POST", "/join", body=b"code=ZZZZZZ&nickname=bot", headers={**FORM, **kw.pop("headers", {})},
                    **kw).status)


def site_answers_at_once(chain: Chain) -> None:
    """GET / through the whole chain answers 200 within a second."""
    started = time.monotonic()
    assert https(chain, "GET", "/", source="127.0.0.99").status == 200
    assert time.monotonic() - started < 1.0


def test_two_visitors_behind_the_proxy_have_separate_limits(chain: Chain) -> None:
    """One visitor's wrong codes and classes use up its own allowance only; the other's stays whole."""
    one, two, three = "127.0.0.21", "127.0.0.22", "127.0.0.20"
    statuses = [wrong_code(lambda *a, **k: https(chain, *a, **k), source=one) for _ in range(GUESS_LIMIT + 2)]
    assert statuses[:GUESS_LIMIT] == [404] * GUESS_LIMIT and statuses[-1] == 429, statuses
    assert wrong_code(lambda *a, **k: https(chain, *a, **k), source=two) == 404
    opened = [https(chain, "POST", "/class/start", source=three).status for _ in range(START_LIMIT + 1)]
    assert opened == [201] * START_LIMIT + [429], opened
    assert https(chain, "POST", "/class/start", source=two).status == 201
    site_answers_at_once(chain)


def test_cookies_are_secure_on_https_and_a_forged_proto_over_http_is_not_believed(chain: Chain) -> None:
    started = https(chain, "POST", "/class/start", source="127.0.0.23")
    assert started.status == 201
    cookies = started.headers.get_all("Set-Cookie") or []
    assert cookies and all("Secure" in c for c in cookies), cookies
    # Straight to the cluster's nginx over plain http, claiming https: not from a listed proxy, not believed.
    forged = direct(chain.cluster.port, "POST", "/class/start", source="127.0.0.24",
                    headers={"X-Forwarded-Proto": "https", "X-Forwarded-For": "127.0.0.1"})
    assert forged.status == 201
    assert not any("Secure" in c for c in forged.headers.get_all("Set-Cookie") or [])


def test_a_forged_x_forwarded_for_gains_nothing(chain: Chain) -> None:
    """A visitor who names a new address on every request, through the proxy or straight to nginx, is still
    counted as itself."""
    through = [wrong_code(lambda *a, **k: https(chain, *a, **k), source="127.0.0.25",
                          headers={"X-Forwarded-For": f"198.51.100.{i}"}) for i in range(GUESS_LIMIT + 2)]
    assert through[-1] == 429 and through.count(404) == GUESS_LIMIT, through
    straight = [wrong_code(lambda *a, **k: direct(chain.cluster.port, *a, **k), source="127.0.0.26",
                           headers={"X-Forwarded-For": f"203.0.113.{i}"}) for i in range(GUESS_LIMIT + 2)]
    assert straight[-1] == 429 and straight.count(404) == GUESS_LIMIT, straight


#: Addresses of one /64, written every way nginx may print one, and one of a neighbouring /64.
SAME_64 = ["2001:db8:a:b::1", "2001:db8:a:b:1::", "2001:db8:a:b:0:1:0:2", "2001:db8:a:b:ffff:ffff:ffff:ffff"]
OTHER_64 = "2001:db8:a:c::1"


def test_ipv6_visitors_are_counted_per_64_by_nginx_and_the_app(chain: Chain) -> None:
    """127.0.0.1 is the listed proxy, so a request from it names its visitor; here the test speaks as it."""
    def from_v6(address: str, method: str, path: str, **kw: Any) -> Answer:
        return direct(chain.cluster.port, method, path, source="127.0.0.1",
                      headers={"X-Forwarded-For": address, **kw.pop("headers", {})}, **kw)

    # The app: three classes per visitor, whichever address of the /64 asks.
    opened = [from_v6(SAME_64[i % len(SAME_64)], "POST", "/class/start").status for i in range(START_LIMIT + 1)]
    assert opened == [201] * START_LIMIT + [429], opened
    assert from_v6(OTHER_64, "POST", "/class/start").status == 201
    # nginx: the pages zone (20 a second, a burst of 60) fills for the whole /64 at once.
    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = list(pool.map(lambda i: from_v6(SAME_64[i % len(SAME_64)], "GET", "/nowhere").status,
                                 range(120)))
    assert 429 in statuses, statuses
    assert from_v6("2001:db8:a:d::1", "GET", "/nowhere").status != 429


@pytest.mark.parametrize("size", [9 * 1024, 100 * 1024])
def test_bodies_up_to_the_limit_reach_the_app_through_both_proxies(chain: Chain, size: int) -> None:
    """/mcp and the /join form with a body of `size`: the app answers (not nginx's 500 of an unwritable temp
    folder)."""
    message = deploy_request(1, "staging")
    message["params"]["arguments"] = {"environment": "staging", "padding": "x" * size}
    body = json.dumps(message).encode()
    answer = https(chain, "POST", "/mcp", source="127.0.0.27", body=body, headers=flow_headers(BOB))
    assert answer.headers.get(REPLICA_HEADER), (answer.status, answer.body[:300])
    assert answer.status == 200, answer.body[:300]
    form = urllib.parse.urlencode({"code": "ZZZZZZ", "nickname": "n", "x": "y" * size}).encode()
    joined = https(chain, "POST", "/join", source="127.0.0.28", body=form, headers=FORM)
    assert joined.headers.get(REPLICA_HEADER) and joined.status in (400, 404), joined.status


def test_one_byte_over_the_limit_gets_a_clean_413_from_nginx(chain: Chain) -> None:
    body = b"{" + b" " * MAX_BODY
    answer = https(chain, "POST", "/mcp", source="127.0.0.29", body=body, headers=flow_headers(BOB))
    assert answer.status == 413 and not answer.headers.get(REPLICA_HEADER)
    assert re.search(rb"larger than this site accepts \(%d bytes\)" % MAX_BODY, answer.body), answer.body
    at_limit = https(chain, "POST", "/mcp", source="127.0.0.29", body=b"{" + b" " * (MAX_BODY - 1),
                     headers=flow_headers(BOB))
    assert at_limit.status != 413 and at_limit.headers.get(REPLICA_HEADER)




#: Half-open TLS handshakes from one address: well past the 768 connections Debian's default nginx has room
#: for (the attacker's 1,700 left 60 of 65 visitors unanswered), within this process's file limit.
HALF_OPEN = min(3000, resource.getrlimit(resource.RLIMIT_NOFILE)[0] - 300)
#: The start of a TLS record (a handshake of 512 bytes) that never comes whole.
HALF_HELLO = b"\x16\x03\x01\x02\x00\x01"


@contextlib.contextmanager
def half_open_handshakes(port: int, count: int, source: str) -> Iterator[int]:
    """`count` connections from `source` that start a TLS handshake and never finish it, held while the block
    runs; yields how many were opened (a connection the server no longer takes is not waited for long)."""
    sockets: list[socket.socket] = []
    deadline = time.monotonic() + 20
    try:
        while len(sockets) < count and time.monotonic() < deadline:
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=0.5, source_address=(source, 0))
                sock.sendall(HALF_HELLO)
            except OSError:
                continue
            sockets.append(sock)
        yield len(sockets)
    finally:
        for sock in sockets:
            sock.close()


def test_the_recipe_holds_a_flood_of_half_open_handshakes_from_one_address(chain: Chain) -> None:
    """A visitor at another address is answered at once while one address holds thousands of handshakes open."""
    assert HALF_OPEN > 1024, "this process may not open enough files for the test to mean anything"
    with half_open_handshakes(chain.tls_port, HALF_OPEN, "127.0.0.31") as opened:
        assert opened > 1024, opened
        for _ in range(10):
            started = time.monotonic()
            assert https(chain, "GET", "/", source="127.0.0.32").status == 200
            assert time.monotonic() - started < 2.0


def test_https_answers_carry_hsts_and_no_proxy_version(chain: Chain) -> None:
    answer = https(chain, "GET", "/", source="127.0.0.33")
    assert answer.status == 200
    assert re.fullmatch(r"max-age=\d{7,}.*", answer.headers.get("Strict-Transport-Security", "")), answer.headers
    assert answer.headers.get("Server") == "nginx", answer.headers.get("Server")


def test_absolute_addresses_name_the_public_url_whatever_host_a_visitor_sends(chain: Chain) -> None:
    """The embed snippet and oEmbed, through the whole chain with a forged Host and X-Forwarded-Host."""
    public = f"https://127.0.0.1:{chain.tls_port}"
    forged = {"Host": "evil.example", "X-Forwarded-Host": "evil.example"}
    quiz = "/quiz/when-the-server-needs-input"
    oembed = "/oembed?" + urllib.parse.urlencode({"url": public + quiz, "format": "json"})
    for path in (quiz, "/check", oembed):
        page = https(chain, "GET", path, source="127.0.0.34", headers=forged)
        assert page.status == 200 and b"evil.example" not in page.body, (path, page.status, page.body[:300])
        assert public.encode() in page.body.replace(b"\\/", b"/"), path


@pytest.mark.parametrize("value", ["1", "proxy.example", "10.0.0.300", "10.0.0.5,not-an-address"])
def test_cluster_sh_refuses_a_proxy_list_it_cannot_read_before_starting_anything(value: str) -> None:
    """A typo must not trust nobody (every limit site-wide again) or everybody (forged addresses believed)."""
    run = subprocess.run(["bash", str(ROOT / "scripts" / "cluster.sh")], cwd=ROOT, capture_output=True, text=True,
                         timeout=60, env={**os.environ, "MRTR_TRUSTED_PROXIES": value, "PORT": str(free_port())})
    assert run.returncode == 2 and "MRTR_TRUSTED_PROXIES lists the proxies" in run.stderr, run.stderr[-500:]
