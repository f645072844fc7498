"""What no move can see in a build lesson server, read from its source: the learner's step functions.

A black-box checker sends a handful of requests, so it cannot time a comparison: a signature compared with `==`
(or `===`) answers every move as a constant-time one does, yet leaks, byte by byte, how much of a forged
signature was right. This module reads the learner's own source (Python or TypeScript) for that one mistake and
says so, keyed by the function it is in; web/build/routes.py turns a finding into "not done" for the step that writes
that function. It imports no Flask (the in-page checker, web/build/in_browser.py, runs it in the browser), never runs
the code it reads, and a source it cannot parse has no findings (the run itself reports the syntax error).
"""

from __future__ import annotations

import ast
import re

#: The functions whose comparisons must be constant-time, in each track's spelling.
CONSTANT_TIME = ("check_signature", "checkSignature")
EQUALITY = "compares the signature with == (a comparison that stops at the first wrong byte), so the time a " \
           "refusal takes tells an attacker how much of a forged signature was right: let the signer compare " \
           "(SIGNER.unsign, hmac.compare_digest or timingSafeEqual), which takes the same time whatever differs"

_TS_FUNCTION = re.compile(r"^function (?P<name>\w+)\(.*?^}", re.S | re.M)
_TS_COMPARE = re.compile(r"(?P<a>[\w.()\[\]'\"`]+)\s*(?:===|!==|==|!=)\s*(?P<b>[\w.()\[\]'\"`]+)")
_LITERAL = re.compile(r"""^(?:['"`].*['"`]|\d+(?:\.\d+)?|undefined|null|true|false)$""")


def findings(source: str) -> dict[str, str]:
    """{function name: what it gets wrong} for the mistakes only the source shows; empty when there are none."""
    if "def check_signature(" in source:
        return _python(source)
    return _typescript(source)


def _python(source: str) -> dict[str, str]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in CONSTANT_TIME and any(
                _compares_values(n) for n in ast.walk(node)):
            found[node.name] = EQUALITY
    return found


def _is_value(node: ast.expr) -> bool:
    """An operand that may hold secret bytes: not a literal, not a length."""
    if isinstance(node, ast.Constant):
        return False
    return not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len")


def _compares_values(node: ast.AST) -> bool:
    if not isinstance(node, ast.Compare) or not any(isinstance(op, ast.Eq | ast.NotEq) for op in node.ops):
        return False
    operands = [node.left, *node.comparators]
    return all(_is_value(o) for o in operands)


def _typescript(source: str) -> dict[str, str]:
    found = {}
    for match in _TS_FUNCTION.finditer(source):
        if match["name"] not in CONSTANT_TIME:
            continue
        for compare in _TS_COMPARE.finditer(match.group(0)):
            sides = (compare["a"].lstrip("("), compare["b"].rstrip(")"))
            if not any(_LITERAL.match(s) or s.endswith(".length") for s in sides):
                found[match["name"]] = EQUALITY
    return found
