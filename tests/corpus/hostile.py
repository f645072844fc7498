"""A corpus of malformed and hostile requests, generated from data: small mutations × base requests.

`corpus(ticket)` returns a list of `Case`s (each with a name); `ticket` is a real requestState
minted by the server under test, so ticket mutations start from something that would verify.
`hostile.jsonl` beside this file adds hand-written raw cases. Nothing here imports Flask: the
same cases are sent through Flask's test client and over real HTTP.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

HERE = Path(__file__).resolve().parent
MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "hostile", "version": "1"},
}
ACCEPT = {"confirm": {"action": "accept", "content": {"confirm": True}}}
MCP_HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": MODERN,
    "Authorization": "Bearer bob-token",
}


#: A form or query: (name, value) pairs in order, repeats allowed; a bytes value goes on the wire as is.
Pairs = list[tuple[str | bytes, str | bytes]]


@dataclass
class Case:
    name: str
    method: str
    path: str
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None
    form: dict[str, str] | Pairs | None = None
    #: Markup this case sends that must never come back unescaped (see tests/web/test_hardening_corpus.py).
    markup: str | None = None

    def encoded(self) -> tuple[bytes, dict[str, str]]:
        """The body bytes and headers as they go on the wire (forms URL-encoded)."""
        if self.form is not None:
            return urlencode(self.form).encode(), {"Content-Type": "application/x-www-form-urlencoded",
                                                   **self.headers}
        return self.body or b"", dict(self.headers)


# -- base requests ---------------------------------------------------------------------------------


def mcp_message(method: str, params: dict[str, Any] | None, request_id: Any = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def mcp_bases(ticket: str) -> dict[str, dict[str, Any]]:
    call = {"name": "deploy", "arguments": {"env": "staging"}, "_meta": META}
    return {
        "call": mcp_message("tools/call", call),
        "retry": mcp_message("tools/call", {**call, "inputResponses": ACCEPT, "requestState": ticket}, 2),
        "list": mcp_message("tools/list", {"_meta": META}),
        "read": mcp_message("resources/read", {"uri": "mrtr://lab/checks", "_meta": META}),
        "initialize": mcp_message("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                                 "clientInfo": {"name": "hostile", "version": "1"}}),
    }


def mcp_case(name: str, message: Any, headers: dict[str, str] | None = None, raw: bytes | None = None) -> Case:
    hdrs = dict(MCP_HEADERS)
    if isinstance(message, dict) and isinstance(message.get("method"), str):
        hdrs["Mcp-Method"] = message["method"]
        params = message.get("params")
        if isinstance(params, dict):
            for key in ("name", "uri"):
                if isinstance(params.get(key), str) and len(params[key]) < 200:
                    hdrs["Mcp-Name"] = params[key]
    if headers is not None:
        hdrs = {k: v for k, v in {**hdrs, **headers}.items() if v is not None}
    body = raw if raw is not None else json.dumps(message).encode()
    return Case(name, "POST", "/mcp", hdrs, body)


# -- mutations: each takes a deep copy of a base message and returns what to send --------------------

Message = dict[str, Any]


def _set(path: tuple[str, ...], value: Any) -> Callable[[Message], Message]:
    def mutate(m: Message) -> Message:
        target: Any = m
        for key in path[:-1]:
            if not isinstance(target.get(key), dict):
                target[key] = {}
            target = target[key]
        target[path[-1]] = value
        return m

    return mutate


def _drop(path: tuple[str, ...]) -> Callable[[Message], Message]:
    def mutate(m: Message) -> Message:
        target: Any = m
        for key in path[:-1]:
            target = target.get(key) if isinstance(target, dict) else None
        if isinstance(target, dict):
            target.pop(path[-1], None)
        return m

    return mutate


def _nest(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


def _flip(ticket: Any, index: int) -> Any:
    if not isinstance(ticket, str) or not ticket:
        return ticket
    i = index % len(ticket)
    return ticket[:i] + ("A" if ticket[i] != "A" else "B") + ticket[i + 1:]


def _ticket(fn: Callable[[Any], Any]) -> Callable[[Message], Message]:
    def mutate(m: Message) -> Message:
        params = m.setdefault("params", {}) if isinstance(m.get("params", {}), dict) else {}
        params["requestState"] = fn(params.get("requestState", "t1.e30.AAAA"))
        return m

    return mutate


JSON_MUTATIONS: dict[str, Callable[[Message], Message]] = {
    "jsonrpc-missing": _drop(("jsonrpc",)),
    "jsonrpc-1.0": _set(("jsonrpc",), "1.0"),
    "jsonrpc-number": _set(("jsonrpc",), 2.0),
    "id-bool": _set(("id",), True),
    "id-float": _set(("id",), 1.5),
    "id-null": _set(("id",), None),
    "id-object": _set(("id",), {"a": 1}),
    "id-huge-int": _set(("id",), 10**400),
    "id-long-string": _set(("id",), "i" * 10_000),
    "method-int": _set(("method",), 7),
    "method-empty": _set(("method",), ""),
    "method-unknown": _set(("method",), "tools/explode"),
    "method-long": _set(("method",), "m" * 5000),
    "method-path": _set(("method",), "../../etc/passwd"),
    "method-nul": _set(("method",), "tools/call\u0000"),
    "method-removed-ping": _set(("method",), "ping"),
    "params-list": _set(("params",), [1, 2, 3]),
    "params-string": _set(("params",), "params"),
    "params-null": _set(("params",), None),
    "name-int": _set(("params", "name"), 42),
    "name-unknown": _set(("params", "name"), "rm-rf"),
    "name-unicode": _set(("params", "name"), "d\u0435ploy"),
    "arguments-list": _set(("params", "arguments"), ["staging"]),
    "arguments-string": _set(("params", "arguments"), "env=staging"),
    "env-int": _set(("params", "arguments", "env"), 1),
    "env-empty": _set(("params", "arguments", "env"), "   "),
    "env-huge": _set(("params", "arguments", "env"), "e" * 100_000),
    "env-control": _set(("params", "arguments", "env"), "prod\r\nX-Injected: 1"),
    "env-lone-surrogate": _set(("params", "arguments", "env"), "\udfff"),
    "id-lone-surrogate": _set(("id",), "\ud800"),
    "arguments-deep": _set(("params", "arguments", "x"), _nest(40)),
    "meta-version-int": _set(("params", "_meta", "io.modelcontextprotocol/protocolVersion"), 20260728),
    "meta-version-future": _set(("params", "_meta", "io.modelcontextprotocol/protocolVersion"), "2099-01-01"),
    "meta-list": _set(("params", "_meta"), []),
    "capabilities-string": _set(("params", "_meta", "io.modelcontextprotocol/clientCapabilities"), "all"),
    "capabilities-none": _set(("params", "_meta", "io.modelcontextprotocol/clientCapabilities"), {}),
    "responses-list": _set(("params", "inputResponses"), [ACCEPT]),
    "responses-string": _set(("params", "inputResponses"), "yes"),
    "responses-wrong-shape": _set(("params", "inputResponses"), {"confirm": {"action": "accept",
                                                                             "content": {"confirm": "yes"}}}),
    "responses-action-bogus": _set(("params", "inputResponses"), {"confirm": {"action": "sudo"}}),
    "responses-extra-keys": _set(("params", "inputResponses"), {**ACCEPT, "admin": {"action": "accept"}}),
    "ticket-int": _ticket(lambda t: 12345),
    "ticket-list": _ticket(lambda t: [t]),
    "ticket-null": _ticket(lambda t: None),
    "ticket-empty": _ticket(lambda t: ""),
    "ticket-too-long": _ticket(lambda t: (t or "t1.") + "A" * 5000),
    "ticket-flip-start": _ticket(lambda t: _flip(t, 5)),
    "ticket-flip-middle": _ticket(lambda t: _flip(t, len(t) // 2 if isinstance(t, str) else 0)),
    "ticket-flip-end": _ticket(lambda t: _flip(t, -1)),
    "ticket-truncated": _ticket(lambda t: t[: len(t) // 2] if isinstance(t, str) else t),
    "ticket-other-prefix": _ticket(lambda t: "x9" + t[2:] if isinstance(t, str) else t),
    "ticket-sealed-garbage": _ticket(lambda t: "s1." + "A" * 60),
    "ticket-padding": _ticket(lambda t: t + "==" if isinstance(t, str) else t),
    "ticket-non-ascii": _ticket(lambda t: (t or "") + "\u00e9"),
    "ticket-nul": _ticket(lambda t: (t or "") + "\u0000"),
    "ticket-none-alg": _ticket(lambda t: "t1." + base64.urlsafe_b64encode(
        b'{"v":1,"sub":"bob","exp":9999999999,"req":"x","work":{"env":"prod"}}').decode().rstrip("=") + "."),
    "ticket-json-in-place": _ticket(lambda t: json.dumps({"sub": "bob", "work": {"env": "prod"}})),
    "progress-token-object": _set(("params", "_meta", "progressToken"), {"x": [1, 2]}),
}


def json_level_cases(ticket: str) -> list[Case]:
    cases = []
    for base_name, base in mcp_bases(ticket).items():
        for mut_name, mutate in JSON_MUTATIONS.items():
            if base_name in ("list", "initialize") and mut_name.startswith(("ticket-", "responses-", "env-")):
                continue  # meaningless there; covered on call/retry/read
            cases.append(mcp_case(f"mcp/{base_name}/{mut_name}", mutate(copy.deepcopy(base))))
    return cases


def http_level_cases(ticket: str) -> list[Case]:
    cases = []
    for base_name in ("call", "retry"):
        base = mcp_bases(ticket)[base_name]
        header_mutations: dict[str, dict[str, str | None]] = {
            "no-auth": {"Authorization": None},
            "bad-token": {"Authorization": "Bearer alice-token-but-longer"},
            "basic-auth": {"Authorization": "Basic Ym9iOmJvYg=="},
            "auth-empty-bearer": {"Authorization": "Bearer "},
            "alice-retries-bobs-ticket": {"Authorization": "Bearer alice-token"},
            "content-type-text": {"Content-Type": "text/plain"},
            "content-type-form": {"Content-Type": "application/x-www-form-urlencoded"},
            "no-content-type": {"Content-Type": None},
            "accept-html": {"Accept": "text/html"},
            "accept-none": {"Accept": None},
            "version-header-old": {"MCP-Protocol-Version": "2024-11-05"},
            "version-header-garbage": {"MCP-Protocol-Version": "\u00ff\u00fe"},
            "method-header-mismatch": {"Mcp-Method": "tools/list"},
            "name-header-mismatch": {"Mcp-Name": "other"},
            "name-header-bad-base64": {"Mcp-Name": "=?base64?!!!?="},
            "evil-origin": {"Origin": "https://evil.example"},
            "null-origin": {"Origin": "null"},
            "bogus-session": {"Mcp-Session-Id": "does-not-exist"},
        }
        for name, headers in header_mutations.items():
            cases.append(mcp_case(f"http/{base_name}/{name}", copy.deepcopy(base), headers))
    raw_bodies: dict[str, bytes] = {
        "empty": b"",
        "whitespace": b"   \n ",
        "null": b"null",
        "number": b"42",
        "string": b'"tools/call"',
        "empty-batch": b"[]",
        "batch": json.dumps([mcp_bases(ticket)["call"]] * 3).encode(),
        "truncated": json.dumps(mcp_bases(ticket)["call"]).encode()[:-7],
        "trailing-garbage": json.dumps(mcp_bases(ticket)["call"]).encode() + b"}}}",
        "invalid-utf8": b'{"jsonrpc":"2.0","id":1,"method":"tools/call\xff\xfe"}',
        "utf8-bom": b"\xef\xbb\xbf" + json.dumps(mcp_bases(ticket)["call"]).encode(),
        "nan": b'{"jsonrpc":"2.0","id":NaN,"method":"tools/list","params":{}}',
        "infinity-arg": b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"deploy",'
                        b'"arguments":{"env":Infinity}}}',
        "duplicate-keys": b'{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{}}',
        "deep-arrays": b"[" * 100_000,
        "deep-objects": b'{"a":' * 20_000,
        "depth-33": json.dumps(_nest(33)).encode(),
        "huge-number": b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"tools/list"}',
        "huge-string-under-limit": json.dumps({"jsonrpc": "2.0", "id": 1, "method": "x" * 200_000}).encode(),
        "over-size-limit": b'{"pad":"' + b"x" * 300_000 + b'"}',
        "nul-bytes": b"\x00" * 64,
    }
    for name, raw in raw_bodies.items():
        cases.append(mcp_case(f"raw/{name}", None, raw=raw))
    for method in ("GET", "PUT", "PATCH", "DELETE"):
        cases.append(Case(f"http/verb-{method}", method, "/mcp", dict(MCP_HEADERS)))
    return cases


FORM_MUTATIONS: dict[str, dict[str, str]] = {
    "empty": {},
    "garbage-toggles": {"single_use": "maybe", "sealed": "2", "no_signature": "\u0000", "offset": "NaN"},
    "offset-huge": {"offset": "1e309"},
    "offset-negative": {"offset": "-99999999"},
    "embedded-junk": {"embedded": "<script>alert(1)</script>"},
    "args-invalid-json": {"arguments": "{env: staging"},
    "args-deep-json": {"arguments": "[" * 5000},
    "args-not-object": {"arguments": "[1,2,3]"},
    "args-huge-string": {"arguments": json.dumps({"env": "e" * 50_000})},
    "args-lone-surrogate": {"arguments": '{"env": "\\udfff"}'},
    "token-newline": {"token_choice": "bob-token\r\nX-Evil: 1"},
    "token-unknown": {"token_other": "mallory-token"},
    "at-nan": {"at": "nan"},
    "at-inf": {"at": "inf"},
    "at-negative": {"at": "-1"},
    "at-words": {"at": "eight seconds"},
    "answer-unknown": {"answer": "sudo"},
    "answer-raw-empty": {"answer": "raw", "answer_raw": ""},
    "answer-raw-garbage": {"answer": "raw", "answer_raw": "{{{{"},
    "answer-raw-list": {"answer": "raw", "answer_raw": "[]"},
    "minted-at-garbage": {"minted_at": "yesterday"},
    "minted-at-far": {"minted_at": "1"},
    "ticket-junk": {"ticket": "t1.<script>.x"},
    "ticket-huge": {"ticket": "A" * 100_000},
    "html-everywhere": {k: "<img src=x onerror=alert(1)>" for k in ("ticket", "arguments", "token_other", "at")},
}


def form_level_cases(ticket: str, *, quiz_paths: list[str], move_slugs: list[str]) -> list[Case]:
    valid_custom = {"ticket": ticket, "arguments": '{"env":"staging"}', "token_choice": "bob-token", "at": "8",
                    "answer": "accept"}
    cases = []
    for name, fields in FORM_MUTATIONS.items():
        cases.append(Case(f"form/custom/{name}", "POST", "/playground/custom", {}, form={**valid_custom, **fields}))
        cases.append(Case(f"form/custom-bare/{name}", "POST", "/playground/custom", {"HX-Request": "true"},
                          form=dict(fields)))
    for slug in move_slugs:
        for name in ("empty", "garbage-toggles", "offset-huge", "embedded-junk"):
            cases.append(Case(f"form/move-{slug}/{name}", "POST", f"/playground/moves/{slug}", {},
                              form=FORM_MUTATIONS[name]))
    for path in ["/playground/moves/..%2F..%2Fetc", "/playground/moves/" + "x" * 2000]:
        cases.append(Case(f"form/move-path/{path[:30]}", "POST", path, {}, form={}))
    quiz_forms: dict[str, dict[str, str]] = {
        "empty": {},
        "choice-unknown": {"choice": "zz"},
        "choice-huge": {"choice": "c" * 50_000},
        "progress-garbage": {"choice": "a", "progress": "!!!not-a-token!!!"},
        "progress-huge": {"choice": "a", "progress": "A" * 100_000},
        "progress-b64-json": {"choice": "a", "progress": base64.urlsafe_b64encode(b'{"q1":true}').decode()},
        "html": {"choice": "<script>alert(1)</script>", "progress": "<b>"},
    }
    for path in quiz_paths:
        for name, fields in quiz_forms.items():
            cases.append(Case(f"form/quiz{path}/{name}", "POST", path, {}, form=fields))
    return cases


def jsonl_cases() -> list[Case]:
    """Hand-written raw cases from hostile.jsonl: {name, method, path, headers, body | body_b64}."""
    cases = []
    for n, line in enumerate((HERE / "hostile.jsonl").read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("//"):
            continue
        raw = json.loads(line)
        body = base64.b64decode(raw["body_b64"]) if "body_b64" in raw else raw.get("body", "").encode()
        cases.append(Case(f"jsonl/{n}/{raw['name']}", raw.get("method", "POST"), raw["path"],
                          raw.get("headers", {}), body))
    return cases


def corpus(ticket: str, *, quiz_paths: list[str], move_slugs: list[str]) -> list[Case]:
    return [*json_level_cases(ticket), *http_level_cases(ticket),
            *form_level_cases(ticket, quiz_paths=quiz_paths, move_slugs=move_slugs), *jsonl_cases()]


# -- every page route: each field x each hostile value ----------------------------------------------------


@dataclass(frozen=True)
class Route:
    """One page route as the app's URL map and web.site.inputs.FIELDS describe it (built by
    tests/corpus/page_samples.py).

    `fields` maps each field the view reads to its kind ("text", "json", "ticket", "count", "url");
    `base` is a valid request's fields, so one hostile field is judged with the others in order.
    """

    endpoint: str
    method: str
    path: str
    fields: dict[str, str]
    base: dict[str, str] = field(default_factory=dict)


XSS = '<script>alert("mrtr-xss")</script>'
XSS_ATTR = '"><img src=x onerror=alert("mrtr-xss")>'
TEN_MB = 10 * 1024 * 1024

#: name -> the value a field is set to. Bytes go on the wire as they are (percent-encoded raw).
PAGE_VALUES: dict[str, str | bytes] = {
    "empty": "",
    "spaces": "   ",
    "deep-arrays": "[" * 3000,
    "deep-objects": '{"a":' * 3000,
    "deep-balanced": "[" * 40 + "]" * 40,
    "surrogate-escape": "\\ud800",
    "surrogate-escape-json": '{"env": "\\udfff", "sub": "\\ud800"}',
    "surrogate-escape-low-first": '"\\udc00\\ud800"',
    "raw-surrogate-bytes": b"\xed\xa0\x80",
    "raw-surrogate-pair-bytes": b"\xed\xa0\xbd\xed\xb8\x80",
    "non-utf8-ff": b"\xff\xfe",
    "latin-1": "caf\u00e9".encode("latin-1"),
    "overlong-slash": b"\xc0\xaf",
    "nul": "a\x00b",
    "controls": "\x1b[31mred\x07\x08",
    "crlf": "bob-token\r\nX-Injected: 1",
    "huge-float": "1e999",
    "huge-negative-float": "-1e999",
    "huge-int": "9" * 5000,
    "huge-int-json": '{"env": ' + "9" * 5000 + "}",
    "huge-float-json": '{"env": 1e999}',
    "nan-json": '{"env": NaN}',
    "infinity-json": "[Infinity, -Infinity]",
    "unicode-digits": "\u00b2\u0663",
    "negative": "-1",
    "float-text": "8.5e2",
    "json-array": "[]",
    "json-object": "{}",
    "json-null": "null",
    "json-true": "true",
    "json-number": "123",
    "json-string": '"staging"',
    "json-wrong-env-list": '{"env": ["staging"]}',
    "json-wrong-env-object": '{"env": {"x": 1}}',
    "script": XSS,
    "attribute-break": XSS_ATTR,
    "long-64k": "x" * 65_536,
    "ten-mb": "x" * TEN_MB,
    "ticket-deep": "t1." + base64.urlsafe_b64encode(b"[" * 2900).decode().rstrip("=") + ".AAAA",
    "ticket-surrogate-sub": "t1." + base64.urlsafe_b64encode(
        b'{"v":1,"sub":"\\ud800","exp":9999999999,"work":{"env":"staging"}}').decode().rstrip("=") + ".AAAA",
    "ticket-huge-exp": "t1." + base64.urlsafe_b64encode(
        b'{"v":1,"sub":"bob","exp":' + b"9" * 5000 + b"}").decode().rstrip("=") + ".AAAA",
    "ticket-raw-surrogate-bytes": "t1." + base64.urlsafe_b64encode(
        b'{"v":1,"sub":"\xed\xa0\x80"}').decode().rstrip("=") + ".AAAA",
    "ticket-wrong-types": "t1." + base64.urlsafe_b64encode(
        b'{"v":"1","sub":[1],"exp":"x","iat":{},"req":5,"work":[],"jti":{},"step":[]}').decode().rstrip("=") + ".AAAA",
    "url-bad-ipv6": "http://[::1/quiz",
    "url-huge-port": "http://localhost:99999999999/quiz",
    "url-javascript": "javascript:alert(1)",
}
#: Values also sent as htmx requests, which render fragments instead of pages.
FRAGMENT_VALUES = ("script", "attribute-break", "raw-surrogate-bytes", "surrogate-escape-json", "deep-arrays",
                   "json-wrong-env-object", "huge-float")
HTMX = {"HX-Request": "true"}
#: The values that test encoding, not meaning: also sent in the query string of POST routes.
ENCODING_VALUES = ("raw-surrogate-bytes", "non-utf8-ff", "surrogate-escape", "nul", "script", "huge-int")


def _with(base: dict[str, str], name: str, value: str | bytes) -> Pairs:
    return [*((k, v) for k, v in base.items() if k != name), (name, value)]


def _markup(value: str | bytes) -> str | None:
    return value if isinstance(value, str) and "<" in value else None


def page_cases(routes: list[Route]) -> list[Case]:
    """Each route x each field it reads x each hostile value; plus missing, repeated and unknown fields."""
    cases: list[Case] = []
    for route in routes:
        where = "form" if route.method == "POST" else "query"
        prefix = f"page/{route.method}{route.path}"

        def case(name: str, pairs: Pairs, query: Pairs | None = None, *, markup: str | None = None,
                 headers: dict[str, str] | None = None, route: Route = route, where: str = where) -> Case:
            path = route.path
            if where == "query" or query:
                path += "?" + urlencode(pairs if where == "query" else query or [])
            form = pairs if where == "form" else None
            return Case(name, route.method, path, dict(headers or {}), form=form, markup=markup)

        for field_name in route.fields:
            for value_name, value in PAGE_VALUES.items():
                if value_name == "ten-mb" and where == "query":
                    continue  # a query string is refused (414) long before: "long-64k" covers it
                cases.append(case(f"{prefix}/{field_name}/{value_name}", _with(route.base, field_name, value),
                                  markup=_markup(value)))
            if route.method == "POST":
                for value_name in ENCODING_VALUES:
                    value = PAGE_VALUES[value_name]
                    cases.append(case(f"{prefix}/query-{field_name}/{value_name}", list(route.base.items()),
                                      [(field_name, value)], markup=_markup(value)))
            for value_name in FRAGMENT_VALUES:  # the htmx fragments are other templates: try them too
                value = PAGE_VALUES[value_name]
                cases.append(case(f"{prefix}/{field_name}/htmx-{value_name}", _with(route.base, field_name, value),
                                  markup=_markup(value), headers=HTMX))
            if field_name in route.base:
                cases.append(case(f"{prefix}/{field_name}/missing",
                                  [(k, v) for k, v in route.base.items() if k != field_name]))
            cases.append(case(f"{prefix}/{field_name}/repeated-twice",
                              [*_with(route.base, field_name, "1"), (field_name, XSS)], markup=XSS))
            cases.append(case(f"{prefix}/{field_name}/repeated-200",
                              [*route.base.items(), *[(field_name, str(i)) for i in range(200)]]))
        cases.append(case(f"{prefix}/unknown-field", [*route.base.items(), ("no_such_field", XSS)], markup=XSS))
        cases.append(case(f"{prefix}/long-field-name", [*route.base.items(), ("n" * 5000, "1")]))
        # a refused value's message names its field: the name must come back escaped
        cases.append(case(f"{prefix}/markup-field-name", [*route.base.items(), ("<script>n</script>", "\x00")],
                          markup="<script>n</script>"))
        cases.append(case(f"{prefix}/surrogate-field-name", [*route.base.items(), ("\\ud800", "1")]))
        cases.append(case(f"{prefix}/raw-surrogate-field-name", [*route.base.items(), (b"\xed\xa0\x80", "1")]))
        cases.append(case(f"{prefix}/nothing", []))
        cases.append(case(f"{prefix}/htmx-nothing", [], headers=HTMX))
        cases.append(case(f"{prefix}/htmx-hostile-headers", list(route.base.items()), markup=XSS, headers={
            **HTMX, "HX-Boosted": "\u00ff", "HX-History-Restore-Request": "maybe", "HX-Current-URL": XSS,
            "HX-Target": XSS, "HX-Trigger-Name": XSS, "HX-Trigger": "x" * 8000, "HX-Prompt": "\u00e9\u00ff"}))
        if route.method == "POST":
            cases.append(Case(f"{prefix}/multipart", "POST", route.path,
                              {"Content-Type": "multipart/form-data; boundary=b"},
                              b'--b\r\nContent-Disposition: form-data; name="x"\r\n\r\n\xed\xa0\x80\r\n--b--\r\n'))
            cases.append(Case(f"{prefix}/json-body", "POST", route.path, {"Content-Type": "application/json"},
                              b'{"a": "\\ud800", "b": ' + b"[" * 3000 + b"}"))
            cases.append(Case(f"{prefix}/raw-non-utf8-body", "POST", route.path,
                              {"Content-Type": "application/x-www-form-urlencoded"}, b"a=\xff\xfe&b=\xed\xa0\x80"))
    return cases
