"""The "Misuse the ticket" playground: pick a move, and the real server judges it.

Every experiment is played by the move engine (`moves.engine.play`) on a lab target
(`moves.targets.in_process`): a real server on the lab's own keys, which /mcp never accepts, lab tokens,
a fresh store and a fake clock started at the app's current time, so one learner's plays never
touch another's, every play is reproducible, and no ticket shown here works on /mcp. No configured
token or key reaches the page: the "run it yourself" scripts mint their own ticket on /mcp with
`$BOB_TOKEN`-style variables. Nothing on the page is canned: the sent messages, the checks, the
answers and the log all come from the engine's `MoveResult` and the target's `Reply`.

The switches travel as query parameters (GET) or hidden inputs (POST), so every state has a URL and
the whole widget works without JavaScript. "Write your own retry" carries its lab server's state
(the ticket-id seed and the redeemed ids) in hidden inputs, so a second send of the same ticket is
refused. The lesson page embeds the same widget through `playground_context(args)`.

This module holds the routes and the page's context; the parts live beside it by job: the switches
(`playground_switches`), what the templates show (`playground_views`) and the playing (`playground_lab`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TypedDict

from flask import Blueprint, abort, redirect, request
from flask.typing import ResponseReturnValue

from web.playground.lab import parse_custom, round_one, run_custom, run_move
from web.playground.switches import PlaygroundInputError, Toggles, last_value
from web.playground.views import CustomForm, MoveList, MoveView, Playground, mcp_url, moves
from web.playground.words import summary_for
from web.site import htmx
from web.site.moveviews import grouped
from web.site.services import LAB_PRINCIPALS, get_services

bp = Blueprint("playground", __name__)

PAGE = "playground/show.html"
WIDGET = "playground/_playground.html"
RESULT = "playground/_result.html"
ERROR = "playground/_error.html"


class PlaygroundContext(TypedDict):
    """What `_playground.html` (and the fragments that swap parts of it) render."""

    pg: Playground


def playground_context(args: Mapping[str, str] | None = None, *, strict: bool = False) -> PlaygroundContext:
    """Everything `_playground.html` needs, as `{"pg": ...}`; the lesson page includes it too.

    Lenient by default (a bad switch falls back to its default) so a stray query parameter never
    breaks the lesson page; the playground's own views pass strict=True and answer 400 instead.
    """
    args = args if args is not None else request.args
    try:
        toggles = Toggles.parse(args)
    except PlaygroundInputError:
        if strict:
            raise
        toggles = Toggles()
    services = get_services()
    first = round_one(toggles)
    all_moves = moves()
    words = toggles.played.words()
    views = {m.slug: MoveView(m, LAB_PRINCIPALS[0] if m.sender == "owner" else LAB_PRINCIPALS[1],
                              summary_for(m, words, sealed=toggles.sealed)) for m in all_moves}
    pg = Playground(
        toggles=toggles,
        moves=list(views.values()),
        groups=[MoveList(g.key, g.title, g.hint, [views[m.slug] for m in g.moves]) for g in grouped(all_moves)],
        round_one=first,
        custom=CustomForm(ticket=first.ticket.token, token_choice=first.token, minted_at=str(first.minted_at),
                          seed=first.seed, arguments=json.dumps(toggles.played.arguments)),
        tokens=list(services.lab_tokens),
        mcp_url=mcp_url(),
        ttl=services.server.ttl,
        tokens_public=services.tokens_public,
        embedded=request.blueprint != bp.name,
    )
    slug = last_value(args, "move")
    if slug:
        move = next((m for m in all_moves if m.slug == slug), None)
        if move is None:
            if strict:
                raise PlaygroundInputError(f"there is no move called {slug[:40]!r}")
        else:
            pg.result = run_move(move, toggles)
    return {"pg": pg}


# -- views -----------------------------------------------------------------------------------------


def _bad_input(exc: PlaygroundInputError, args: Mapping[str, str],
               custom: CustomForm | None = None) -> ResponseReturnValue:
    context = playground_context(args)
    pg = context["pg"]
    pg.error = str(exc)
    pg.oob = htmx.wants_fragment()
    if custom is not None:
        pg.custom = custom
    return htmx.render(PAGE, ERROR, status=400, **context)


def _embedded(args: Mapping[str, str]) -> bool:
    return htmx.wants_fragment() and last_value(args, "embedded") == "1"


@bp.get("/playground")
def show() -> ResponseReturnValue:
    try:
        context = playground_context(request.args, strict=True)
    except PlaygroundInputError as exc:
        return _bad_input(exc, request.args)
    pg = context["pg"]
    pg.embedded = _embedded(request.args)
    push = None if pg.embedded else pg.toggles.url(pg.result.slug if pg.result else None)
    return htmx.render(PAGE, WIDGET, push_url=push, **context)


@bp.post("/playground/moves/<slug>")
def play_move(slug: str) -> ResponseReturnValue:
    move = next((m for m in moves() if m.slug == slug), None)
    if move is None:
        abort(404)
    try:
        toggles = Toggles.parse(request.form)
    except PlaygroundInputError as exc:
        return _bad_input(exc, request.args)
    context = playground_context(toggles.params)
    pg = context["pg"]
    pg.result = run_move(move, toggles)
    pg.oob = htmx.wants_fragment()
    pg.embedded = _embedded(request.form)
    push = None if pg.embedded else toggles.url(slug)
    return htmx.render(PAGE, RESULT, push_url=push, **context)


@bp.get("/playground/moves/<slug>")
def move_page(slug: str) -> ResponseReturnValue:
    """Re-entering a move's URL (no JavaScript, a bookmark, a reload after POST): show that move's result."""
    if next((m for m in moves() if m.slug == slug), None) is None:
        abort(404)
    try:
        toggles = Toggles.parse(request.args)
    except PlaygroundInputError:
        toggles = Toggles()
    return redirect(toggles.url(slug) + "#pg-result", code=303)


@bp.get("/playground/custom")
def custom_page() -> ResponseReturnValue:
    """Re-entering the custom move's URL shows the playground at the custom form."""
    return redirect("/playground#pg-custom-heading", code=303)


@bp.post("/playground/custom")
def play_custom_move() -> ResponseReturnValue:
    try:
        toggles = Toggles.parse(request.form)
    except PlaygroundInputError as exc:
        return _bad_input(exc, request.args)
    try:
        values, call = parse_custom(request.form, toggles.played)
    except PlaygroundInputError as exc:
        values = CustomForm(**{k: str(request.form.get(k, "")) for k in CustomForm.__dataclass_fields__})
        return _bad_input(exc, toggles.params, values)
    context = playground_context(toggles.params)
    pg = context["pg"]
    pg.custom = values
    pg.result, values.redeemed = run_custom(call, toggles)
    values.seed = call.seed
    pg.oob = htmx.wants_fragment()
    pg.embedded = _embedded(request.form)
    return htmx.render(PAGE, RESULT, **context)
