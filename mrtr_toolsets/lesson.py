"""The lesson's own catalog: the `deploy` tool, one prompt and one resource.

`deploy` is the tool the whole course is about. It is written once, in the 2026-07-28 style, and
serves 2025-11-25 clients through the legacy shim unchanged. It never trusts the ticket's work
until the server has verified it, and it never deploys without a ticket: a "yes" sent on round
one, with nothing minted, is ignored and the question asked properly.
"""

from __future__ import annotations

from typing import Any

from mrtr import CHECK_TITLES, CallContext, Catalog, InputRequired, Prompt, Resource, Tool, as_object, elicit_form

CONFIRM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean", "title": "Yes, deploy"}},
    "required": ["confirm"],
}


def confirm_question(env: str) -> dict[str, Any]:
    return elicit_form(f"Deploy to {env}?", CONFIRM_SCHEMA)


def text_result(text: str, *, is_error: bool = False) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


def deploy(ctx: CallContext) -> dict[str, Any] | InputRequired:
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


def briefing(ctx: CallContext) -> dict[str, Any]:
    env = ctx.string_arg("env")
    return {
        "description": f"Deploy briefing for {env}",
        "messages": [{"role": "user", "content": {"type": "text", "text":
                      f"Write a two-line briefing for the team about the deploy to {env}: what changes, "
                      "and who to call if it goes wrong."}}],
    }


def checks_resource(ctx: CallContext) -> dict[str, Any]:
    lines = [f"{n}. {title}" for n, title in enumerate(CHECK_TITLES.values(), 1)]
    text = "The checks this server runs on every requestState, in order:\n" + "\n".join(lines)
    return {"contents": [{"uri": ctx.target, "mimeType": "text/plain", "text": text}]}


def lesson_catalog() -> Catalog:
    return Catalog(
        tools={"deploy": Tool(
            name="deploy",
            title="Deploy",
            description="Deploy the current build to an environment. Asks the user to confirm first.",
            input_schema={"type": "object", "properties": {"env": {"type": "string", "description":
                          "The environment, for example staging or prod"}}, "required": ["env"]},
            handler=deploy,
        )},
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
