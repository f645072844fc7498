"""Shell scripts that replay a move against a real /mcp: its own round one, the real ticket, the move.

The pages' lab servers sign with lab keys, so their tickets are worthless against /mcp. To let a
learner watch the real server refuse, each move comes with a short POSIX-shell script: it calls
/mcp for round one, extracts the requestState /mcp minted, applies the move's edit, waits when
the move is late, and sends the retry. Tokens are `$BOB_TOKEN`-style variables: set in the
script only when they are the public demo tokens. Owns script text only; never imports Flask.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass

from mrtr import JSON, JSONObject, as_object
from mrtr.protocol import MODERN_VERSION

#: Stands in for the real ticket in a retry's JSON until the script puts it there.
TICKET_MARK = "__MRTR_TICKET__"

_EXTRACT = ('import json,sys; t=sys.stdin.read(); '
            't=next((l[5:] for l in t.splitlines() if l.startswith("data:")), t); '
            'print(json.loads(t)["result"]["requestState"])')


def _edit_program(path: str, value: JSON) -> str:
    keys = [k for k in path.split(".") if k]
    return ('import base64,json,sys; p,b,s=sys.argv[1].split("."); '
            'c=json.loads(base64.urlsafe_b64decode(b+"="*(-len(b)%4))); d=c\n'
            f'for k in {json.dumps(keys[:-1])}: d=d.setdefault(k,{{}})\n'
            f'd[{json.dumps(keys[-1])}]={json.dumps(value)}; '
            'e=base64.urlsafe_b64encode(json.dumps(c,sort_keys=True,separators=(",",":")).encode()).decode(); '
            'print(p+"."+e.rstrip("=")+"."+s)')


def token_var(principal: str) -> str:
    """The shell variable that holds `principal`'s token for /mcp: bob -> BOB_TOKEN."""
    return re.sub(r"[^A-Z0-9]", "_", principal.upper()) + "_TOKEN"


@dataclass(frozen=True)
class ScriptStep:
    """One retry the script sends: who sends it, whether it waits past expiry, the message and its ticket edit."""

    principal: str
    message: JSONObject  # requestState holding TICKET_MARK where the real ticket goes (or a literal ticket)
    wait: float = 0  # seconds to sleep before sending (past expiry moves)
    edit: tuple[str, JSON] | None = None  # (dotted payload path, new value): edit the real ticket's payload
    #: The shell variable whose ticket replaces TICKET_MARK: round one's (TICKET), or one a step captured.
    ticket_var: str = "TICKET"
    #: When set, this step is a new round one: the requestState it gets back goes into this variable.
    capture: str | None = None


def _curl(principal: str, message: JSONObject, ticket_var: str = "TICKET") -> str:
    params = as_object(message.get("params"))
    name = params.get("name") if isinstance(params.get("name"), str) else "deploy"
    body = json.dumps(message, separators=(",", ":"), ensure_ascii=False)
    before, mark, after = body.partition(f'"{TICKET_MARK}"')
    data = shlex.quote(before + '"') + f'"${ticket_var}"' + shlex.quote('"' + after) if mark else shlex.quote(body)
    headers = ["Content-Type: application/json", "Accept: application/json, text/event-stream",
               f"MCP-Protocol-Version: {MODERN_VERSION}", f"Mcp-Method: {message.get('method', 'tools/call')}",
               f"Mcp-Name: {name}"]
    lines = ['curl -sS -X POST "$MCP"'] + [f"  -H {shlex.quote(h)}" for h in headers]
    lines += [f'  -H "Authorization: Bearer ${token_var(principal)}"', f"  --data {data}"]
    return " \\\n".join(lines)


def replay_script(*, url: str, title: str, first: JSONObject, owner: str, steps: list[ScriptStep],
                  public_tokens: Mapping[str, str] | None = None) -> str:
    """The whole script. `public_tokens` (principal -> token) are written in; others stay variables."""
    principals = list(dict.fromkeys([owner, *(s.principal for s in steps)]))
    out = [f"# {title}: replayed against the real server on a ticket it mints for you now.",
           f"MCP={shlex.quote(url)}"]
    for principal in principals:
        var = token_var(principal)
        if public_tokens and principal in public_tokens:
            out.append(f"{var}={shlex.quote(public_tokens[principal])}  # the public demo token")
        else:
            out.append(f': "${{{var}:?set {var} to the token of {principal} for this server}}"')
    out += ["# Round one: the server answers input_required and mints a ticket.",
            f"FIRST=$({_curl(owner, first)})",
            f"TICKET=$(printf '%s' \"$FIRST\" | python3 -c {shlex.quote(_EXTRACT)})",
            'echo "ticket: $TICKET"']
    for n, step in enumerate(steps, 1):
        var = step.ticket_var
        if step.edit is not None:
            out.append(f"# Edit the payload ({step.edit[0]} = {json.dumps(step.edit[1])}), keep the old signature.")
            out.append(f'EDITED=$(python3 -c {shlex.quote(_edit_program(*step.edit))} "${var}")')
            var = "EDITED"
        if step.wait > 0:
            out.append(f"sleep {step.wait:g}  # wait until the ticket has expired")
        if step.capture:
            out.append(f"# Message {n} of {len(steps)}, as {step.principal}: a new call, with a ticket of its own.")
            out.append(f"NEXT=$({_curl(step.principal, step.message, var)})")
            out.append(f"{step.capture}=$(printf '%s' \"$NEXT\" | python3 -c {shlex.quote(_EXTRACT)})")
            out.append(f'echo "ticket: ${step.capture}"')
            continue
        out.append(f"# Retry {n} of {len(steps)}, as {step.principal}:")
        out.append(_curl(step.principal, step.message, var))
        out.append("echo")
    return "\n".join(out)
