"""The project has one MCP client underneath: only `mrtr_client.http_wire` speaks HTTP, and every child whose stderr
is piped has it drained by `mrtr_client.StderrTail`. A second HTTP client, or a piped stderr nobody reads, creeping
back into a product package fails here. Read from git's tracked files (tests/tracked.py), parsed, never imported."""

from __future__ import annotations

import ast

from tests.tracked import ROOT, tracked_under

PRODUCT = ("app.py", "web", "mrtr_cli", "moves", "mrtr_client", "mrtr_settings", "mrtr_stores", "mrtr_toolsets", "mrtr")
#: Modules that open HTTP or TCP connections as a client.
HTTP_CLIENTS = {"http.client", "urllib.request", "requests", "httpx", "aiohttp", "urllib3"}
#: The one home of the project's HTTP client.
HOME = "mrtr_client/http_wire.py"
#: HTTP that is not MCP: the LTI platform's service calls and key sets, and a one-off download of Pyodide.
NOT_MCP = {"web/lti/tool.py", "web/lti/keys.py", "web/build/pyodide_install.py"}


def _modules() -> dict[str, ast.Module]:
    files = [p for p in tracked_under("", suffix=".py")
             if p.relative_to(ROOT).parts[0] in PRODUCT]
    return {p.relative_to(ROOT).as_posix(): ast.parse(p.read_text(encoding="utf-8")) for p in files}


def _imports(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
    return names


def _calls(tree: ast.Module, attribute: str) -> list[ast.Call]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute) and node.func.attr == attribute]


def test_only_the_clients_wire_module_speaks_http() -> None:
    modules = _modules()
    assert HOME in modules and "moves/targets/http.py" in modules, "the tracked-file list is not what it seems"
    speaking = {path for path, tree in modules.items()
                if _imports(tree) & HTTP_CLIENTS or _calls(tree, "create_connection")}
    assert speaking - NOT_MCP == {HOME}


def test_the_checkers_http_target_and_the_client_post_through_the_same_endpoint() -> None:
    modules = _modules()
    for path in ("moves/targets/http.py", "mrtr_client/http_transport.py"):
        names = {node.id for node in ast.walk(modules[path]) if isinstance(node, ast.Name)}
        assert "HttpEndpoint" in names, f"{path} no longer posts through mrtr_client.HttpEndpoint"


def test_every_piped_stderr_is_drained() -> None:
    for path, tree in _modules().items():
        piped = [call for call in _calls(tree, "Popen") for kw in call.keywords
                 if kw.arg == "stderr" and isinstance(kw.value, ast.Attribute) and kw.value.attr == "PIPE"]
        names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
        assert not piped or "StderrTail" in names, f"{path} pipes a child's stderr without a StderrTail reading it"
