"""Error pages: friendly, fragment-sized for htmx, and never a traceback."""

from __future__ import annotations

from flask import Flask, abort
from flask.testing import FlaskClient

from app import create_app

from .conftest import TEST_KEY
from .helpers import HX, assert_csp_clean, rendered, soup


def test_404_is_a_full_page(app: Flask, client: FlaskClient) -> None:
    with rendered(app) as names:
        response = client.get("/no/such/page")
    assert response.status_code == 404 and names == ["errors/error.html"]
    tree = soup(response.data)
    assert tree.h1.get_text(strip=True) == "Page not found"
    assert tree.find("a", href="/")
    assert_csp_clean(response.data)


def test_404_for_htmx_is_a_fragment(app: Flask, client: FlaskClient) -> None:
    with rendered(app) as names:
        response = client.get("/no/such/page", headers=HX)
    assert response.status_code == 404 and names == ["errors/_error.html"]
    assert "<main" not in response.text and 'role="alert"' in response.text


def _crashing_app() -> Flask:
    app = create_app({"TESTING": True, "MRTR_SECRET_KEYS": TEST_KEY, "MRTR_STORE": "memory",
                      "PROPAGATE_EXCEPTIONS": False})

    @app.get("/boom")
    def boom() -> str:
        raise RuntimeError("secret internals: /etc/passwd line 42")

    @app.get("/teapot")
    def teapot() -> str:
        abort(418)

    return app


def test_500_never_leaks_the_traceback(caplog) -> None:  # noqa: ANN001
    app = _crashing_app()
    client = app.test_client()
    with rendered(app) as names:
        response = client.get("/boom")
    assert response.status_code == 500 and names == ["errors/error.html"]
    assert "secret internals" not in response.text and "Traceback" not in response.text
    assert "RuntimeError" not in response.text
    assert soup(response.data).h1.get_text(strip=True) == "Something went wrong"
    assert any("unhandled error" in r.message for r in caplog.records)  # the operator still sees it
    with rendered(app) as names:
        fragment = client.get("/boom", headers=HX)
    assert fragment.status_code == 500 and names == ["errors/_error.html"]
    assert "secret internals" not in fragment.text


def test_other_http_errors_get_the_generic_page() -> None:
    app = _crashing_app()
    with rendered(app) as names:
        response = app.test_client().get("/teapot")
    assert response.status_code == 418 and names == ["errors/error.html"]


def test_method_not_allowed_is_friendly(client: FlaskClient) -> None:
    response = client.post("/")
    assert response.status_code == 405
    assert "<main" in response.text and "Traceback" not in response.text
