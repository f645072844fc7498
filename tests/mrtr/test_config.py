"""One reader for every MRTR_* setting: typed values, the store rule written once, errors that name the setting."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from mrtr import DEFAULT_TTL, MemoryStore
from mrtr_settings.environment import SETTINGS, ConfigError, Settings, open_store, read_settings
from mrtr_stores.redeemed_sqlite import SqliteStore

MRTR = Path(__file__).resolve().parents[2] / "mrtr"


def test_unset_settings_take_their_defaults():
    settings = read_settings({})
    assert settings.ticket_ttl == DEFAULT_TTL and settings.store_kind == "sqlite" and settings.principal == "bob"
    assert settings.tokens is None and settings.public is False and settings.check_runs == 5


@pytest.mark.parametrize(("environ", "overrides", "kind"), [
    ({"MRTR_REDIS_URL": "redis://127.0.0.1:1/0"}, {}, "redis"),
    ({}, {"MRTR_REDIS_URL": "redis://127.0.0.1:1/0"}, "redis"),  # through an app's test config too
    ({"MRTR_REDIS_URL": "redis://127.0.0.1:1/0", "MRTR_STORE": "memory"}, {}, "memory"),  # explicit wins
    ({"MRTR_STORE": "sqlite"}, {"MRTR_STORE": "memory"}, "memory"),  # the override wins per setting
    ({"MRTR_STORE": "MEMORY"}, {}, "memory"),
    ({}, {}, "sqlite"),
])
def test_a_redis_url_alone_selects_redis(environ, overrides, kind):
    assert read_settings(environ, overrides).store_kind == kind


def test_open_store_builds_what_the_settings_name(tmp_path):
    assert isinstance(open_store(read_settings({"MRTR_STORE": "memory"})), MemoryStore)
    store = open_store(read_settings({"MRTR_STORE_PATH": str(tmp_path / "r.sqlite3")}))
    assert isinstance(store, SqliteStore) and (tmp_path / "r.sqlite3").exists()
    with pytest.raises(ConfigError, match="MRTR_REDIS_URL"):
        open_store(Settings(store="redis"))


@pytest.mark.parametrize(("name", "value", "words"), [
    ("MRTR_TICKET_TTL", "two minutes", "MRTR_TICKET_TTL must be a whole number"),
    ("MRTR_TICKET_TTL", "0", "MRTR_TICKET_TTL must be at least 1"),
    ("MRTR_STORE", "postgres", "MRTR_STORE must be memory, sqlite or redis"),
    ("MRTR_TOKENS", "just-a-token", "MRTR_TOKENS entries look like token=principal"),
    ("MRTR_PUBLIC", "maybe", "MRTR_PUBLIC must be one of"),
    ("MRTR_CHECK_WINDOW", "nan", "MRTR_CHECK_WINDOW must be a finite number"),
    ("MRTR_SHIM_WAIT", "-1", "MRTR_SHIM_WAIT must be a finite number"),
    ("MRTR_MAX_BODY", "1e6", "MRTR_MAX_BODY must be a whole number"),
])
def test_an_unusable_setting_is_named_in_the_error(name, value, words):
    with pytest.raises(ConfigError, match=words):
        read_settings({name: value})


def test_values_are_typed():
    settings = read_settings({"MRTR_TICKET_TTL": "30", "MRTR_TOKENS": "a=bob, b=alice", "MRTR_PUBLIC": "yes",
                              "MRTR_CHECK_WINDOW": "60", "MRTR_MOVES_FILE": "/x/moves.toml", "MRTR_STORE": ""})
    assert settings.ticket_ttl == 30 and settings.tokens == {"a": "bob", "b": "alice"} and settings.public is True
    assert settings.check_window == 60.0 and settings.moves_file == Path("/x/moves.toml")
    assert settings.store is None  # empty means unset


def test_secrets_never_reach_the_repr():
    settings = read_settings({"MRTR_SECRET_KEYS": "k" * 40, "MRTR_TOKENS": "tok-123=bob",
                              "MRTR_INSTRUCTOR_TOKEN": "teach-456", "MRTR_REDIS_URL": "redis://:pw-789@h/0"})
    shown = repr(settings)
    assert not any(secret in shown for secret in ("k" * 40, "tok-123", "teach-456", "pw-789"))


def test_every_mrtr_setting_in_the_tree_is_in_the_table():
    """No module reads an MRTR_* variable the reader does not know (test seams excepted)."""
    known = {s.name for s in SETTINGS} | {"MRTR_CLOCK", "MRTR_CLASS_CLOCK", "MRTR_CHECK_RESOLVER"}
    root = MRTR.parent
    for folder in ("mrtr", "web", "moves"):
        for path in (root / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("MRTR_") \
                        and node.value.isupper() and node.value.replace("_", "").isalnum() and node.value != "MRTR_":
                    assert node.value in known or node.value == "MRTR_PRINCIPAL", (path, node.value)


def _runtime_imports(path: Path) -> set[str]:
    """The mrtr modules `path` imports when it runs (imports under `if TYPE_CHECKING:` and in functions excluded)."""
    found = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            found |= {node.module} if node.module else {a.name for a in node.names}
    return found - {"__init__"}


def test_the_protocol_core_has_no_import_cycle_and_no_flask():
    graph = {p.stem: _runtime_imports(p) for p in MRTR.glob("*.py") if p.stem not in ("__init__", "__main__")}
    state: dict[str, str] = {}

    def visit(module: str, trail: tuple[str, ...]) -> None:
        assert state.get(module) != "open", f"import cycle: {' -> '.join((*trail, module))}"
        if state.get(module) == "done":
            return
        state[module] = "open"
        for other in graph.get(module, ()):
            visit(other, (*trail, module))
        state[module] = "done"

    for module in graph:
        visit(module, ())
    assert graph["_server"] >= {"_connection", "_handler"} and "tools" not in graph["_server"]
    for path in MRTR.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not any(name.split(".")[0] == "flask" for name in names), path
