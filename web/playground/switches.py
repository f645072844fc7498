"""The playground's switches: the server's (single use, sealed, the signature check, the clock offset) and the tool
the moves play against, read from a query string or a form, and written back as one (every state has a URL).

What it owns: `Toggles`, `PlaygroundInputError` (a switch that is not one of its values: HTTP 400) and `TOOLS`, the
tools a learner may pick: the first lesson's `deploy` and the third lesson's tools that ask questions the move engine
can answer. Two are not among them: `report` asks nothing (its first retry finishes the call, so there is no answer
for a move to misuse), and `connect`'s question is answered on a web page, outside MCP, which no move can do.
It never plays anything and never renders.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from werkzeug.datastructures import MultiDict

from mrtr import JSON, JSONObject
from mrtr_toolsets.lesson import STORIES

MAX_OFFSET = 600


@dataclass(frozen=True)
class PlayedTool:
    """A tool the playground's moves may play against, with what bob's client sends it."""

    name: str
    lesson: str  # the lesson that teaches it, for the picker
    doing: str  # what round one is, in words: "bob asks to deploy to staging"
    arguments: JSONObject
    other_arguments: JSONObject  # another request's arguments, for the moves that change them
    #: An answer that accepts every question of round one, under each question's key.
    accept: JSONObject = field(default_factory=dict)
    #: Another of these tools that asks when called with the same arguments: where "Spend it on another tool" goes
    #: (None: there is none, and that move is not run, saying so).
    other_tool: str | None = None

    @property
    def keys(self) -> str:
        """The keys round one asks under, in words: "confirm", "notes and notify"."""
        names = list(self.accept)
        return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]

    def words(self) -> dict[str, str]:
        """The words the pages tell this tool's story with (`mrtr_toolsets.lesson.STORIES`), for `{name}` marks."""
        story = STORIES[self.name]
        other = story.words(self.other_arguments)
        return {**story.words(self.arguments), "tool": self.name, "keys": self.keys,
                "other_doing": other["doing"], "other_done": other["done"],
                "other_tool": self.other_tool or "another tool"}

    def answer(self, action: str) -> JSONObject:
        """inputResponses that give `action` (accept, decline or cancel) to every question of round one."""
        if action == "accept":
            return self.accept
        return {key: {"action": action} for key in self.accept}


def _accept(**content: JSON) -> JSONObject:
    return {"action": "accept", "content": content}


TOOLS: dict[str, PlayedTool] = {t.name: t for t in (
    PlayedTool("deploy", "When the server needs input", "bob asks to deploy to staging", {"env": "staging"},
               {"env": "prod"}, {"confirm": _accept(confirm=True)}, other_tool="provision"),
    PlayedTool("provision", "Beyond one question", "bob asks for a staging database (two rounds)",
               {"env": "staging"}, {"env": "prod"}, {"region": _accept(region="eu-west")}, other_tool="deploy"),
    PlayedTool("release", "Beyond one question", "bob releases 1.4.0 (two questions in one round)",
               {"version": "1.4.0"}, {"version": "1.5.0"},
               {"notes": _accept(notes="Faster deploys."), "notify": _accept(notify=True)}),
)}
DEFAULT_TOOL = "deploy"


class PlaygroundInputError(ValueError):
    """The playground form itself is malformed (not the experiment): answered with HTTP 400."""


# -- the switches ----------------------------------------------------------------------------------


def last_value(args: Mapping[str, str], name: str) -> str | None:
    """The last value sent for `name`: a checkbox's value follows its hidden "0" fallback."""
    if isinstance(args, MultiDict):
        values = args.getlist(name)
        return values[-1] if values else None
    value = args.get(name)
    return None if value is None else str(value)


def _flag(args: Mapping[str, str], name: str, default: bool) -> bool:
    value = last_value(args, name)
    if value is None or value == "":
        return default
    if value in ("1", "on", "true"):
        return True
    if value in ("0", "off", "false"):
        return False
    raise PlaygroundInputError(f"{name} must be 1 or 0, got {value[:40]!r}")


@dataclass(frozen=True)
class Toggles:
    single_use: bool = True
    sealed: bool = False
    no_signature: bool = False
    offset: int = 0
    tool: str = DEFAULT_TOOL

    @classmethod
    def parse(cls, args: Mapping[str, str]) -> Toggles:
        """Read the switches; raises PlaygroundInputError on a value that is not one of theirs."""
        raw = last_value(args, "offset")
        offset = 0
        if raw not in (None, ""):
            try:
                offset = int(raw)
            except ValueError:
                raise PlaygroundInputError(
                    f"offset must be a whole number of seconds from 0 to {MAX_OFFSET}, got {raw[:40]!r}"
                ) from None
            if not 0 <= offset <= MAX_OFFSET:
                raise PlaygroundInputError(f"offset must be between 0 and {MAX_OFFSET} seconds, got {offset}")
        tool = last_value(args, "tool") or DEFAULT_TOOL
        if tool not in TOOLS:
            raise PlaygroundInputError(f"tool must be one of {', '.join(TOOLS)}, got {tool[:40]!r}")
        return cls(_flag(args, "single_use", True), _flag(args, "sealed", False),
                   _flag(args, "no_signature", False), offset, tool)

    @property
    def played(self) -> PlayedTool:
        return TOOLS[self.tool]

    @property
    def switches(self) -> dict[str, bool]:
        return {"single_use": self.single_use, "sealed": self.sealed, "verify_signature": not self.no_signature}

    @property
    def params(self) -> dict[str, str]:
        """The switches as query parameters; the tool only when it is not deploy, so older addresses stay the same."""
        params = {"single_use": "1" if self.single_use else "0", "sealed": "1" if self.sealed else "0",
                  "no_signature": "1" if self.no_signature else "0", "offset": str(self.offset)}
        return params if self.tool == DEFAULT_TOOL else {**params, "tool": self.tool}

    @property
    def is_default(self) -> bool:
        """Whether the server's switches are all at their defaults (whichever tool is picked)."""
        return replace(self, tool=DEFAULT_TOOL) == Toggles()

    @property
    def reset_url(self) -> str:
        """The server's switches back to their defaults, the tool kept."""
        return "/playground" + (f"?{urllib.parse.urlencode({'tool': self.tool})}" if self.tool != DEFAULT_TOOL else "")

    @property
    def query(self) -> str:
        return urllib.parse.urlencode(self.params)

    def url(self, move: str | None = None) -> str:
        params = dict(self.params)
        if move:
            params["move"] = move
        return "/playground?" + urllib.parse.urlencode(params)

