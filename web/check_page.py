"""/check: the server checker in the browser. A form (URL, two tokens, tool, arguments) starts a
background run of `moves.check.run_check`; the run's page shows live progress (htmx polls it every
second; without JavaScript the page refreshes itself) and then the report, drawn like the
playground's check matrix, each failing row linking to the lesson section on that defence, and each
move's messages drawn as the lesson's sequence diagram (`diagram_steps` -> `web.widgets.sequence_model`).

Safety, owned here:
- Only loopback targets, unless `MRTR_CHECK_HOSTS` lists more (comma-separated host names, IP
  addresses or CIDR networks). The host is resolved and every address it resolves to is vetted;
  the run then connects to exactly the vetted address, so DNS cannot swap it afterwards, and
  redirects are never followed. Link-local, multicast and unspecified addresses are refused even
  for a listed name.
- `MRTR_PUBLIC=1` (a public deployment) turns even loopback off unless `MRTR_CHECK_HOSTS` lists it.
- Runs are rate-limited per visitor (`MRTR_CHECK_RUNS`, default 5 per `MRTR_CHECK_WINDOW` = 600 s,
  and one at a time), with at most `MAX_ACTIVE` runs at once for everyone.
- A run goes on in a thread of the process that started it; its progress is saved in the run store
  (`mrtr_stores.check_runs`: SQLite in `MRTR_CHECK_STATE_DIR`, default `<MRTR_STATE_DIR>/check-runs`, or
  Redis), so every worker and replica can draw it. Visitors are kept there as digests, never addresses;
  tokens are never written.
- A late move waits at most `MRTR_CHECK_MAX_WAIT` seconds (default 300) for a ticket to expire.
  (`MRTR_CHECK_RESOLVER`, a `(host, port) -> [addresses]` callable, is a test seam only.)
- Tokens go into the run's target and nowhere else: never logged, never rendered, never kept
  after the run ends. Token inputs are password fields that are never refilled.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import logging
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from flask import Blueprint, Flask, Response, abort, current_app, redirect, request, url_for
from werkzeug.wrappers import Response as BaseResponse

from moves.check import CheckError, CheckOptions, Events, run_check
from moves.targets.http import HttpTarget
from moves.targets.remote import DEFAULT_TIMEOUT, Timing
from mrtr_settings.stores import open_check_runs
from mrtr_stores.check_runs import Run, RunRefused, RunStore, RunStoreDown
from web import htmx
from web.content import get_content
from web.services import SETTINGS_KEY, get_services, get_settings
from web.widgets import sequence_model

bp = Blueprint("check", __name__)
log = logging.getLogger("mrtr.check")

PAGE = "check/show.html"
RUN_PAGE = "check/run.html"
RUN_FRAGMENT = "check/_run.html"
FORM_FRAGMENT = "check/_form.html"
RUNS_KEY = "mrtr.check_runs"
MAX_FIELD = 4096
#: How often the late wait's progress is saved (seconds).
WAIT_SAVE_EVERY = 0.5
#: The lesson section that explains each defence a failing row is about.
SECTIONS: dict[str, str] = {
    "signature": "checks-and-clock",
    "principal": "checks-and-clock",
    "expiry": "checks-and-clock",
    "request": "checks-and-clock",
    "answer": "spec-rules",
    "single-use": "spec-rules",
    "capability": "spec-rules",
    "missing-answer": "spec-rules",
    "result-type": "round-trip",
    "same-error": "checks-and-clock",
}


class CheckInputError(ValueError):
    """The form cannot be run as sent (bad URL, a host not allowed, ...): HTTP 400 with this message."""


# -- configuration -----------------------------------------------------------------------------------


def _loopback(value: str | None) -> bool:
    name = (value or "").strip().strip("[]").lower().rstrip(".")
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def is_public() -> bool:
    """Whether this deployment is public, so that even loopback targets would be SSRF.

    `MRTR_PUBLIC=1` says so. Without it, the page still counts as public unless the visitor is this very
    machine: a request from another address, or one that names a host other than loopback (the app behind
    a reverse proxy, reached by its public name), gets no loopback targets, whatever an operator forgot to set.
    """
    if get_settings().public:
        return True
    try:
        host = urlsplit(f"//{request.host}").hostname
    except ValueError:
        return True
    return not (_loopback(host) and _loopback(request.remote_addr))


#: Cloud metadata services: never checked, whatever MRTR_CHECK_HOSTS says (AWS, GCP and Azure on 169.254.169.254,
#: ECS task metadata, Alibaba, AWS over IPv6).
METADATA_ADDRESSES = frozenset(ipaddress.ip_address(a) for a in (
    "169.254.169.254", "169.254.170.2", "169.254.170.23", "100.100.100.200", "fd00:ec2::254"))
#: Ports a listed host may be checked on unless MRTR_CHECK_PORTS lists others.
DEFAULT_PORTS = frozenset({80, 443})

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def _internal(address: Address) -> bool:
    """Addresses a listed *name* may not lead to unless the address itself is listed: loopback, private,
    link-local, shared (CGNAT), multicast, reserved and unspecified ones."""
    shared = isinstance(address, ipaddress.IPv4Address) and address in ipaddress.ip_network("100.64.0.0/10")
    return (address.is_loopback or address.is_private or address.is_link_local or address.is_multicast
            or address.is_reserved or address.is_unspecified or shared)


@dataclass(frozen=True)
class HostRules:
    """Which servers /check may connect to (MRTR_CHECK_HOSTS, MRTR_CHECK_PORTS, MRTR_PUBLIC).

    Loopback, on any port, only for a visitor on this very machine of a deployment that is not public. Else
    a target must be listed: an address or network (CIDR) admits its addresses, a name admits what it
    resolves to unless that is an internal address (loopback, private, link-local: DNS can point anywhere, so
    such an address must be listed itself), and only on a listed port. Metadata addresses are never admitted.
    """

    names: frozenset[str]
    networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]
    loopback: bool
    ports: frozenset[int] = DEFAULT_PORTS

    @classmethod
    def from_config(cls, hosts: str, public: bool, ports: str = "") -> HostRules:
        names: set[str] = set()
        networks = []
        for entry in (e.strip().lower() for e in str(hosts or "").split(",")):
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
            except ValueError:
                names.add(entry.rstrip("."))
        allowed = frozenset(int(p) for p in str(ports or "").replace(" ", "").split(",") if p.isdigit()
                            and 0 < int(p) < 65536) or DEFAULT_PORTS
        return cls(frozenset(names), tuple(networks), loopback=not public, ports=allowed)

    @property
    def any_allowed(self) -> bool:
        return self.loopback or bool(self.names) or bool(self.networks)

    def listed(self, address: Address) -> bool:
        return any(address.version == net.version and address in net for net in self.networks)

    def allows(self, host: str, address: Address, port: int | None = None) -> bool:
        if address in METADATA_ADDRESSES:
            return False
        if address.is_loopback and self.loopback:
            return True  # this machine's own servers, on any port, for a visitor at this machine
        if port is not None and port not in self.ports:
            return False
        if self.listed(address):
            return True
        return host in self.names and not _internal(address)


def rules() -> HostRules:
    settings = get_settings()
    return HostRules.from_config(settings.check_hosts, is_public(), settings.check_ports)


Resolver = Callable[[str, int], list[str]]


def _resolve(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def vet_url(url: str, host_rules: HostRules, resolve: Resolver = _resolve) -> tuple[str, str]:
    """The URL to check and the one address to connect to; raises CheckInputError when not allowed."""
    url = url.strip()
    if not url:
        raise CheckInputError("Give the URL of the server's MCP endpoint, for example http://127.0.0.1:5000/mcp.")
    if len(url) > 2048:
        raise CheckInputError("That URL is too long.")
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise CheckInputError("That URL cannot be read (check the port).") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise CheckInputError("The URL must start with http:// or https:// and name a host.")
    if parts.username or parts.password:
        raise CheckInputError("Put tokens in the token fields, never in the URL.")
    if not host_rules.any_allowed:
        raise CheckInputError("This deployment checks no servers: its operator has not listed any in "
                              "MRTR_CHECK_HOSTS.")
    host = parts.hostname.lower().rstrip(".")
    try:
        addresses = [ipaddress.ip_address(a.split("%")[0]) for a in resolve(host, port)]
    except (OSError, UnicodeError, ValueError):
        raise CheckInputError(f"The host {host!r} could not be resolved.") from None
    if not addresses:
        raise CheckInputError(f"The host {host!r} could not be resolved.")
    addresses = [a.ipv4_mapped if isinstance(a, ipaddress.IPv6Address) and a.ipv4_mapped else a for a in addresses]
    refused = [a for a in addresses if not host_rules.allows(host, a, port)]
    if refused:
        where = ("servers on this machine (loopback addresses)" if host_rules.loopback
                 else "the hosts its operator listed")
        if all(host_rules.allows(host, a) for a in refused):
            ports = ", ".join(str(p) for p in sorted(host_rules.ports))
            raise CheckInputError(f"This lab only checks {where} on port {ports}; port {port} is not allowed.")
        raise CheckInputError(f"This lab only checks {where}; {host!r} resolves to {refused[0]}, which is not allowed.")
    return parts.geturl(), str(addresses[0])


def runs() -> RunStore:
    store: RunStore = current_app.extensions[RUNS_KEY]
    return store


#: This process's runs going on, by id: their threads, for tests and shutdown.
THREADS: dict[str, threading.Thread] = {}


@bp.record_once
def _setup(state: Any) -> None:
    app: Flask = state.app
    app.extensions[RUNS_KEY] = open_check_runs(app.extensions[SETTINGS_KEY])


# -- the form ----------------------------------------------------------------------------------------


@dataclass
class Form:
    url: str = ""
    tool: str = ""
    args: str = ""
    skip_late: bool = False
    allow_replay: bool = False
    late_after: str = ""
    error: str = ""


def _field(name: str) -> str:
    value = request.form.get(name, "")
    if len(value) > MAX_FIELD:
        raise CheckInputError(f"The {name.replace('_', ' ')} field is too long.")
    return value


def _json_object(text: str, label: str) -> dict[str, Any] | None:
    if not text.strip():
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        raise CheckInputError(f"{label} must be JSON, for example {{\"env\": \"staging\"}}.") from None
    if not isinstance(value, dict):
        raise CheckInputError(f"{label} must be a JSON object, for example {{\"env\": \"staging\"}}.")
    return value


#: What the late move's wait for unreadable expiries is called on this page (the CLI's --late-after).
LATE_AFTER_FIELD = "“Late move after”"


def _late_after(text: str, max_wait: float) -> float | None:
    """The form's late-move wait in seconds (None when empty), within what the page will wait."""
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= max_wait:
        raise CheckInputError(f"Late move after must be a number of seconds between 0 and {max_wait:g}.")
    return value


def _same_site() -> None:
    """A check is started from this app's own form only: another site must not aim a visitor's browser at it."""
    origin = request.headers.get("Origin")
    # Browsers say "null" under this app's no-referrer policy; Sec-Fetch-Site tells cross-site posts apart.
    foreign = origin not in (None, "null") and origin.rstrip("/").lower() != request.host_url.rstrip("/").lower()
    if foreign or request.headers.get("Sec-Fetch-Site", "same-origin") not in ("same-origin", "none"):
        raise CheckInputError("Checks start from this page's own form, not from another site.")


def _visitor() -> str:
    """Who is asking, as a digest: the run files never hold an address."""
    return hashlib.sha256((request.remote_addr or "unknown").encode()).hexdigest()[:16]


#: A probe's own place in the lesson, inside its section, when it has one.
PROBE_ANCHORS: dict[str, str] = {"same-error": "checks-and-clock--what-the-client-is-told"}


def _lesson_url(section: str | None, anchor: str | None = None) -> str | None:
    if not section:
        return None
    lesson = get_content().lessons[0]
    if lesson.section(section) is None:
        return None
    return url_for("lessons.lesson_page", slug=lesson.slug) + "#" + (anchor or section)


def _move_url(move: str) -> str | None:
    """Where the lesson plays this very move: its row on the checks' timeline (one per catalogue move)."""
    if not any(m.slug == move for m in get_content().moves):
        return None
    return _lesson_url("checks-and-clock", f"timeline-checks-and-clock-{move}")


def _probe_verdict(probe: dict[str, Any]) -> str:
    """A probe's verdict; `same-error` with no refusal at all compared nothing, so it shows nothing either way."""
    if probe["probe"] == "same-error" and probe["ok"] and str(probe["detail"]).startswith("no ticket was refused"):
        return "not-run"
    return "pass" if probe["ok"] else "fail"


#: Runs per window for a visitor on this very machine (local mode): in effect, no cap.
LOCAL_RUNS = 1_000_000


def _page(form: Form, status: int = 200) -> Response:
    public = is_public()
    own_mcp = request.host_url.rstrip("/") + "/mcp"
    return htmx.render(PAGE, FORM_FRAGMENT, status=status, form=form, enabled=rules().any_allowed,
                       public=public, own_mcp=own_mcp, own_tokens=get_services().public_mcp_tokens(),
                       run_limit=None if not public else (get_settings().check_runs, get_settings().check_window))


@bp.get("/check")
def check_page() -> Response:
    return _page(Form())


@bp.post("/check")
def start_check() -> BaseResponse | Response:
    form = Form()
    try:
        _same_site()
        form = Form(url=_field("url")[:2048], tool=_field("tool").strip(), args=_field("args"),
                    skip_late=request.form.get("skip_late") == "1",
                    allow_replay=request.form.get("allow_replay") == "1", late_after=_field("late_after").strip())
        owner, other = _field("owner_token").strip(), _field("other_token").strip()
        if not owner or not other:
            raise CheckInputError("Give both tokens: the ticket's owner and a second user (for the stolen move).")
        if owner == other:
            raise CheckInputError("The two tokens must belong to two different users.")
        arguments = _json_object(form.args, "Arguments")
        late_after = _late_after(form.late_after, get_settings().check_max_wait)
        url, address = vet_url(form.url, rules(), current_app.config.get("MRTR_CHECK_RESOLVER") or _resolve)
        limit, window = get_settings().check_runs, get_settings().check_window
        if not is_public():
            # local mode: the visitor is this very machine, checking servers on it; a cap protects nobody
            # (one run at a time still holds)
            limit = max(limit, LOCAL_RUNS)
        run = runs().start(_visitor(), url, limit, window)
    except (CheckInputError, RunRefused) as exc:
        form.error = str(exc)
        return _page(form, 400)
    options = CheckOptions(tool=form.tool or None, arguments=arguments, allow_replay=form.allow_replay,
                           skip_late=form.skip_late)
    moves = get_content().moves  # the moves this app teaches (MRTR_MOVES_FILE included)
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    store = runs()
    thread = threading.Thread(target=_execute, args=(app, store, run, url, address, (owner, other), options, moves,
                                                     late_after),
                              name=f"check-{run.id[:6]}", daemon=True)
    THREADS[run.id] = thread
    thread.start()
    log.info("check run %s started for %s", run.id[:6], url)
    target = url_for("check.run_page", run_id=run.id)
    if htmx.wants_fragment():
        return htmx.render(RUN_PAGE, RUN_FRAGMENT, push_url=target, run=run, view=_view(run))
    return redirect(target, 303)


def _execute(app: Flask, store: RunStore, run: Run, url: str, address: str, tokens: tuple[str, str],
             options: Any, moves: Any, late_after: float | None = None) -> None:
    """The background run. Tokens live in the target only, and go with it when this returns (the redaction
    of the kept messages holds them as long as the target does)."""
    lock = threading.Lock()
    secret_values = tuple(t for t in tokens if t)
    last_wait = [0.0]

    def save() -> None:
        try:
            store.save(run)
        except RunStoreDown as exc:
            log.error("check run %s: could not save progress: %s", run.id[:6], exc)

    def phase(text: str) -> None:
        with lock:
            run.phase, run.waiting = text[:1].upper() + text[1:], False
            save()

    def move_done(row: Any, index: int, total: int) -> None:
        exchange = redact(row.exchange, secret_values)
        with lock:
            run.rows.append({"move": row.move, "title": row.title, "expected": row.expected,
                             "observed": row.observed, "verdict": row.verdict,
                             "detail": redact(row.detail, secret_values),
                             "stops_at": row.stops_at, "exchange": exchange})
            run.total = total
            save()

    def probe_done(probe: Any) -> None:
        with lock:
            run.probes.append({"probe": probe.probe, "title": probe.title, "ok": probe.ok,
                               "detail": redact(probe.detail, secret_values)})
            save()

    def wait(waited: float, total: float) -> None:
        with lock:
            run.waiting, run.waited, run.wait_total = True, waited, total
            if waited >= total or store.clock() - last_wait[0] >= WAIT_SAVE_EVERY:
                last_wait[0] = store.clock()
                save()

    max_wait = app.extensions[SETTINGS_KEY].check_max_wait
    # MRTR_CHECK_TIMEOUT bounds each request here as it does for the CLI; a time-out stops the run (CheckStopped).
    timeout = app.extensions[SETTINGS_KEY].check_timeout or DEFAULT_TIMEOUT
    target = None
    try:
        target = HttpTarget(url, [("owner", tokens[0]), ("other", tokens[1])], connect_to=address, timeout=timeout,
                            timing=Timing(late_after=late_after, skip_late=options.skip_late, max_wait=max_wait,
                                          late_after_name=LATE_AFTER_FIELD,
                                          late_after_hint=f"fill in {LATE_AFTER_FIELD} with seconds"))
        tokens = ("", "")
        report = run_check(target, options, moves=moves, events=Events(phase=phase, move_done=move_done,
                                                           probe_done=probe_done, wait=wait),
                           secrets=secret_values)
        with lock:
            run.summary, run.state = report.summary(), "done"
    except CheckError as exc:
        with lock:
            run.error, run.state = redact(str(exc), secret_values), "error"
    except Exception as exc:  # never a traceback on the page; the log gets the type, never a token
        log.error("check run %s failed: %s", run.id[:6], type(exc).__name__)
        with lock:
            run.error, run.state = "The checker failed unexpectedly; nothing more is known.", "error"
    finally:
        if target is not None:
            target.close()
        with lock:
            run.waiting = False
            run.finished = store.clock()
            save()
        THREADS.pop(run.id, None)


# -- the exchange as a sequence diagram -----------------------------------------------------------------


def redact(value: Any, secret_values: tuple[str, ...]) -> Any:
    """`value` with every occurrence of a token replaced: a server could echo one back in its answer."""
    if isinstance(value, str):
        for secret in secret_values:
            value = value.replace(secret, "[token]")
        return value
    if isinstance(value, list):
        return [redact(v, secret_values) for v in value]
    if isinstance(value, dict):
        return {k: redact(v, secret_values) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class DiagramLine:
    direction: str  # "-->" sent, "<--" received
    message: dict[str, Any]
    note: str = ""


@dataclass(frozen=True)
class DiagramStep:
    """One kept step as `web.widgets.sequence_model` reads it; the remote server stands where replica A is."""

    n: int
    replica: str
    lines: tuple[DiagramLine, ...]
    checks: tuple[dict[str, str], ...] | None
    role: str
    at: float
    error: str


SERVER_LANE = "A"
ROLES = {"owner": "the ticket's owner", "other": "the second user"}


def diagram_steps(exchange: Any) -> list[DiagramStep]:
    """A move's kept exchange (`moves.check.exchange_of`, read back from the run file) as diagram steps: the
    request, then the answer when one came back. Anything malformed in the file is left out, never raised."""
    steps: list[DiagramStep] = []
    for item in exchange if isinstance(exchange, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("sent"), dict):
            continue
        lines = [DiagramLine("-->", item["sent"], f"sent as {ROLES.get(str(item.get('role')), 'the client')}")]
        if isinstance(item.get("response"), dict):
            lines.append(DiagramLine("<--", item["response"]))
        trace = item.get("trace")
        checks = tuple(c for c in trace if isinstance(c, dict)) if isinstance(trace, list) else None
        at = item.get("at")
        steps.append(DiagramStep(len(steps) + 1, SERVER_LANE, tuple(lines), checks,
                                 str(item.get("role", "")), float(at) if isinstance(at, int | float) else 0.0,
                                 str(item.get("error") or "")))
    return steps


# -- the run page ------------------------------------------------------------------------------------


@dataclass
class RowView:
    name: str
    title: str
    expected: str
    observed: str
    verdict: str
    detail: str
    lesson_url: str | None
    steps: list[DiagramStep] = field(default_factory=list)
    diagram: dict[str, Any] | None = None  # `sequence_model` of `steps`, the last step current
    move_url: str | None = None  # this move's own row on the lesson's timeline of the checks


def _verdict_outcome(verdict: str) -> str:
    return {"pass": "pass", "fail": "fail"}.get(verdict, "skipped")


def _view(run: Run) -> dict[str, Any]:
    move_views = []
    for r in run.rows:
        steps = diagram_steps(r.get("exchange")) if run.state != "running" else []  # drawn once the run is over
        verdict = "not-run" if r["verdict"] == "skip" else r["verdict"]  # a run saved before the rename
        move_views.append(RowView(r["move"], r["title"], r["expected"], r["observed"], verdict, r["detail"],
                                  _lesson_url(SECTIONS.get(r["stops_at"])) if verdict in ("fail", "warn")
                                  else None, steps, sequence_model(steps, current=steps[-1].n) if steps else None,
                                  _move_url(r["move"]) if verdict in ("fail", "warn") else None))
    probe_views = [RowView(p["probe"], p["title"], "", "", _probe_verdict(p), p["detail"],
                           None if p["ok"] else _lesson_url(SECTIONS.get(p["probe"]), PROBE_ANCHORS.get(p["probe"])))
                   for p in run.probes]
    if run.state == "running":
        status = f"{run.phase}…" + (f" ({len(run.rows)} of {run.total} moves played)" if run.total else "")
        if run.waiting:
            status = "Waiting for the ticket to expire before the late move…"
    elif run.state == "error":
        # A run that played moves and then met a time-out stopped; one that played none could not run at all.
        status = "The check stopped: the server did not answer in time." if run.rows else "The check could not run."
    else:
        status = run.summary or "Done."
    rows = move_views + probe_views
    overall = ("fail" if any(v.verdict == "fail" for v in rows) else "pass") if run.state == "done" and rows else ""
    return {"moves": move_views, "probes": probe_views, "status": status, "state": run.state, "error": run.error,
            "overall": overall,
            "waiting": run.waiting, "waited": round(run.waited, 1), "wait_total": round(run.wait_total, 1),
            "outcome": _verdict_outcome, "roles": ROLES}


@bp.get("/check/runs/<run_id>")
def run_page(run_id: str) -> Response:
    run = runs().get(run_id)
    if run is None:
        abort(404)
    return htmx.render(RUN_PAGE, RUN_FRAGMENT, run=run, view=_view(run))
