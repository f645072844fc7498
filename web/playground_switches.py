"""The playground's switches: the server's (single use, sealed, the signature check, the clock offset) and the tool
the moves play against, read from a query string or a form, and written back as one (every state has a URL).

What it owns: `Toggles` and `PlaygroundInputError` (a switch that is not one of its values: HTTP 400). It never
plays anything and never renders.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from werkzeug.datastructures import MultiDict

MAX_OFFSET = 600


class PlaygroundInputError(ValueError):
    """The playground form itself is malformed (not the experiment): answered with HTTP 400."""


# -- the switches ----------------------------------------------------------------------------------


def last_value(args: Mapping[str, Any], name: str) -> str | None:
    """The last value sent for `name`: a checkbox's value follows its hidden "0" fallback."""
    if isinstance(args, MultiDict):
        values = args.getlist(name)
        return values[-1] if values else None
    value = args.get(name)
    return None if value is None else str(value)


def _flag(args: Mapping[str, Any], name: str, default: bool) -> bool:
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

    @classmethod
    def parse(cls, args: Mapping[str, Any]) -> Toggles:
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
        return cls(_flag(args, "single_use", True), _flag(args, "sealed", False),
                   _flag(args, "no_signature", False), offset)

    @property
    def switches(self) -> dict[str, bool]:
        return {"single_use": self.single_use, "sealed": self.sealed, "verify_signature": not self.no_signature}

    @property
    def params(self) -> dict[str, str]:
        return {"single_use": "1" if self.single_use else "0", "sealed": "1" if self.sealed else "0",
                "no_signature": "1" if self.no_signature else "0", "offset": str(self.offset)}

    @property
    def is_default(self) -> bool:
        return self == Toggles()

    @property
    def query(self) -> str:
        return urllib.parse.urlencode(self.params)

    def url(self, move: str | None = None) -> str:
        params = dict(self.params)
        if move:
            params["move"] = move
        return "/playground?" + urllib.parse.urlencode(params)

