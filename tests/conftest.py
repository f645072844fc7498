"""Test tiers, and the fixtures every test folder shares.

`pytest -m "not browser and not external"` is the fast tier, the edit loop: it needs nothing but this Python and
the Python requirements. Plain `pytest` runs everything. A test is `external` when it needs a process outside
this Python (Node, Redis, Chromium, granian or gunicorn, nginx, or a server we start as a subprocess, such as
`python -m mrtr serve` over stdio) or something fetched from npm (the in-page checker's Pyodide under
instance/, the `pyodide` fixture), and it is marked so at collection in one of three ways:

* its module is listed in EXTERNAL_MODULES below, or carries `pytestmark = pytest.mark.external`;
* the test itself carries `@pytest.mark.external`;
* it uses a fixture in EXTERNAL_FIXTURES (directly or through another fixture).

Nothing is guessed from a test's source. Instead the tier is proven: while a test of the fast tier runs (its
fixtures' set-up and tear-down included), starting any process fails it, loudly, naming the command, except the
linters of tests/test_lint.py (`python -m ruff`, `python -m mypy`) and import-linter, which are Python requirements;
and Pyodide is not there for it even when instance/ holds it, so the fast tier sees what a clean clone sees.
"""

from __future__ import annotations

import _posixsubprocess
import gc
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
import jinja2.bccache
import pytest

from mrtr import FakeClock

if TYPE_CHECKING:
    from flask import Flask
    from flask.testing import FlaskClient

ROOT = Path(__file__).resolve().parent.parent

#: Modules every test of which needs an outside process, and what it is.
EXTERNAL_MODULES = {
    "tests/peers/": "the SDK peers (Python and Node) and the mutation suite's servers, each its own process",
    "tests/deploy/": "scripts/cluster.sh and scripts/production.sh: nginx, granian, Redis",
    "tests/check/test_peers_report.py": "the checker against the peers' processes",
    "tests/web/test_conformance.py": "the MCP conformance suite, through npx",
    "tests/web/test_mcp_sdk_clients.py": "the official SDK clients (Node, and Python as a process) against granian",
    "tests/web/test_replicas_processes.py": "replicas as granian processes",
    "tests/web/test_classroom_redis.py": "redis-server",
    "tests/web/test_production.py": "scripts/production.sh (granian)",
    "tests/mrtr/test_redis_store.py": "redis-server",
    # The build lesson's servers run as the learner runs them: `python server.py` over stdio, or node.
    "tests/lessons/test_build_servers.py": "the checker over stdio against the lesson's server processes",
    "tests/lessons/test_build_mistakes.py": "the checker over stdio against the lesson's server processes",
    "tests/lessons/test_build_breakit.py": "the checker over stdio against the lesson's server processes",
    "tests/lessons/test_build_spec.py": "the lesson's servers as stdio processes",
    "tests/lessons/test_build_typescript.py": "node, and the lesson's TypeScript server processes",
    "tests/lessons/test_client_typescript.py": "node: the client lesson's TypeScript clients under check-client",
}
#: Single tests of modules whose other tests are fast (node ids without parameters), and why.
EXTERNAL_TESTS = {
    "tests/lessons/test_build_in_page.py::test_in_page_verdicts_equal_the_cli_verdicts":
        "compares the in-page checker with the checker over stdio (a server process)",
    "tests/build_runner/test_runner_files.py::"
    "test_the_bundle_runs_the_checker_where_ssl_sqlite3_and_cryptography_are_missing":
        "a fresh interpreter without those modules",
    "tests/mutants/test_mutants.py::test_the_sound_controls_pass_everything_over_stdio":
        "the servers as stdio processes",
    "tests/mutants/test_mutants.py::test_each_mutant_is_flagged_exactly_where_its_mistake_shows_over_stdio":
        "the servers as stdio processes",
    "tests/mutants/test_mutants.py::test_a_process_bound_key_is_never_a_pass_for_the_principal_over_stdio":
        "the servers as stdio processes",
}
#: Fixtures that start an outside process.
EXTERNAL_FIXTURES = frozenset({"served", "body_server", "redis_url", "production_server",
                               "installed",  # tests/packaging: pip builds and installs the wheel in a new venv
                               "pyodide"})  # fetched from npm into instance/ (web.build.pyodide_install)

#: What the fast tier may start: the linters it runs, all of them Python requirements.
LINTERS = frozenset({"ruff", "mypy", "importlinter", "lint-imports"})


def _relative(item: pytest.Item) -> str:
    try:
        return item.path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return item.path.as_posix()


def _is_external(item: pytest.Item) -> bool:
    path = _relative(item)
    if any(path.startswith(module) for module in EXTERNAL_MODULES):
        return True
    if f"{path}::{getattr(item, 'originalname', item.name)}" in EXTERNAL_TESTS:
        return True
    return bool(EXTERNAL_FIXTURES & set(getattr(item, "fixturenames", ())))


def _is_fast(item: pytest.Item) -> bool:
    return item.get_closest_marker("external") is None and item.get_closest_marker("browser") is None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("external") is None and _is_external(item):
            item.add_marker(pytest.mark.external)


# -- the guard: a fast test starts no process ---------------------------------------------------------------


class ProcessInFastTier(RuntimeError):
    """A test of the fast tier started a process."""


#: The fast test running now (set-up, call and tear-down), or None.
_running_fast: list[pytest.Item] = []
_STARTED = pytest.StashKey[list[str]]()


def _allowed(argv: list[str]) -> bool:
    words = [os.fsdecode(a) for a in argv]
    if len(words) >= 3 and words[0] == sys.executable and words[1] == "-m":
        return words[2] in LINTERS
    return bool(words) and Path(words[0]).parent == Path(sys.executable).parent and Path(words[0]).name in LINTERS


def _refuse(what: str) -> None:
    item = _running_fast[-1]
    item.stash.setdefault(_STARTED, []).append(what)
    raise ProcessInFastTier(
        f"{item.nodeid} is in the fast tier but started a process: {what}. If it needs one, mark it external "
        f"(tests/conftest.py: EXTERNAL_MODULES, EXTERNAL_TESTS or EXTERNAL_FIXTURES, or pytest.mark.external).")


def _guarded(name: str, real: Callable[..., Any], argv_of: Callable[..., list[str] | None]) -> Callable[..., Any]:
    def guarded(*args: Any, **kwargs: Any) -> Any:
        if _running_fast:
            argv = argv_of(*args, **kwargs)
            if argv is None or not _allowed(argv):
                _refuse(f"{name}({' '.join(os.fsdecode(a) for a in argv or ())})")
        return real(*args, **kwargs)

    return guarded


class SharedTemplateCode(jinja2.BytecodeCache):
    """Compiled templates kept for every app this process creates. Each app compiles its templates on first use,
    about 1.5 s of a new app's first pages; the tests create hundreds of apps, a server one per process. A
    template whose source changes is compiled again (the cache checks the source's checksum)."""

    def __init__(self) -> None:
        self.code: dict[str, bytes] = {}

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        if bucket.key in self.code:
            bucket.bytecode_from_string(self.code[bucket.key])

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        self.code[bucket.key] = bucket.bytecode_to_string()


def _share_compiled_templates() -> None:
    from flask import Flask

    shared = SharedTemplateCode()
    create = Flask.create_jinja_environment

    def create_jinja_environment(self: Flask) -> Any:
        environment = create(self)
        environment.bytecode_cache = shared
        return environment

    Flask.create_jinja_environment = create_jinja_environment  # type: ignore[method-assign]


def _share_compiled_url_builders() -> None:
    """Every app the tests create shares the URL builders werkzeug compiles for its rules. Registering a rule
    generates and compiles two Python functions that build its URLs, about two thirds of what creating an app
    costs (some 20 ms of its 30, 60 rules); the tests create over a thousand apps. A builder depends only on the
    rule's parsed parts and the names of its defaults (it reads converters through the rule it is bound to), so
    rules that parse alike share one; a rule whose defaults fill its own placeholders is compiled as before."""
    from werkzeug.routing.rules import Rule

    compile_builder = Rule._compile_builder
    built: dict[tuple[object, ...], Callable[..., tuple[str, str]]] = {}

    def shared(self: Rule, append_unknown: bool = True) -> Callable[..., tuple[str, str]]:
        defaults = self.defaults or {}
        if any(dynamic and part in defaults for dynamic, part in self._trace):
            return compile_builder(self, append_unknown)
        key = (self.rule, tuple(self._trace), tuple(sorted(defaults)), append_unknown)
        if key not in built:
            built[key] = compile_builder(self, append_unknown)
        return built[key]

    Rule._compile_builder = shared  # type: ignore[method-assign]


#: A tmpfs for pytest's temporary directories, where the machine has one.
MEMORY_TEMP_ROOT = Path("/dev/shm")


def _temporary_directories_in_memory() -> None:
    """tmp_path and tmp_path_factory on a tmpfs (pytest's documented PYTEST_DEBUG_TEMPROOT), unless TMPDIR or that
    variable already says where. Every app the tests create opens its SQLite files (completions, /check's runs,
    classes) in a fresh state directory, over a thousand apps in all; creating one such file in WAL mode waits for
    the disk to sync, about 24 ms on this machine's disk against 0.2 ms on a tmpfs. Nothing a test checks depends
    on the files surviving a power cut. With xdist the controller sets the root before its workers are given theirs."""
    if "TMPDIR" in os.environ or "PYTEST_DEBUG_TEMPROOT" in os.environ:
        return
    if MEMORY_TEMP_ROOT.is_dir() and os.access(MEMORY_TEMP_ROOT, os.W_OK | os.X_OK):
        os.environ["PYTEST_DEBUG_TEMPROOT"] = str(MEMORY_TEMP_ROOT)


def pytest_configure(config: pytest.Config) -> None:
    """Every way this Python starts a process goes through one of these: subprocess and multiprocessing's
    spawn (fork_exec), multiprocessing's fork and os.spawn* (fork), os.system, posix_spawn. Every app the
    tests create shares its compiled templates and URL builders, and temporary directories are in memory."""
    _temporary_directories_in_memory()
    _temporary_directories_of_our_own()
    _share_compiled_templates()
    _share_compiled_url_builders()
    argv_of = lambda args, *_a, **_k: list(args)  # noqa: E731
    _posixsubprocess.fork_exec = _guarded("exec", _posixsubprocess.fork_exec, argv_of)
    subprocess._fork_exec = _guarded("exec", subprocess._fork_exec, argv_of)  # type: ignore[attr-defined]
    os.fork = _guarded("fork", os.fork, lambda: None)
    os.forkpty = _guarded("forkpty", os.forkpty, lambda: None)
    os.system = _guarded("system", os.system, lambda command: [command])
    os.posix_spawn = _guarded("posix_spawn", os.posix_spawn, lambda path, argv, *_a, **_k: list(argv))
    os.posix_spawnp = _guarded("posix_spawnp", os.posix_spawnp, lambda path, argv, *_a, **_k: list(argv))


def _temporary_directories_of_our_own() -> None:
    """This process's `tempfile` directories in a folder of its own, so what the suite leaves behind is told apart
    from other processes' (another suite running beside it) and removed with the folder at the end."""
    ours = tempfile.mkdtemp(prefix="mrtr-suite-", dir=os.environ.get("PYTEST_DEBUG_TEMPROOT"))  # tmpfs if set
    # Passable, not listable, by other users, as /tmp is: tests/deploy's nginx workers (user nobody) reach their
    # run folder inside it.
    os.chmod(ours, 0o711)
    tempfile.tempdir = ours


def pytest_unconfigure(config: pytest.Config) -> None:
    ours = tempfile.tempdir
    if ours is not None and Path(ours).name.startswith("mrtr-suite-"):
        tempfile.tempdir = None
        shutil.rmtree(ours, ignore_errors=True)


def left_behind() -> list[str]:
    """The `mrtr-*` temporary directories this process made and did not remove (once the unreachable is freed)."""
    gc.collect()
    return sorted(p.name for p in Path(tempfile.gettempdir()).glob("mrtr-*"))


@pytest.fixture(scope="session", autouse=True)
def _the_suite_leaves_no_temporary_directory(request: pytest.FixtureRequest) -> Iterator[None]:
    """Whatever makes a temporary directory (a test app's class files, a server's state) removes it: the suite
    must not fill the machine's temporary folder run after run. Judged on a run with no failure only: a failed
    test's traceback keeps its objects (an app and the directory it owns) alive."""
    before = left_behind()
    yield
    if request.session.testsfailed:
        return
    left = [name for name in left_behind() if name not in before]
    assert not left, f"the tests left these temporary directories behind: {left[:5]} ({len(left)} in all)"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    fast = _is_fast(item)
    if fast:
        _running_fast.append(item)
    try:
        yield
    finally:
        if fast:
            _running_fast.remove(item)


@pytest.fixture(autouse=True)
def _fast_tier_without_pyodide(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
                               tmp_path_factory: pytest.TempPathFactory) -> None:
    """A fast test sees no Pyodide, installed or not: the build lesson's page says how to install it and its files
    answer 404, as on a clean clone. A test that needs Pyodide asks for the `pyodide` fixture (external)."""
    if not _is_fast(request.node):
        return
    from web.build import pyodide_install

    nowhere = tmp_path_factory.getbasetemp() / "no-pyodide"
    for function in (pyodide_install.pyodide_dir, pyodide_install.wheel_path, pyodide_install.is_installed):
        monkeypatch.setattr(function, "__defaults__", (nowhere,))
    monkeypatch.setattr(pyodide_install, "INSTALL_DIR", nowhere)


@pytest.fixture
def pyodide() -> Path:
    """The in-page checker's Pyodide, as web.build.pyodide_install put it under instance/ (scripts/test.sh runs it)."""
    from web.build import pyodide_install

    if not pyodide_install.is_installed():
        pytest.fail("Pyodide is not installed: run .venv/bin/python -m web.build.pyodide_install "
                    "(scripts/test.sh does)")
    return pyodide_install.pyodide_dir()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A process started where the refusal was caught and swallowed still fails the test."""
    outcome = yield
    report = outcome.get_result()
    started = item.stash.get(_STARTED, [])
    if started and report.passed:
        report.outcome = "failed"
        report.longrepr = f"{item.nodeid} is in the fast tier but started a process: {started[0]}"
    started.clear()


# -- the app under test -------------------------------------------------------------------------------------

TEST_KEY = "test-key-0123456789abcdefghijklmnopqrstuvwxyz"
#: The config every in-process app of the tests starts from: a fixed key, an in-memory redeemed store.
APP_CONFIG: dict[str, Any] = {"TESTING": True, "MRTR_SECRET_KEYS": TEST_KEY, "MRTR_STORE": "memory"}


@pytest.fixture
def clock() -> FakeClock:
    """The clock the app (and the core) read: move it to expire tickets, never wait."""
    return FakeClock(1_790_000_000.0)


@pytest.fixture
def make_app(clock: FakeClock, tmp_path: Path) -> Callable[..., Flask]:
    """`make_app(**config)`: the real create_app() with APP_CONFIG and `config` over it, on `clock` (the core's
    and the live class's), every state file (class database, check runs) in this test's tmp_path."""

    from app import create_app  # here, so the core's tests (tests/mrtr) never import Flask

    def make(**config: Any) -> Flask:
        base = {**APP_CONFIG, "MRTR_CLOCK": clock, "MRTR_CLASS_CLOCK": clock, "MRTR_STATE_DIR": str(tmp_path / "state")}
        return create_app({**base, **config})

    return make


@pytest.fixture
def app_config() -> dict[str, Any]:
    """What `app` is configured with besides make_app's defaults: a module overrides this fixture, not `app`."""
    return {}


@pytest.fixture
def app(make_app: Callable[..., Flask], app_config: dict[str, Any]) -> Flask:
    return make_app(**app_config)


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()
