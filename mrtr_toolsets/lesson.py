"""The lessons' own catalog: the `deploy` tool, the tools of "Beyond one question", one prompt and one resource.

`deploy` is the tool the whole course is about. It is written once, in the 2026-07-28 style, and
serves 2025-11-25 clients through the legacy shim unchanged. It never trusts the ticket's work
until the server has verified it, and it never deploys without a ticket: a "yes" sent on round
one, with nothing minted, is ignored and the question asked properly.

The third lesson's tools show what one confirmation does not: `provision` asks in two rounds, each on
a ticket of its own (the first is spent when it is answered); `release` asks several questions in one
round; `report` answers its first call with a requestState and nothing to ask (load shedding: another
replica finishes it); `connect` asks for an API key with URL-mode elicitation: the key goes to a page the lab
serves, never through the conversation, and the retry checks the page's completion in the server's own store, never
in what the client says (an `accept` only means the user agreed to go). All follow the answer rule, through
`ctx.answers`, and keep nothing between rounds but the ticket (and, for `connect`, the page's reference in the
completion store). Every server of the app (/mcp, the stdio server, the checker's lab) serves them; `connect` is
there when the catalog is given `Pages` (a completion store and the page's address), which a server wires from its
settings.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from mrtr import (
    CHECK_TITLES,
    CallContext,
    Catalog,
    InputRequired,
    JSONObject,
    Prompt,
    Resource,
    Tool,
    as_object,
    elicit_form,
)

CONFIRM_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean", "title": "Yes, deploy"}},
    "required": ["confirm"],
}


def confirm_question(env: str) -> JSONObject:
    return elicit_form(f"Deploy to {env}?", CONFIRM_SCHEMA)


def text_result(text: str, *, is_error: bool = False) -> JSONObject:
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


def deploy(ctx: CallContext) -> JSONObject | InputRequired:
    """Ask "Deploy to <env>?"; on a confirmed retry, deploy what the verified ticket says."""
    env = ctx.string_arg("env")
    if ctx.state is None:
        return ctx.ask({"confirm": confirm_question(env)}, work={"env": env}, step="confirm")
    # The work comes from the ticket, which the server has verified: that is the point of MRTR.
    work = as_object(ctx.state.get("work"))
    target = str(work.get("env", env))
    questions = {"confirm": confirm_question(target)}
    answers = ctx.answers(questions)
    if answers is None:
        return ctx.ask(questions, work={"env": target}, step="confirm")
    reply = answers["confirm"]
    action = reply.get("action")
    if action == "accept" and as_object(reply.get("content")).get("confirm") is True:
        return text_result(f"deployed to {target}")
    said = "did not tick the box" if action == "accept" else f"chose {action}"
    return text_result(f"nothing was deployed to {target}: the user {said}")


REGIONS = ("eu-west", "us-east", "ap-south")
SIZES = ("small", "large")


def _choice_schema(name: str, title: str, choices: tuple[str, ...]) -> JSONObject:
    return {"type": "object", "properties": {name: {"type": "string", "title": title, "enum": list(choices)}},
            "required": [name]}


def _ended(answer: JSONObject, what: str) -> JSONObject | None:
    """The result that ends the call when the user declined or cancelled, else None."""
    action = answer.get("action")
    return None if action == "accept" else text_result(f"nothing was {what}: the user chose {action}")


def provision(ctx: CallContext) -> JSONObject | InputRequired:
    """Two rounds: the region, then the size. Each round ends on a ticket of its own; answering one spends it."""
    env = ctx.string_arg("env")
    step = ctx.state.get("step") if ctx.state is not None else None
    work = as_object(ctx.state.get("work")) if ctx.state is not None else {}
    if step == "size":
        region = str(work.get("region", ""))
        size_q = {"size": elicit_form(f"Which size for the {env} database in {region}?",
                                      _choice_schema("size", "Size", SIZES))}
        answers = ctx.answers(size_q)
        if answers is None:
            return ctx.ask(size_q, work=work, step="size")
        ended = _ended(answers["size"], "provisioned")
        if ended is not None:
            return ended
        size = as_object(answers["size"].get("content")).get("size")
        return text_result(f"provisioned a {size} {env} database in {region}")
    region_q = {"region": elicit_form(f"Which region for the new {env} database?",
                                      _choice_schema("region", "Region", REGIONS))}
    answers = ctx.answers(region_q) if step == "region" else None
    if answers is None:
        return ctx.ask(region_q, work={"env": env}, step="region")
    ended = _ended(answers["region"], "provisioned")
    if ended is not None:
        return ended
    region = str(as_object(answers["region"].get("content")).get("region"))
    # Round two: a new question on a new ticket. The one just answered was spent by ctx.answers.
    size_q = {"size": elicit_form(f"Which size for the {env} database in {region}?",
                                  _choice_schema("size", "Size", SIZES))}
    return ctx.ask(size_q, work={"env": env, "region": region}, step="size")


RELEASE_QUESTIONS_SCHEMAS: dict[str, JSONObject] = {
    "notes": {"type": "object", "properties": {"notes": {"type": "string", "title": "Release notes",
                                                        "maxLength": 500}}, "required": ["notes"]},
    "notify": {"type": "object", "properties": {"notify": {"type": "boolean", "title": "Tell the team"}},
               "required": ["notify"]},
}


def release(ctx: CallContext) -> JSONObject | InputRequired:
    """Several questions in one round, each under a key of its own; a missing one asks the round again."""
    version = ctx.string_arg("version", max_length=40)
    questions = {"notes": elicit_form(f"Release notes for {version}?", RELEASE_QUESTIONS_SCHEMAS["notes"]),
                 "notify": elicit_form(f"Tell the team about {version}?", RELEASE_QUESTIONS_SCHEMAS["notify"])}
    answers = ctx.answers(questions) if ctx.state is not None else None
    if answers is None:
        return ctx.ask(questions, work={"version": version}, step="release")
    for key in questions:
        ended = _ended(answers[key], "released")
        if ended is not None:
            return ended
    notes = as_object(answers["notes"].get("content")).get("notes")
    notify = as_object(answers["notify"].get("content")).get("notify") is True
    return text_result(f"released {version} ({len(str(notes))} characters of notes; "
                       f"{'the team was told' if notify else 'nobody was told'})")


def report(ctx: CallContext) -> JSONObject | InputRequired:
    """Load shedding: the first call gets only a requestState (nothing to ask), and its retry finishes the work,
    on whichever replica it reaches. The retry carries no answers; reading none spends the ticket."""
    period = ctx.string_arg("period", max_length=40)
    if ctx.state is None:
        return ctx.ask({}, work={"period": period}, step="queued")
    ctx.answers({})
    period = str(as_object(ctx.state.get("work")).get("period", period))
    return text_result(f"report for {period}: ready")


class Completions(Protocol):
    """What `connect` needs of a completion store (mrtr_stores/completions.py keeps this contract)."""

    def open(self, ref: str, now: float, owner: str = "") -> None: ...

    def is_open(self, ref: str, now: float) -> bool: ...

    def is_complete(self, ref: str, now: float) -> bool: ...


@dataclass(frozen=True)
class Pages:
    """The lab's out-of-band page: where its completions are kept, and its address for a reference."""

    completions: Completions
    url: Callable[[str], str]


def elicit_url(message: str, url: str) -> JSONObject:
    """A URL-mode question (2026-07-28: no elicitationId; the answer is only the user's action)."""
    return {"method": "elicitation/create", "params": {"mode": "url", "message": message, "url": url}}


def connect_tool(pages: Pages) -> Tool:
    """`connect`: an API key, asked for with URL mode, since a form must never collect a secret."""

    def question(service: str, ref: str) -> dict[str, JSONObject]:
        return {"key": elicit_url(f"Open the lab's page to enter the API key for {service}.", pages.url(ref))}

    def fresh(ctx: CallContext, service: str) -> InputRequired:
        """A new page reference, kept in the completion store and sealed in the ticket with the work."""
        ref = secrets.token_urlsafe(16)
        if ctx.can_ask(question(service, ref)["key"]):  # a form-only client gets -32021 from ask, with nothing kept
            pages.completions.open(ref, ctx.now, ctx.principal)  # each principal's pages capped apart
        return ctx.ask(question(service, ref), work={"service": service, "ref": ref}, step="key")

    def connect(ctx: CallContext) -> JSONObject | InputRequired:
        service = ctx.string_arg("service", max_length=40)
        if ctx.state is None:
            return fresh(ctx, service)
        work = as_object(ctx.state.get("work"))
        service, ref = str(work.get("service", service)), str(work.get("ref", ""))
        answers = ctx.answers(question(service, ref))
        if answers is None:
            return ctx.ask(question(service, ref), work=work, step="key")
        ended = _ended(answers["key"], "connected")
        if ended is not None:
            return ended
        # "accept" means the user agreed to open the page, not that they finished it: the server's own store says.
        if pages.completions.is_complete(ref, ctx.now):
            return text_result(f"connected {service}: the key was entered on the lab's page and never crossed "
                               "this conversation")
        if pages.completions.is_open(ref, ctx.now):
            return ctx.ask(question(service, ref), work=work, step="key")
        return fresh(ctx, service)  # the page's reference expired: a new page, a new ticket

    return Tool(name="connect", title="Connect a service",
                description="Connect the deploy pipeline to a service. Its API key is entered on the lab's own "
                            "page (URL-mode elicitation), never in the conversation.",
                input_schema={"type": "object", "properties": {"service": {
                    "type": "string", "description": "The service, for example billing"}}, "required": ["service"]},
                handler=connect)


def briefing(ctx: CallContext) -> JSONObject:
    env = ctx.string_arg("env")
    return {
        "description": f"Deploy briefing for {env}",
        "messages": [{"role": "user", "content": {"type": "text", "text":
                      f"Write a two-line briefing for the team about the deploy to {env}: what changes, "
                      "and who to call if it goes wrong."}}],
    }


def checks_resource(ctx: CallContext) -> JSONObject:
    lines = [f"{n}. {title}" for n, title in enumerate(CHECK_TITLES.values(), 1)]
    text = "The checks this server runs on every requestState, in order:\n" + "\n".join(lines)
    return {"contents": [{"uri": ctx.target, "mimeType": "text/plain", "text": text}]}


@dataclass(frozen=True)
class ToolStory:
    """The words a page tells a tool's work with, so no sentence about provision talks of deploying.

    Each is a template over the call's arguments ("{env}", "{version}"); `words` fills them in. The words name
    the work only: what a move did to the ticket, and what the server answered, come from the play itself.
    """

    doing: str  # "deploying {env}": what the call asks for, after "a yes to"
    done: str  # "{env} is deployed": the work, done
    did: str  # "deployed": the verb, after "the server"
    work: str  # "the deploy": the work, as a noun

    def words(self, arguments: JSONObject) -> dict[str, str]:
        """The templates filled with `arguments` (an argument the call lacks reads as its own name)."""
        values = {str(k): str(v) for k, v in arguments.items()}

        class _Named(dict[str, str]):
            def __missing__(self, key: str) -> str:
                return key

        named = _Named(values)
        return {"doing": self.doing.format_map(named), "done": self.done.format_map(named), "did": self.did,
                "work": self.work.format_map(named)}


#: The story words of the tools whose questions a move can answer (`report` asks nothing, `connect` asks on a page).
STORIES: dict[str, ToolStory] = {
    "deploy": ToolStory("deploying {env}", "{env} is deployed", "deployed", "the deploy"),
    "provision": ToolStory("provisioning a {env} database", "a {env} database is provisioned", "provisioned",
                           "the database"),
    "release": ToolStory("releasing {version}", "{version} is released", "released", "the release"),
}


def third_lesson_tools() -> dict[str, Tool]:
    """The tools of "Beyond one question"."""
    def schema(name: str, description: str) -> JSONObject:
        return {"type": "object", "properties": {name: {"type": "string", "description": description}},
                "required": [name]}

    return {
        "provision": Tool(name="provision", title="Provision a database",
                          description="Provision a database: asks for the region, then, in a second round, the size.",
                          input_schema=schema("env", "The environment, for example staging"), handler=provision),
        "release": Tool(name="release", title="Release",
                        description="Release a version: asks for the notes and whether to tell the team, in one round.",
                        input_schema=schema("version", "The version, for example 1.4.0"), handler=release),
        "report": Tool(name="report", title="Deploy report",
                       description="Build a deploy report. A busy replica hands the work on with a requestState.",
                       input_schema=schema("period", "The period, for example this week"), handler=report),
    }


def lesson_catalog(pages: Pages | None = None) -> Catalog:
    """The lessons' tools, prompt and resource; `connect` too when the server has an out-of-band page (`pages`)."""
    extra = {"connect": connect_tool(pages)} if pages is not None else {}
    return Catalog(
        tools={"deploy": Tool(
            name="deploy",
            title="Deploy",
            description="Deploy the current build to an environment. Asks the user to confirm first.",
            input_schema={"type": "object", "properties": {"env": {"type": "string", "description":
                          "The environment, for example staging or prod"}}, "required": ["env"]},
            handler=deploy,
        ), **third_lesson_tools(), **extra},
        prompts={"deploy-briefing": Prompt(
            name="deploy-briefing",
            description="A short briefing for the team before a deploy.",
            arguments=({"name": "env", "description": "The environment", "required": True},),
            handler=briefing,
        )},
        resources={"mrtr://lab/checks": Resource(
            uri="mrtr://lab/checks", name="ticket-checks",
            description="The checks the server runs on requestState, in order.", handler=checks_resource,
        )},
    )
