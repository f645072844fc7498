"""`mrtr call`: the terminal client a server author reaches for, on `mrtr.Client` and `mrtr_client`'s transports.

    mrtr call URL                          list the tools, with their arguments (and why any may not be called)
    mrtr call URL TOOL --arg key=value     call one tool; each question is asked in the terminal
    mrtr call --stdio "CMD" TOOL ...       the same over stdio, the server started from CMD
    mrtr call --every-tool --answer-by-schema URL    every valid tool once, arguments and answers by schema

`--answers` takes scripted answers, `--raw` prints every message as it is sent and received. Any refusal or failure
ends the command with a one-line reason on stderr and a non-zero status: 1 when the call or the server failed,
2 for a usage error. `--every-tool` prints one line per tool and its status is the client's verdict: 1 when the
client refused a tool or a result, or could not finish an exchange; a tool the server answered with an error is
printed as such (the server's verdict on its own tool). This module parses and prints; the protocol is `mrtr.Client`'s.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from mrtr import Client, ClientError, JSONObject, Transport, as_object
from mrtr.client import KeyedAnswerer, Line, declared_capabilities
from mrtr.client_errors import ServerError
from mrtr.forms import arguments_by_schema, fields_of, parse_value
from mrtr.messages import as_list
from mrtr.tooldefs import ToolDef
from mrtr_client import HttpTransport, StdioTransport

from .asking import ScriptedAnswers, TerminalAsker, ask_arguments, by_schema, describe_field

CLIENT_INFO = {"name": "mrtr-call", "version": "1.0"}
#: The conformance suite's context for a client command (its own fixture arguments for the tools it lists).
CONTEXT_VARIABLE = "MCP_CONFORMANCE_CONTEXT"


class UsageError(Exception):
    """The command line cannot be run as given."""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mrtr call", description="Call an MCP server's tools from the terminal, "
                                "answering its questions (MRTR input_required) as they come.")
    p.add_argument("server", nargs="?", help="the server's MCP endpoint URL (or, with --stdio, the tool)")
    p.add_argument("tool", nargs="?", help="the tool to call; leave out to list the tools")
    p.add_argument("--stdio", metavar="CMD", help="start the server from CMD and talk over its stdin and stdout")
    p.add_argument("--arg", action="append", default=[], metavar="KEY=VALUE",
                   help="a tool argument, read by the tool's schema (repeat for each)")
    p.add_argument("--answers", metavar="JSON|FILE", help="scripted answers: {\"key\": answer or [answers]}")
    p.add_argument("--answer-by-schema", action="store_true",
                   help="answer every question from its schema (defaults, first choices); decline URL-mode pages")
    p.add_argument("--every-tool", action="store_true", help="call every valid listed tool once")
    p.add_argument("--raw", action="store_true", help="print every JSON-RPC message sent and received")
    p.add_argument("--legacy", action="store_true",
                   help="use the 2025-11-25 handshake (initialize) instead of server/discover")
    p.add_argument("--token", default=os.environ.get("MRTR_TOKEN"), help="bearer token (default $MRTR_TOKEN)")
    p.add_argument("--max-rounds", type=int, default=10, help="retries of input_required before giving up")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for each response")
    return p


class RawPrinter:
    """A transport that prints each message it moves (`--raw`): `-->` sent, `<--` received."""

    def __init__(self, inner: Transport, out: TextIO) -> None:
        self.inner = inner
        self.out = out

    def send(self, message: JSONObject) -> None:
        self.out.write(f"--> {Line('-->', message).text}\n")
        self.inner.send(message)

    def receive(self, timeout: float) -> JSONObject | None:
        message = self.inner.receive(timeout)
        if message is not None:
            self.out.write(f"<-- {Line('<--', message).text}\n")
        return message


def _script(text: str) -> JSONObject:
    source = text if text.lstrip().startswith("{") else _read(text)
    try:
        script = json.loads(source)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--answers is not JSON: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(script, dict):
        raise UsageError("--answers must be a JSON object keyed by the questions' keys")
    return script


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read --answers file {path}: {exc.strerror}") from None


def arguments_from(pairs: list[str], tool: ToolDef) -> JSONObject:
    """`--arg key=value` pairs, each value read by the tool's schema for that key."""
    fields = {f.name: f for f in fields_of(tool.input_schema)}
    arguments: JSONObject = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--arg takes KEY=VALUE, got {pair!r}")
        field = fields.get(key)
        if field is None:
            raise UsageError(f"{tool.name} has no argument {key!r} (it takes: {', '.join(fields) or 'none'})")
        try:
            arguments[key] = parse_value(field, text)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    return arguments


def list_tools_text(tools: list[ToolDef]) -> str:
    if not tools:
        return "The server lists no tools."
    lines = []
    for tool in tools:
        description = tool.definition.get("description")
        about = description if isinstance(description, str) and description.strip() else tool.title
        lines.append(f"{tool.name}: {' '.join(about.split())}" if about else tool.name)
        if not tool.valid:
            lines.append(f"    not callable: {'; '.join(tool.problems)}")
            continue
        lines.extend(f"    {describe_field(f)}" for f in fields_of(tool.input_schema))
    return "\n".join(lines)


def result_text(result: JSONObject) -> str:
    """A tool result as a person reads it: its text blocks, else its JSON."""
    texts = [t for b in as_list(result.get("content")) if isinstance(t := as_object(b).get("text"), str)]
    if texts:
        return "\n".join(texts)
    shown = {k: v for k, v in result.items() if k not in ("_meta", "resultType")}
    return json.dumps(shown, ensure_ascii=False)


def one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__


def context_calls(environ: Mapping[str, str]) -> dict[str, JSONObject]:
    """The conformance suite's own arguments for tools it lists (`toolCalls` of MCP_CONFORMANCE_CONTEXT)."""
    try:
        context = json.loads(environ.get(CONTEXT_VARIABLE, "") or "{}")
    except json.JSONDecodeError:
        return {}
    calls: dict[str, JSONObject] = {}
    for call in as_list(as_object(context).get("toolCalls")):
        name = as_object(call).get("name")
        if isinstance(name, str):
            calls[name] = as_object(as_object(call).get("arguments"))
    return calls


class Caller:
    """One run of `mrtr call`: the client, how it answers, and where it prints."""

    def __init__(self, args: argparse.Namespace, stdin: TextIO, stdout: TextIO, environ: Mapping[str, str]) -> None:
        self.args = args
        self.stdout = stdout
        self.environ = environ
        self.asker = TerminalAsker(stdin, stdout)
        answerer: KeyedAnswerer = self.asker
        if args.answers:
            answerer = ScriptedAnswers(_script(args.answers), self.asker)
        elif args.answer_by_schema:
            answerer = by_schema
        self.transport = self._transport()
        shown: Transport = RawPrinter(self.transport, stdout) if args.raw else self.transport
        self.client = Client(shown, on_input=answerer, capabilities=declared_capabilities(url_mode=True),
                             client_info=dict(CLIENT_INFO), max_rounds=args.max_rounds, timeout=args.timeout)

    def _transport(self) -> HttpTransport | StdioTransport:
        if self.args.stdio:
            return StdioTransport(self.args.stdio)
        if not self.args.server:
            raise UsageError("give the server's URL, or --stdio \"CMD\"")
        try:
            return HttpTransport(self.args.server, token=self.args.token, timeout=self.args.timeout)
        except ValueError as exc:
            raise UsageError(str(exc)) from None

    def close(self) -> None:
        self.transport.close()

    def run(self) -> int:
        self.client.connect(prefer="legacy" if self.args.legacy else "auto")
        tools = self.client.list_tools()
        if self.args.every_tool:
            return self.every_tool(tools)
        if not self.args.tool:
            self.stdout.write(list_tools_text(tools) + "\n")
            return 0
        tool = self.client.tools.get(self.args.tool)
        if tool is None:
            listed = ", ".join(t.name for t in tools) or "none"
            raise UsageError(f"the server lists no tool {self.args.tool!r} (it lists: {listed})")
        arguments = arguments_from(self.args.arg, tool)
        if not (self.args.answers or self.args.answer_by_schema):
            arguments = ask_arguments(self.asker, tool.input_schema, arguments)
        result = self.client.call_tool(tool.name, arguments)
        self.stdout.write(result_text(result) + "\n")
        if result.get("isError") is True:
            raise ClientError(f"the tool {tool.name} returned an error result")
        return 0

    def every_tool(self, tools: list[ToolDef]) -> int:
        planned = context_calls(self.environ)
        failed = 0
        for tool in tools:
            if not tool.valid:
                self.stdout.write(f"{tool.name}: not called: {'; '.join(tool.problems)}\n")
                failed += 1
                continue
            arguments = planned.get(tool.name, arguments_by_schema(tool.input_schema))
            try:
                result = self.client.call_tool(tool.name, arguments)
            except ServerError as exc:  # the server's own answer, passed on: its verdict, not the client's
                self.stdout.write(f"{tool.name}: server error: {one_line(exc)}\n")
                continue
            except ClientError as exc:
                self.stdout.write(f"{tool.name}: refused: {one_line(exc)}\n")
                failed += 1
                continue
            error = " (isError)" if result.get("isError") is True else ""
            self.stdout.write(f"{tool.name}: complete{error}: {one_line(Exception(result_text(result)))}\n")
        if failed:
            raise ClientError(f"{failed} of {len(tools)} tools were refused or could not be called")
        return 0


def main(argv: list[str], *, stdin: TextIO | None = None, stdout: TextIO | None = None,
         stderr: TextIO | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Run `mrtr call`; returns the exit status (0 done, 1 refused or failed, 2 usage)."""
    out, err = stdout or sys.stdout, stderr or sys.stderr
    args = parser().parse_args(argv)
    if args.stdio and args.server and not args.tool:
        args.server, args.tool = None, args.server
    caller = None
    try:
        caller = Caller(args, stdin or sys.stdin, out, os.environ if environ is None else environ)
        return caller.run()
    except UsageError as exc:
        err.write(f"mrtr call: {one_line(exc)}\n")
        return 2
    except ClientError as exc:
        out.flush()
        err.write(f"error: {one_line(exc)}\n")
        return 1
    finally:
        out.flush()
        if caller is not None:
            caller.close()
