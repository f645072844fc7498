"""The app's long-lived objects, built once per app from its config: keys, store, server, tokens.

Also the lab's own: its key ring (derived from the app's for a separate purpose, never accepted by
/mcp) and its tokens (the public demo tokens when MRTR_TOKENS is unset, else lab-only ones), so no
page ever needs a configured secret. Views reach them through `get_services()`; `new_lab_server`
builds a page's server. Nothing here reads a request; nothing here renders.
"""

from __future__ import annotations

import collections
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flask import current_app

from moves.labcodec import LabRing, lab_ring_from
from moves.targets.lab import LabTarget, lab_server, lab_target
from mrtr import KeyRing, MemoryStore, Policy, Server, SqliteStore, ring_from_config, system_clock
from mrtr.catalog import Catalog
from mrtr.keys import default_state_dir
from mrtr.store import RedeemedStore
from mrtr.tools import lesson_catalog

DEFAULT_TOKENS = "bob-token=bob,alice-token=alice"
#: The lab's two principals: the ticket's owner and the other one.
LAB_PRINCIPALS = ("bob", "alice")


class ConfigError(ValueError):
    """The app's configuration is unusable; the message says which setting and why."""


def parse_tokens(value: str) -> dict[str, str]:
    tokens: dict[str, str] = {}
    for pair in value.split(","):
        if not pair.strip():
            continue
        token, sep, principal = pair.partition("=")
        if not sep or not token.strip() or not principal.strip():
            raise ConfigError(f"MRTR_TOKENS entries look like token=principal; got {pair.strip()!r}")
        tokens[token.strip()] = principal.strip()
    if not tokens:
        raise ConfigError("MRTR_TOKENS maps no token to a principal")
    return tokens


def make_store(config: Mapping[str, Any]) -> RedeemedStore:
    # MRTR_REDIS_URL alone is enough to choose Redis; an explicit MRTR_STORE still wins.
    default = "redis" if config.get("MRTR_REDIS_URL") else "sqlite"
    kind = str(config.get("MRTR_STORE") or default).lower()
    if kind == "memory":
        return MemoryStore()
    if kind == "sqlite":
        path = config.get("MRTR_STORE_PATH") or default_state_dir() / "redeemed.sqlite3"
        return SqliteStore(Path(path))
    if kind == "redis":
        from mrtr.redis_store import RedisStore  # only when asked for: redis is optional at runtime

        return RedisStore.from_url(str(config["MRTR_REDIS_URL"]))
    raise ConfigError(f"MRTR_STORE must be memory, sqlite or redis; got {kind!r}")


@dataclass
class ServerLog:
    """The recent server log lines, shown to the learner as a separate panel."""

    limit: int = 200
    lines: collections.deque[str] = field(default_factory=collections.deque)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def write(self, line: str) -> None:
        with self.lock:
            self.lines.append(line)
            while len(self.lines) > self.limit:
                self.lines.popleft()

    def tail(self, n: int = 20) -> list[str]:
        with self.lock:
            return list(self.lines)[-n:]


@dataclass
class Services:
    ring: KeyRing
    store: RedeemedStore
    server: Server
    tokens: dict[str, str]
    catalog: Catalog
    log: ServerLog
    #: The lab's keys: pages sign and seal with these, and /mcp never accepts them.
    lab_ring: LabRing = field(default=None)  # type: ignore[assignment]
    #: token -> principal for the lab's own servers. Public: safe to show on any page.
    lab_tokens: dict[str, str] = field(default_factory=dict)
    #: True when /mcp runs on the public demo tokens (MRTR_TOKENS unset): pages may show those.
    tokens_public: bool = True

    def principal_for(self, token: str | None) -> str | None:
        return self.tokens.get(token) if token else None

    def token_for(self, principal: str) -> str | None:
        return next((t for t, p in self.tokens.items() if p == principal), None)

    def lab_principal_for(self, token: str | None) -> str | None:
        return self.lab_tokens.get(token) if token else None

    def lab_token_for(self, principal: str) -> str:
        return next((t for t, p in self.lab_tokens.items() if p == principal), f"<no lab token for {principal}>")

    def public_mcp_tokens(self) -> dict[str, str]:
        """principal -> token for /mcp, only when those tokens are the public demo ones; else empty."""
        return {p: t for t, p in self.tokens.items()} if self.tokens_public else {}

    def new_lab_server(self, *, clock: Any, single_use: bool = True, sealed: bool = False,
                       verify_signature: bool = True, jti: Any = None) -> Server:
        """A fresh lab server (lab keys, fresh store, the app's catalog) for a page or a class demo."""
        return lab_server(self.lab_ring, clock=clock, single_use=single_use, sealed=sealed,
                          verify_signature=verify_signature, catalog=self.catalog, ttl=self.server.ttl, jti=jti)


    def new_lab_target(self, *, now: float, single_use: bool = True, sealed: bool = False,
                       verify_signature: bool = True, jti: Any = None, store: Any = None) -> LabTarget:
        """A fresh lab target for the move engine (`moves.engine.play`): lab keys, fake clock at `now`."""
        return lab_target(self.lab_ring, now=now, single_use=single_use, sealed=sealed,
                          verify_signature=verify_signature, catalog=self.catalog, ttl=self.server.ttl, jti=jti,
                          store=store, owner=LAB_PRINCIPALS[0], other=LAB_PRINCIPALS[1])


def lab_tokens_for(tokens: Mapping[str, str]) -> tuple[dict[str, str], bool]:
    """The lab's tokens, and whether /mcp's tokens are the public demo ones."""
    if tokens == parse_tokens(DEFAULT_TOKENS):
        return dict(tokens), True
    lab = {}
    for principal in LAB_PRINCIPALS:
        token = f"lab-{principal}-token"
        while token in tokens:
            token = f"lab-{token}"
        lab[token] = principal
    return lab, False


def build_services(config: Mapping[str, Any]) -> Services:
    ring = ring_from_config(config.get("MRTR_SECRET_KEYS"))
    catalog = lesson_catalog()
    if config.get("MRTR_CONFORMANCE_FIXTURES"):
        from mrtr.fixtures import conformance_catalog

        # Fixtures first: the suite probes tools/list's first tool with empty arguments.
        catalog = conformance_catalog().merged(catalog)
    log = ServerLog()
    try:
        ttl = int(config.get("MRTR_TICKET_TTL") or 120)
    except ValueError as exc:
        raise ConfigError("MRTR_TICKET_TTL must be a whole number of seconds") from exc
    store = make_store(config)
    server = Server(ring=ring, store=store, clock=config.get("MRTR_CLOCK") or system_clock, catalog=catalog,
                    policy=Policy(), ttl=ttl, on_log=log.write)
    tokens = parse_tokens(str(config.get("MRTR_TOKENS") or DEFAULT_TOKENS))
    lab_tokens, public = lab_tokens_for(tokens)
    return Services(ring, store, server, tokens, catalog, log, lab_ring_from(ring), lab_tokens, public)


def config_from_env(environ: Mapping[str, str] = os.environ) -> dict[str, Any]:
    keys = ("MRTR_SECRET_KEYS", "MRTR_TICKET_TTL", "MRTR_STORE", "MRTR_STORE_PATH", "MRTR_REDIS_URL",
            "MRTR_TOKENS", "MRTR_CONFORMANCE_FIXTURES", "MRTR_EMBED_ORIGINS", "MRTR_MAX_BODY",
            "MRTR_ALLOWED_ORIGINS", "MRTR_ANONYMOUS_PRINCIPAL", "MRTR_SHIM_WAIT", "MRTR_MOVES_FILE")
    config = {k: environ[k] for k in keys if environ.get(k)}
    if "MRTR_REDIS_URL" in config and "MRTR_STORE" not in config:
        config["MRTR_STORE"] = "redis"  # the URL alone selects Redis (app.py defaults to sqlite)
    return config


def get_services() -> Services:
    return current_app.extensions["mrtr"]
