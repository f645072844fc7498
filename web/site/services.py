"""The app's long-lived objects, built once per app from its settings: keys, store, server, tokens.

Also the lab's own: its key ring (derived from the app's for a separate purpose, never accepted by
/mcp) and its tokens (the public demo tokens when MRTR_TOKENS is unset, else lab-only ones), so no
page ever needs a configured secret. Views reach them through `get_services()`; `new_lab_target`
builds a page's lab target. Nothing here reads a request; nothing here renders.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from flask import current_app

from moves.labcodec import LabRing, lab_ring_from
from moves.targets.in_process import LabTarget, lab_target
from mrtr import Catalog, Clock, KeyRing, RedeemedStore, Server, system_clock
from mrtr_settings.environment import ConfigError, Settings, open_store, parse_tokens
from mrtr_settings.keyfiles import ring_from_config
from mrtr_settings.stores import open_completions, page_url
from mrtr_stores.completions import CompletionStore
from mrtr_toolsets.lesson import Pages, lesson_catalog

__all__ = ["ConfigError", "Services", "build_services", "get_services", "get_settings", "parse_tokens"]

DEFAULT_TOKENS = "bob-token=bob,alice-token=alice"
SETTINGS_KEY = "mrtr.settings"
#: The lab's two principals: the ticket's owner and the other one.
LAB_PRINCIPALS = ("bob", "alice")


@dataclass
class Services:
    ring: KeyRing
    server: Server
    tokens: dict[str, str]
    #: The lab's keys: pages sign and seal with these, and /mcp never accepts them.
    lab_ring: LabRing
    #: Where the out-of-band page (web/out_of_band/routes.py) records the URL-mode steps users finished.
    completions: CompletionStore
    #: token -> principal for the lab's own servers. Public: safe to show on any page.
    lab_tokens: dict[str, str] = field(default_factory=dict)
    #: True when /mcp runs on the public demo tokens (MRTR_TOKENS unset): pages may show those.
    tokens_public: bool = True

    def principal_for(self, token: str | None) -> str | None:
        return self.tokens.get(token) if token else None

    def lab_principal_for(self, token: str | None) -> str | None:
        return self.lab_tokens.get(token) if token else None

    def lab_token_for(self, principal: str) -> str:
        return next((t for t, p in self.lab_tokens.items() if p == principal), f"<no lab token for {principal}>")

    def public_mcp_tokens(self) -> dict[str, str]:
        """principal -> token for /mcp, only when those tokens are the public demo ones; else empty."""
        return {p: t for t, p in self.tokens.items()} if self.tokens_public else {}

    def new_lab_target(self, *, now: float, single_use: bool = True, sealed: bool = False,
                       verify_signature: bool = True, jti: Callable[[], str] | None = None,
                       store: RedeemedStore | None = None, catalog: Catalog | None = None) -> LabTarget:
        """A fresh lab target for the move engine (`moves.engine.play`): lab keys, fake clock at `now`, the app's
        catalog unless told another."""
        return lab_target(self.lab_ring, now=now, single_use=single_use, sealed=sealed,
                          verify_signature=verify_signature, catalog=catalog or self.server.catalog,
                          ttl=self.server.ttl, jti=jti, store=store, owner=LAB_PRINCIPALS[0], other=LAB_PRINCIPALS[1])


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


def build_services(settings: Settings, *, clock: Clock | None = None) -> Services:
    """The app's services from its settings; `clock` is a test seam (default: the system clock)."""
    ring = ring_from_config(settings.secret_keys, settings.state_directory())
    completions = open_completions(settings)
    catalog = lesson_catalog(Pages(completions, page_url(settings)))
    if settings.conformance_fixtures:
        from mrtr_toolsets.conformance import conformance_catalog

        # Fixtures first: the suite probes tools/list's first tool with empty arguments.
        catalog = conformance_catalog().merged(catalog)
    server = Server(ring=ring, store=open_store(settings), clock=clock or system_clock, catalog=catalog,
                    ttl=settings.ticket_ttl)
    tokens = settings.tokens or parse_tokens(DEFAULT_TOKENS)
    lab_tokens, public = lab_tokens_for(tokens)
    return Services(ring, server, tokens, lab_ring_from(ring), completions, lab_tokens, public)



def get_settings() -> Settings:
    """The app's settings, read once at start-up by `mrtr_settings.environment.read_settings`."""
    settings: Settings = current_app.extensions[SETTINGS_KEY]
    return settings


def get_services() -> Services:
    services: Services = current_app.extensions["mrtr"]
    return services
