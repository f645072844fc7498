"""The hostile corpus against the live class's routes, on a REAL class with a presenter and a learner.

The site-wide corpus (tests/web/test_hardening_corpus.py) reaches these routes with a code that
names no class, so it mostly sees 404s. Here every classroom route is attacked with a live code
and the right cookie (the presenter's for /host routes, a learner's for the rest): each field x
each hostile value, missing, repeated and unknown fields. Never a 5xx, never markup reflected, and
a 4xx page says why.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from flask import Flask

from moves.catalog import load_moves
from tests.corpus.hostile import Route, page_cases
from tests.corpus.page_samples import page_failure
from web.site.inputs import FIELDS

MOVES = load_moves()


@pytest.fixture
def app_config() -> dict[str, Any]:
    return {"MRTR_CLASS_STREAM_SECONDS": 0}


def test_classroom_routes_survive_the_hostile_corpus(app: Flask) -> None:
    host = app.test_client()
    started = host.post("/class/start").get_data(as_text=True)
    code = re.search(r'data-join-code="(\w+)"', started).group(1)  # type: ignore[union-attr]
    secret = re.search(r"data-control-link>[^<]*/control/([^<]+)<", started).group(1)  # type: ignore[union-attr]
    learner = app.test_client()
    assert learner.post("/join", data={"code": code, "nickname": "Corpus"}).status_code == 303
    host.post(f"/class/{code}/host/question")
    host.post(f"/class/{code}/host/round", data={"open": "1"})

    adapter = app.url_map.bind("localhost")
    routes: list[tuple[Route, bool]] = []
    for rule in app.url_map.iter_rules():
        if not rule.endpoint.startswith("classroom.") or rule.endpoint == "classroom.end":
            continue
        values = {arg: {"code": code, "secret": secret}[arg] for arg in rule.arguments}
        path = adapter.build(rule.endpoint, values)
        fields = {name: spec.kind for name, spec in FIELDS[rule.endpoint].items()}
        base = {"option": "a"} if rule.endpoint == "classroom.answer" else {}
        base = {"move": MOVES[0].slug} if rule.endpoint == "classroom.play" else base
        for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
            routes.append((Route(rule.endpoint, method, path, fields, base), "/host" in path))
    assert len(routes) >= 15

    failures: list[str] = []
    total = 0
    for route, as_host in routes:
        client = host if as_host else learner
        for case in page_cases([route]):
            total += 1
            body, headers = case.encoded()
            try:
                response = client.open(case.path, method=case.method, data=body, headers=headers)
                status, content_type, data = response.status_code, response.content_type or "", response.data
                response.close()
            except Exception as exc:  # noqa: BLE001 - an exception escaping the app is what we hunt
                failures.append(f"{case.name}: raised {type(exc).__name__}: {str(exc)[:120]}")
                continue
            problem = page_failure(case, status, content_type, data)
            if problem:
                failures.append(f"{case.name}: {problem}")
    assert total > 500
    assert not failures, f"{len(failures)} of {total} cases failed:\n" + "\n".join(failures[:40])
    # The class is still whole afterwards.
    assert host.get(f"/class/{code}/host").status_code == 200
    assert learner.get(f"/class/{code}/me").status_code == 200
