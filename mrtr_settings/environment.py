"""Every `MRTR_*` setting, read in one place: typed, validated, and named in every error.

What this module owns: the table of settings (`SETTINGS`: name, type, default, meaning), `read_settings`,
which turns the environment (overlaid with explicit overrides, such as an app's test config) into one
frozen `Settings`, the rule that picks the redeemed store (`Settings.store_kind`: an explicit MRTR_STORE
wins, else a Redis URL alone selects Redis, else SQLite), and `open_store`. The app, the stdio server and
the bench all read their settings through here. It must never import a web framework, and it never keeps
a secret anywhere but the `Settings` it returns (whose repr hides them).

Test seams that are objects rather than text (MRTR_CLOCK, MRTR_CLASS_CLOCK, MRTR_CHECK_RESOLVER) are not
settings: they reach the app through its test config only and are read where they are used.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from mrtr import DEFAULT_TTL, MemoryStore, RedeemedStore
from mrtr_settings.keyfiles import default_state_dir
from mrtr_settings.lti_platforms import LtiPlatform, PlatformsError, parse_platforms
from mrtr_stores.redeemed_sqlite import SqliteStore

STORE_KINDS = ("memory", "sqlite", "redis")
#: The stdio server's principal when MRTR_PRINCIPAL is unset.
DEFAULT_PRINCIPAL = "bob"
#: Streams one process holds open at once, each keeping a server thread while it waits: 2025-11-25
#: calls waiting for their client's answer, presenters' live views (web/site/admission.py). One, which
#: leaves a thread free with scripts/production.sh's default of two.
DEFAULT_HELD_STREAMS = 1
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


class ConfigError(ValueError):
    """A setting is unusable; the message names the setting and says why."""


def parse_tokens(value: str, name: str = "MRTR_TOKENS") -> dict[str, str]:
    """`token=principal,token=principal` as a mapping; a clear error for anything else."""
    tokens: dict[str, str] = {}
    for pair in value.split(","):
        if not pair.strip():
            continue
        token, sep, principal = pair.partition("=")
        if not sep or not token.strip() or not principal.strip():
            raise ConfigError(f"{name} entries look like token=principal; got {pair.strip()!r}")
        tokens[token.strip()] = principal.strip()
    if not tokens:
        raise ConfigError(f"{name} maps no token to a principal")
    return tokens


def _text(name: str, raw: object) -> str:
    return str(raw).strip()


def _http_url(name: str, raw: object) -> str:
    value = str(raw).strip().rstrip("/")
    if not value.startswith(("http://", "https://")) or any(c.isspace() for c in value):
        raise ConfigError(f"{name} must be an http:// or https:// address, for example https://lab.example.org")
    return value


def _whole(minimum: int) -> Callable[[str, object], int]:
    def parse(name: str, raw: object) -> int:
        try:
            value = int(str(raw).strip())
        except ValueError:
            raise ConfigError(f"{name} must be a whole number; got {raw!r}") from None
        if value < minimum:
            raise ConfigError(f"{name} must be at least {minimum}; got {value}")
        return value

    return parse


def _seconds(name: str, raw: object) -> float:
    try:
        value = float(str(raw).strip())
    except ValueError:
        raise ConfigError(f"{name} must be a number of seconds; got {raw!r}") from None
    if not 0 <= value < float("inf"):
        raise ConfigError(f"{name} must be a finite number of seconds, zero or more; got {raw!r}")
    return value


def _flag(name: str, raw: object) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ConfigError(f"{name} must be one of {', '.join(_TRUE + _FALSE)}; got {raw!r}")


def _store(name: str, raw: object) -> str:
    kind = str(raw).strip().lower()
    if kind not in STORE_KINDS:
        raise ConfigError(f"{name} must be memory, sqlite or redis; got {kind!r}")
    return kind


def _path(name: str, raw: object) -> Path:
    return Path(str(raw))


def _ports(name: str, raw: object) -> str:
    """Comma-separated TCP ports, each 1 to 65535, kept as text in a canonical form."""
    ports = [p.strip() for p in str(raw).split(",") if p.strip()]
    if not ports or not all(p.isdigit() and 0 < int(p) < 65536 for p in ports):
        raise ConfigError(f"{name} must be comma-separated port numbers (1 to 65535), like 443,8443; got {raw!r}")
    return ",".join(str(int(p)) for p in ports)


#: A trusted proxy: its address, or the network it speaks from.
ProxyNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_proxies(name: str, raw: object) -> int | tuple[ProxyNetwork, ...]:
    """MRTR_TRUSTED_PROXIES: a hop count (`1`: one proxy in front, whoever it is) or the proxies' addresses and
    networks (`10.0.0.5,2001:db8::/48`: believe X-Forwarded-* only when the peer is one of them)."""
    text = str(raw).strip()
    if text.isdigit():
        return int(text)
    networks = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            networks.append(ipaddress.ip_network(part, strict=False))
        except ValueError:
            raise ConfigError(f"{name} is a number of proxies, or addresses and networks (10.0.0.5, "
                              f"192.0.2.0/24, 2001:db8::/48) separated by commas; got {part!r}") from None
    if not networks:
        raise ConfigError(f"{name} names no proxy; got {raw!r}")
    return tuple(networks)


def _tokens(name: str, raw: object) -> dict[str, str]:
    return parse_tokens(str(raw), name)


def _lti_platforms(name: str, raw: object) -> tuple[LtiPlatform, ...]:
    try:
        return parse_platforms(name, raw)
    except PlatformsError as exc:
        raise ConfigError(str(exc)) from None


@dataclass(frozen=True)
class Setting:
    name: str
    parse: Callable[[str, object], object]
    doc: str


#: Every setting (docs/deploy/configuration.md says what each means). The field of `Settings` is the name without
#: its `MRTR_` prefix, in lower case; its default is the field's default.
SETTINGS: tuple[Setting, ...] = (
    Setting("MRTR_SECRET_KEYS", _text, "comma-separated signing keys, newest first (else a generated key file)"),
    Setting("MRTR_TICKET_TTL", _whole(1), "a ticket's lifetime in seconds"),
    Setting("MRTR_STORE", _store, "the redeemed store: memory, sqlite or redis"),
    Setting("MRTR_STORE_PATH", _path, "the SQLite redeemed store's file"),
    Setting("MRTR_REDIS_URL", _text, "Redis for the redeemed store and the live class (alone it selects Redis)"),
    Setting("MRTR_STATE_DIR", _path, "where generated keys and stores live"),
    Setting("MRTR_TOKENS", _tokens, "token=principal pairs /mcp accepts"),
    Setting("MRTR_PRINCIPAL", _text, "the stdio server's one user"),
    Setting("MRTR_CONFORMANCE_FIXTURES", _flag, "add the conformance suite's fixture tools"),
    Setting("MRTR_MAX_BODY", _whole(1), "the largest request body in bytes"),
    Setting("MRTR_ALLOWED_ORIGINS", _text, "comma-separated extra origins /mcp accepts"),
    Setting("MRTR_ANONYMOUS_PRINCIPAL", _text, "the principal of /mcp requests without a token"),
    Setting("MRTR_SHIM_WAIT", _seconds, "how long /mcp waits for a legacy client's answer"),
    Setting("MRTR_HELD_STREAMS", _whole(0), "streams one process holds open at once, each keeping a thread"),
    Setting("MRTR_EMBED_ORIGINS", _text, "comma-separated origins that may frame the embeds"),
    Setting("MRTR_CONTENT_DIR", _path, "another lessons tree"),
    Setting("MRTR_MOVES_FILE", _path, "another moves.toml"),
    Setting("MRTR_PUBLIC", _flag, "a public deployment: the checker reaches no loopback target"),
    Setting("MRTR_CHECK_HOSTS", _text, "comma-separated hosts the /check page may reach"),
    Setting("MRTR_CHECK_PORTS", _ports, "comma-separated ports listed hosts may be checked on"),
    Setting("MRTR_CHECK_RUNS", _whole(1), "checker runs per visitor per window"),
    Setting("MRTR_CHECK_WINDOW", _seconds, "the checker's rate-limit window in seconds"),
    Setting("MRTR_CHECK_MAX_WAIT", _seconds, "the longest late-move wait on the /check page"),
    Setting("MRTR_CHECK_STATE_DIR", _path, "where /check runs are kept"),
    Setting("MRTR_CHECK_TIMEOUT", _seconds, "the checker's per-request timeout"),
    Setting("MRTR_CLASS_DB", _path, "the live class's SQLite file"),
    Setting("MRTR_CLASS_TTL_HOURS", _seconds, "how long a class stays open, in hours"),
    Setting("MRTR_INSTRUCTOR_TOKEN", _text, "the token a presenter needs to start a class"),
    Setting("MRTR_CLASS_POLL_SECONDS", _seconds, "how often a live stream re-reads the store"),
    Setting("MRTR_CLASS_STREAM_SECONDS", _seconds, "an SSE stream's life before the browser reconnects"),
    Setting("MRTR_MAX_CLASSES", _whole(1), "classes open at once"),
    Setting("MRTR_REPLICA_NAME", _text, "the name every response carries in its MRTR-Replica header"),
    Setting("MRTR_TRUSTED_PROXIES", parse_proxies,
            "proxies in front whose X-Forwarded-* headers are believed: a count, or their addresses/CIDRs"),
    Setting("MRTR_REDIS_WAITERS", _whole(1), "threads of one process waiting inside Redis at once; the rest hear 503"),
    Setting("MRTR_PUBLIC_URL", _http_url,
            "where learners open the app: every absolute address it writes starts there, whatever Host is sent"),
    Setting("MRTR_PROXY_SECRET", _text,
            "X-Forwarded-* are believed only from a request whose X-MRTR-Proxy header carries this secret"),
    Setting("MRTR_LTI_PLATFORMS", _lti_platforms, "LTI 1.3 platforms (JSON, or a JSON file's path); unset: no LTI"),
)


#: Where learners open the app when MRTR_PUBLIC_URL is unset: `scripts/run.sh`'s address.
DEFAULT_PUBLIC_URL = "http://127.0.0.1:5000"


@dataclass(frozen=True)
class Settings:
    """The parsed settings. None means unset (the feature's own fallback applies)."""

    secret_keys: str | None = field(default=None, repr=False)
    ticket_ttl: int = DEFAULT_TTL
    store: str | None = None
    store_path: Path | None = None
    redis_url: str | None = field(default=None, repr=False)
    state_dir: Path | None = None
    tokens: dict[str, str] | None = field(default=None, repr=False)
    principal: str = DEFAULT_PRINCIPAL
    conformance_fixtures: bool = False
    max_body: int | None = None
    allowed_origins: str = ""
    anonymous_principal: str | None = None
    shim_wait: float | None = None
    held_streams: int = DEFAULT_HELD_STREAMS
    embed_origins: str = ""
    content_dir: Path | None = None
    moves_file: Path | None = None
    public: bool = False
    check_hosts: str = ""
    check_ports: str = ""
    check_runs: int = 5
    check_window: float = 600.0
    check_max_wait: float = 300.0
    check_state_dir: Path | None = None
    check_timeout: float | None = None
    class_db: Path | None = None
    class_ttl_hours: float = 12.0
    instructor_token: str | None = field(default=None, repr=False)
    class_poll_seconds: float = 2.0
    class_stream_seconds: float = 30.0
    max_classes: int = 200
    replica_name: str | None = None
    trusted_proxies: int | tuple[ProxyNetwork, ...] = 0
    redis_waiters: int = 1
    lti_platforms: tuple[LtiPlatform, ...] = ()
    public_url: str | None = None
    proxy_secret: str | None = field(default=None, repr=False)

    @property
    def store_kind(self) -> str:
        """The redeemed store: an explicit MRTR_STORE wins, else a Redis URL alone selects Redis, else SQLite."""
        if self.store:
            return self.store
        return "redis" if self.redis_url else "sqlite"

    @property
    def public_base(self) -> str:
        """Where learners open the app: MRTR_PUBLIC_URL, else the development server's own address."""
        return self.public_url or DEFAULT_PUBLIC_URL

    def state_directory(self) -> Path:
        """Where generated keys and stores live: MRTR_STATE_DIR, else the XDG state directory."""
        return self.state_dir if self.state_dir is not None else default_state_dir()


def field_name(setting: str) -> str:
    return setting.removeprefix("MRTR_").lower()


def read_settings(environ: Mapping[str, str] | None = None, overrides: Mapping[str, object] | None = None) -> Settings:
    """The settings from `environ` (default: the process environment), `overrides` winning per name.

    An empty value counts as unset. Raises ConfigError naming the first unusable setting.
    """
    source: dict[str, object] = dict(os.environ if environ is None else environ)
    for name, value in (overrides or {}).items():
        if name.startswith("MRTR_"):
            source[name] = value
    # Each value has the type of the field it is named for, which a table of parsers cannot say per name: the one
    # `Any` here; the assertion at the end of this module keeps the table and the fields in step.
    values: dict[str, Any] = {}
    for setting in SETTINGS:
        raw = source.get(setting.name)
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            continue
        values[field_name(setting.name)] = setting.parse(setting.name, raw)
    return Settings(**values)


def open_store(settings: Settings) -> RedeemedStore:
    """The redeemed store the settings name (see `Settings.store_kind`)."""
    kind = settings.store_kind
    if kind == "memory":
        return MemoryStore()
    if kind == "sqlite":
        return SqliteStore(settings.store_path or settings.state_directory() / "redeemed.sqlite3")
    if not settings.redis_url:
        raise ConfigError("MRTR_STORE=redis needs MRTR_REDIS_URL")
    from mrtr_stores.redeemed_redis import RedisStore  # only when asked for: redis is optional at runtime

    return RedisStore.from_url(settings.redis_url)


assert {field_name(s.name) for s in SETTINGS} == {f.name for f in fields(Settings)}, "SETTINGS and Settings differ"
