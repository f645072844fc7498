"""The checker's report never shows a token given to it, and blanks nothing but the token: whole occurrences only,
so a token that is also part of a word leaves the word alone; a token too short to be told from ordinary words is
refused where it is given (the CLI and /check), with a message that does not repeat it."""

from __future__ import annotations

import io

import pytest

from moves.check import main
from moves.report import MIN_SECRET, redacted, secret_problem


def test_whole_occurrences_are_blanked_and_words_that_contain_the_token_are_not() -> None:
    token = "answer42"
    text = f"Bearer {token}; the server did not answer42x, it echoed '{token}' and {token}."
    assert redacted(text, [token]) == "Bearer [token]; the server did not answer42x, it echoed '[token]' and [token]."
    # A one-letter token, had it been taken, would have blanked only the word "a", never letters inside words.
    assert redacted("did not answer: a ticket", ["a"]) == "did not answer: [token] ticket"


def test_tokens_that_begin_or_end_with_punctuation_are_blanked_wherever_they_stand() -> None:
    assert redacted("x=-tok:en-y", ["-tok:en-"]) == "x=[token]y"
    assert redacted("bob-secret-cluster and bob-secret", ["bob-secret", "bob-secret-cluster"]) \
        == "[token] and [token]"


def test_a_token_too_short_to_redact_is_refused_by_the_cli_without_repeating_it() -> None:
    assert secret_problem("x" * MIN_SECRET) is None and secret_problem("x" * (MIN_SECRET - 1))
    err = io.StringIO()
    code = main(["http://127.0.0.1:9/mcp", "--token", "bob=a", "--token", "alice=alice-token"],
                stdout=io.StringIO(), stderr=err)
    assert code != 0 and f"at least {MIN_SECRET} characters" in err.getvalue()
    assert "=a" not in err.getvalue() and "'a'" not in err.getvalue()


@pytest.mark.parametrize("owner", ["a", "short"])
def test_a_token_too_short_to_redact_is_refused_by_the_check_page(owner: str, make_app: object) -> None:
    app = make_app()  # type: ignore[operator]
    page = app.test_client().post("/check", data={"url": "http://127.0.0.1:9/mcp", "owner_token": owner,
                                                  "other_token": "alice-token"})
    assert page.status_code == 400, page.status_code
    assert f"at least {MIN_SECRET} characters" in page.get_data(as_text=True)
