"""The fixtures the official MCP conformance suite calls by name, served by the same core.

Only the app started with `MRTR_CONFORMANCE_FIXTURES=1` merges this catalog in, so the lesson's
own list stays `deploy` and friends. The names, argument shapes and canned texts are the suite's
contract (the official MCP conformance suite, run by tests/web/test_conformance.py); the behaviour
is ours. Every multi-round fixture goes through `ctx.ask`, so its requestState is a real ticket with
every check the lesson teaches: signature, principal, expiry, request binding and single use.
"""

from __future__ import annotations

import base64
import json
import struct
import zlib
from collections.abc import Callable

from mrtr import (
    CallContext,
    Catalog,
    Handler,
    InputRequired,
    JSONObject,
    Prompt,
    Resource,
    ResourceTemplate,
    Tool,
    as_object,
    elicit_form,
    list_roots,
    sample,
)
from mrtr.messages import as_list
from mrtr_toolsets.lesson import text_result

NO_ARGS: JSONObject = {"type": "object", "properties": {}}


def _png_1x1() -> str:
    """A 1x1 red PNG, built here rather than pasted in as an opaque blob."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8-bit RGB
    pixels = zlib.compress(b"\x00\xff\x00\x00")  # filter byte, then one red pixel
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    return base64.b64encode(png).decode()


def _wav_silence(samples: int = 80) -> str:
    """A few milliseconds of 8 kHz mono 8-bit silence as a WAV file."""
    data = b"\x80" * samples
    fmt = struct.pack("<HHIIHH", 1, 1, 8000, 8000, 1, 8)
    wav = b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVE" + b"fmt " + struct.pack("<I", 16) + fmt
    wav += b"data" + struct.pack("<I", len(data)) + data
    return base64.b64encode(wav).decode()


PNG = _png_1x1()
WAV = _wav_silence()


def _schema(**props: str) -> JSONObject:
    return {"type": "object", "properties": {k: {"type": v} for k, v in props.items()}, "required": list(props)}


# -- plain content tools ------------------------------------------------------------------------


def _fixed(result: JSONObject) -> Handler:
    return lambda ctx: json.loads(json.dumps(result))  # a fresh copy per call


def _progress(ctx: CallContext) -> JSONObject:
    for step in (0, 50, 100):
        ctx.progress(step, 100)
    return text_result("Progress reported: 0, 50 and 100 of 100.")


def _echo_region(ctx: CallContext) -> JSONObject:
    return text_result(f"region: {ctx.string_arg('region')}")


JSON_SCHEMA_2020_12: JSONObject = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


# -- input_required fixtures --------------------------------------------------------------------

NAME_Q = elicit_form("What is your name?", _schema(name="string"))
OK_Q = elicit_form("Please confirm.", _schema(ok="boolean"))
COLOR_Q = elicit_form("What is your favourite colour?", _schema(color="string"))
CONTEXT_Q = elicit_form("What context should the prompt use?", _schema(context="string"))
CAPITAL_Q = sample("What is the capital of France?")
GREETING_Q = sample("Write a one-line greeting.")
ROOTS_Q = list_roots()


def _one_round(questions: dict[str, JSONObject],
               finish: Callable[[dict[str, JSONObject]], JSONObject]) -> Handler:
    """A fixture that asks `questions` once and finishes with `finish(answers)` when they are answered."""

    def handler(ctx: CallContext) -> JSONObject | InputRequired:
        answers = ctx.answers(questions)
        if answers is None:
            return ctx.ask(questions, work={}, step="ask")
        return finish(answers)

    return handler


def _greet(answers: dict[str, JSONObject]) -> JSONObject:
    reply = answers["user_name"]
    name = as_object(reply.get("content")).get("name") if reply["action"] == "accept" else None
    return text_result(f"Hello, {name}!" if isinstance(name, str) else f"No name given ({reply['action']}).")


def _multi_round(ctx: CallContext) -> JSONObject | InputRequired:
    state = ctx.state or {}
    step = state.get("step")
    if step == "color":
        answers = ctx.answers({"favorite_color": COLOR_Q})
        work = as_object(state.get("work"))
        if answers is None:
            return ctx.ask({"favorite_color": COLOR_Q}, work=work, step="color")
        name = work.get("name", "someone")
        color = as_object(answers["favorite_color"].get("content")).get("color", "no colour")
        return text_result(f"{name} likes {color}.")
    answers = ctx.answers({"user_name": NAME_Q}) if step == "name" else None
    if answers is None:
        return ctx.ask({"user_name": NAME_Q}, work={}, step="name")
    name = as_object(answers["user_name"].get("content")).get("name", "someone")
    return ctx.ask({"favorite_color": COLOR_Q}, work={"name": name}, step="color")


def _capabilities(ctx: CallContext) -> JSONObject | InputRequired:
    """Ask only what this request's capabilities allow; with none of them, -32021 names sampling."""
    wanted = {"user_name": NAME_Q, "capital_question": CAPITAL_Q}
    questions = {k: q for k, q in wanted.items() if ctx.can_ask(q)} or {"capital_question": CAPITAL_Q}
    answers = ctx.answers(questions)
    if answers is None:
        return ctx.ask(questions, work={}, step="ask")
    return text_result(f"Answered: {', '.join(sorted(answers))}.")


def _prompt_result(answers: dict[str, JSONObject]) -> JSONObject:
    context = as_object(answers["user_context"].get("content")).get("context", "(none)")
    return {
        "description": "A prompt that asked for context first",
        "messages": [{"role": "user", "content": {"type": "text", "text": f"Use this context: {context}"}}],
    }


_missing_capability = _one_round({"capital_question": CAPITAL_Q}, lambda a: text_result("Sampled."))


# -- prompts and resources ----------------------------------------------------------------------


def _user_text(text: str) -> JSONObject:
    return {"role": "user", "content": {"type": "text", "text": text}}


def _prompt_with_arguments(ctx: CallContext) -> JSONObject:
    arg1, arg2 = ctx.string_arg("arg1"), ctx.string_arg("arg2")
    return {"messages": [_user_text(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")]}


def _prompt_with_resource(ctx: CallContext) -> JSONObject:
    uri = ctx.string_arg("resourceUri", max_length=2000)
    return {
        "messages": [
            {
                "role": "user",
                "content": {
                    "type": "resource",
                    "resource": {
                        "uri": uri,
                        "mimeType": "text/plain",
                        "text": "Embedded resource content for testing.",
                    },
                },
            },
            _user_text("Please process the embedded resource above."),
        ]
    }


def _template_read(ctx: CallContext) -> JSONObject:
    variables = TEMPLATE.match(ctx.target) or {}
    item = variables.get("id", "")
    body = json.dumps({"id": item, "templateTest": True, "data": f"Data for ID: {item}"}, separators=(",", ":"))
    return {"contents": [{"uri": ctx.target, "mimeType": "application/json", "text": body}]}


TEMPLATE = ResourceTemplate(
    "test://template/{id}/data",
    "template-data",
    _template_read,
    description="A resource per id, read through a template.",
    mime_type="application/json",
)


def _tool(name: str, description: str, handler: Handler, schema: JSONObject | None = None) -> Tool:
    return Tool(name=name, description=description, handler=handler, input_schema=schema or dict(NO_ARGS))


def _prompt(name: str, description: str, handler: Handler, *arguments: str) -> Prompt:
    return Prompt(
        name=name,
        description=description,
        handler=handler,
        arguments=tuple({"name": a, "description": a, "required": True} for a in arguments),
    )


def _content_tools() -> list[Tool]:
    """The tools whose results carry each kind of content, or a tool error."""
    embedded: JSONObject = {
        "uri": "test://embedded-resource",
        "mimeType": "text/plain",
        "text": "This is an embedded resource content.",
    }
    return [
        _tool(
            "test_simple_text",
            "Returns one text block.",
            _fixed(text_result("This is a simple text response for testing.")),
        ),
        _tool(
            "test_image_content",
            "Returns a 1x1 PNG.",
            _fixed({"content": [{"type": "image", "data": PNG, "mimeType": "image/png"}]}),
        ),
        _tool(
            "test_audio_content",
            "Returns a short WAV.",
            _fixed({"content": [{"type": "audio", "data": WAV, "mimeType": "audio/wav"}]}),
        ),
        _tool(
            "test_embedded_resource",
            "Returns an embedded resource.",
            _fixed({"content": [{"type": "resource", "resource": embedded}]}),
        ),
        _tool(
            "test_multiple_content_types",
            "Returns text, an image and a resource.",
            _fixed(
                {
                    "content": [
                        {"type": "text", "text": "Multiple content types test:"},
                        {"type": "image", "data": PNG, "mimeType": "image/png"},
                        {
                            "type": "resource",
                            "resource": {
                                "uri": "test://mixed-content-resource",
                                "mimeType": "application/json",
                                "text": '{"test":"data","value":123}',
                            },
                        },
                    ]
                }
            ),
        ),
        _tool(
            "test_error_handling",
            "Always fails as a tool error.",
            _fixed(text_result("This tool intentionally returns an error for testing", is_error=True)),
        ),
    ]


def _behaviour_tools() -> list[Tool]:
    """The tools that report progress, log nothing, carry a 2020-12 schema or a header parameter, or need sampling."""
    return [
        _tool("test_tool_with_progress", "Reports progress 0, 50, 100 of 100.", _progress),
        _tool(
            "test_logging_tool",
            "Does its work without logging (no logLevel was asked for).",
            _fixed(text_result("Done, and nothing was logged.")),
        ),
        _tool(
            "json_schema_2020_12_tool",
            "Has a JSON Schema 2020-12 inputSchema.",
            _fixed(text_result("ok")),
            JSON_SCHEMA_2020_12,
        ),
        _tool(
            "test_header_param",
            "Echoes a region that is mirrored in the Mcp-Param-Region header.",
            _echo_region,
            {
                "type": "object",
                "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
                "required": ["region"],
            },
        ),
        _tool("test_missing_capability", "Needs sampling: without it the answer is -32021.", _missing_capability),
    ]


def _input_required_tools() -> list[Tool]:
    """The tools that ask the client with `input_required`: one question, several, several rounds, a ticket."""
    return [
        _tool(
            "test_streaming_elicitation",
            "Asks for a name with input_required, never on the stream.",
            _one_round({"user_name": NAME_Q}, _greet),
        ),
        _tool("test_input_required_result_elicitation", "Asks for a name.", _one_round({"user_name": NAME_Q}, _greet)),
        _tool(
            "test_input_required_result_sampling",
            "Asks the client's model a question.",
            _one_round({"capital_question": CAPITAL_Q}, lambda a: text_result("Sampling answered.")),
        ),
        _tool(
            "test_input_required_result_list_roots",
            "Asks for the client's roots.",
            _one_round(
                {"client_roots": ROOTS_Q},
                lambda a: text_result(f"{len(as_list(a['client_roots'].get('roots')))} root(s)."),
            ),
        ),
        _tool(
            "test_input_required_result_request_state",
            "Asks for confirmation, carrying a ticket.",
            _one_round({"confirm": OK_Q}, lambda a: text_result("state-ok")),
        ),
        _tool(
            "test_input_required_result_multiple_inputs",
            "Asks three questions of three kinds at once.",
            _one_round(
                {"user_name": NAME_Q, "greeting": GREETING_Q, "client_roots": ROOTS_Q},
                lambda a: text_result("All three answered."),
            ),
        ),
        _tool("test_input_required_result_multi_round", "Asks a name, then a colour.", _multi_round),
        _tool(
            "test_input_required_result_tampered_state",
            "Asks for confirmation; a tampered ticket is refused.",
            _one_round({"confirm": OK_Q}, lambda a: text_result("state-ok")),
        ),
        _tool(
            "test_input_required_result_capabilities", "Asks only what the request's capabilities allow.", _capabilities
        ),
    ]


def _prompts() -> list[Prompt]:
    return [
        _prompt(
            "test_simple_prompt",
            "A prompt without arguments.",
            _fixed({"messages": [_user_text("This is a simple prompt for testing.")]}),
        ),
        _prompt("test_prompt_with_arguments", "A prompt with two arguments.", _prompt_with_arguments, "arg1", "arg2"),
        _prompt(
            "test_prompt_with_embedded_resource", "A prompt embedding a resource.", _prompt_with_resource, "resourceUri"
        ),
        _prompt(
            "test_prompt_with_image",
            "A prompt with an image.",
            _fixed(
                {
                    "messages": [
                        {"role": "user", "content": {"type": "image", "data": PNG, "mimeType": "image/png"}},
                        _user_text("Please analyze the image above."),
                    ]
                }
            ),
        ),
        _prompt(
            "test_input_required_result_prompt",
            "A prompt that asks for context first.",
            _one_round({"user_context": CONTEXT_Q}, _prompt_result),
        ),
    ]


def _resources() -> list[Resource]:
    return [
        Resource(
            "test://static-text",
            "static-text",
            _fixed(
                {
                    "contents": [
                        {
                            "uri": "test://static-text",
                            "mimeType": "text/plain",
                            "text": "This is the content of the static text resource.",
                        }
                    ]
                }
            ),
            description="A static text resource.",
        ),
        Resource(
            "test://static-binary",
            "static-binary",
            _fixed({"contents": [{"uri": "test://static-binary", "mimeType": "image/png", "blob": PNG}]}),
            description="A static binary resource.",
            mime_type="image/png",
        ),
    ]


def conformance_catalog() -> Catalog:
    """Every fixture the suite calls by name, with the resource template."""
    return Catalog(
        tools={t.name: t for t in [*_content_tools(), *_behaviour_tools(), *_input_required_tools()]},
        prompts={p.name: p for p in _prompts()},
        resources={r.uri: r for r in _resources()},
        templates={TEMPLATE.uri_template: TEMPLATE},
    )
