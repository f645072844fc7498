"""One home for the check every reply of the exploration (moves/explore.py) is held to, whatever was varied: nothing
asked that the request did not declare (its own capabilities, never an earlier request's). A pure function over
a reply: nothing here sends a request.
"""

from __future__ import annotations

import json

from mrtr import JSONObject

from .answers import question_of
from .flow import asked_of
from .target import Reply


def undeclared(capabilities: JSONObject, reply: Reply) -> str:
    """The first input request of `reply` of a kind or mode `capabilities` did not declare, in words, or "" (sampling
    needs `sampling`, roots `roots`, a form elicitation `elicitation` (form, or empty), a URL-mode one
    `elicitation.url`)."""
    got = asked_of(reply)
    caps = capabilities
    for key, request in (got[1] if got else {}).items():
        question = question_of(request)
        method, mode = question["method"], question["params"].get("mode", "form")
        elicitation = caps.get("elicitation")
        if method == "elicitation/create":
            declared = isinstance(elicitation, dict) and (
                mode in elicitation or (mode == "form" and not elicitation))
        else:
            declared = {"sampling/createMessage": "sampling", "roots/list": "roots"}.get(method, "") in caps
        if not declared:
            what = f"a {str(mode)[:20]}-mode elicitation" if method == "elicitation/create" else str(method)[:40]
            return (f"asked {what} under {str(key)[:40]!r}, although the request declared capabilities "
                    f"{json.dumps(caps, sort_keys=True)}")
    return ""
