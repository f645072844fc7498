"""oEmbed: valid "rich" JSON for quiz URLs on this site, 404 for anything else, 501 for XML."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

from app import create_app
from web.site.content import load_course

from .conftest import TEST_KEY
from .helpers import soup

LESSON = "when-the-server-needs-input"
Q = load_course().lesson(LESSON).questions[0]
HOST = "http://127.0.0.1:5001"


@pytest.fixture
def app_config() -> dict[str, Any]:
    return {"MRTR_EMBED_ORIGINS": HOST}


def oembed(client: FlaskClient, url: str, **extra: str):  # noqa: ANN201
    return client.get("/oembed", query_string={"url": url, **extra})


@pytest.mark.parametrize("url", [f"http://localhost/quiz/{LESSON}", f"http://localhost/embed/quiz/{LESSON}",
                                 f"http://localhost/embed/quiz/{LESSON}?origin={HOST}"])
def test_quiz_urls_get_a_rich_response(client: FlaskClient, url: str) -> None:
    response = oembed(client, url, format="json")
    assert response.status_code == 200 and response.mimetype == "application/json"
    data = response.get_json()
    assert data["version"] == "1.0" and data["type"] == "rich"
    assert data["provider_name"] == "MRTR Lab" and data["provider_url"] == "http://localhost/"
    assert data["title"].startswith("Quick check: ")
    assert isinstance(data["width"], int) and isinstance(data["height"], int)
    frame = soup(data["html"]).find("iframe")
    assert frame["src"].startswith(f"http://localhost/embed/quiz/{LESSON}")
    assert (frame["width"], frame["height"]) == (str(data["width"]), str(data["height"]))
    assert frame.has_attr("data-mrtr-quiz") and frame["title"]
    assert soup(data["html"]).find("script")["src"] == "http://localhost/static/js/embed-parent.js"


def test_format_defaults_to_json(client: FlaskClient) -> None:
    assert oembed(client, f"http://localhost/quiz/{LESSON}").get_json()["type"] == "rich"


def test_a_single_question_url_embeds_that_question(client: FlaskClient) -> None:
    data = oembed(client, f"http://localhost/embed/quiz/{LESSON}/{Q.id}").get_json()
    # With exactly one site allowed, the frame names it, so it can tell that site its height and grow.
    assert soup(data["html"]).find("iframe")["src"] == \
        f"http://localhost/embed/quiz/{LESSON}/{Q.id}?origin=http%3A%2F%2F127.0.0.1%3A5001"


def test_an_allowed_origin_in_the_url_is_kept_and_others_are_dropped(client: FlaskClient) -> None:
    kept = oembed(client, f"http://localhost/embed/quiz/{LESSON}?origin={HOST}").get_json()
    assert "origin=http%3A%2F%2F127.0.0.1%3A5001" in soup(kept["html"]).find("iframe")["src"]
    dropped = oembed(client, f"http://localhost/embed/quiz/{LESSON}?origin=https://evil.example").get_json()
    src = soup(dropped["html"]).find("iframe")["src"]
    assert "evil" not in src and src.endswith("?origin=http%3A%2F%2F127.0.0.1%3A5001")  # the one allowed site


def test_maxwidth_and_maxheight_are_respected(client: FlaskClient) -> None:
    data = oembed(client, f"http://localhost/quiz/{LESSON}", maxwidth="300", maxheight="200").get_json()
    assert (data["width"], data["height"]) == (300, 200)
    big = oembed(client, f"http://localhost/quiz/{LESSON}", maxwidth="5000").get_json()
    assert big["width"] == 640


@pytest.mark.parametrize("url", [
    "http://localhost/",
    f"http://localhost/lessons/{LESSON}",
    "http://localhost/demo/step/3",
    "http://localhost/quiz/no-such-lesson",
    f"http://localhost/embed/quiz/{LESSON}/no-such-question",
    f"http://evil.example/quiz/{LESSON}",
    f"ftp://localhost/quiz/{LESSON}",
    f"/quiz/{LESSON}",
    "",
])
def test_other_urls_are_404(client: FlaskClient, url: str) -> None:
    response = oembed(client, url)
    assert response.status_code == 404
    assert response.mimetype == "text/plain"


@pytest.mark.parametrize("fmt", ["xml", "yaml"])
def test_formats_other_than_json_are_501(client: FlaskClient, fmt: str) -> None:
    assert oembed(client, f"http://localhost/quiz/{LESSON}", format=fmt).status_code == 501


def test_oembed_itself_refuses_framing(client: FlaskClient) -> None:
    response = oembed(client, f"http://localhost/quiz/{LESSON}")
    assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]


def test_works_without_an_allow_list() -> None:
    bare = create_app({"TESTING": True, "MRTR_SECRET_KEYS": TEST_KEY, "MRTR_STORE": "memory"}).test_client()
    data = oembed(bare, f"http://localhost/quiz/{LESSON}").get_json()
    assert "origin" not in soup(data["html"]).find("iframe")["src"]
