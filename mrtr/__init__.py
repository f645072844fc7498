"""mrtr: a sans-IO MCP server, client and ticket codec for Multi Round-Trip Requests.

Messages in, messages out, and the trace of every ticket check alongside. The package never
imports a web framework, opens no sockets or files, and reads time only through the clock it is
given; adapters (the Flask app, the stdio server in `mrtr_cli`) move the bytes.

    server = Server(ring=KeyRing([key]), store=MemoryStore(), clock=system_clock, catalog=catalog)
    exchange = server.handle(message, principal="alice")   # an Exchange: messages, trace, log
    exchange.input_required                               # typed, when the call asks for input

What a server or client author needs is named here. The public submodules are references for
adapters, stores and tools that look closer: `mrtr.protocol` (versions, `_meta` keys, limits),
`mrtr.messages` (the wire's types and builders), `mrtr.wire` (bytes to text to JSON), `mrtr.errors`
(every error code), `mrtr.tickets` (a ticket's anatomy), `mrtr.client`, `mrtr.client_errors`, `mrtr.forms` (values by
schema), `mrtr.tooldefs` (tool definitions judged), `mrtr.clock`, `mrtr.keys`
and `mrtr.redeemed`. Modules whose names start with an underscore are the core's own business.
"""

from ._connection import Connection
from ._handler import CallContext, InputRequired, Policy
from ._primitives import Catalog, Handler, Prompt, Resource, ResourceTemplate, Tool
from ._questions import elicit_form, list_roots, sample
from ._server import Server
from ._version import __version__
from .client import Client, InMemoryTransport, Transport
from .client_errors import ClientError
from .clock import Clock, FakeClock, system_clock
from .errors import ProtocolError, StoreUnavailable, TicketRejected
from .keys import KeyConfigError, KeyRing
from .messages import JSON, JSONObject, as_object
from .protocol import Exchange
from .redeemed import Claim, ClaimingStore, MemoryStore, RedeemedStore
from .tickets import CHECK_TITLES, CHECKS, DEFAULT_TTL, TicketCodec, Trace

__all__ = [
    # serving: the server, what it is built from, and what one message produced
    "Server", "Connection", "Exchange", "Policy", "KeyRing", "KeyConfigError",
    "RedeemedStore", "ClaimingStore", "Claim", "MemoryStore", "Clock", "FakeClock", "system_clock",
    # what a server offers, and how a handler asks for input
    "Catalog", "Tool", "Prompt", "Resource", "ResourceTemplate", "Handler", "CallContext", "InputRequired",
    "elicit_form", "sample", "list_roots",
    # messages
    "JSON", "JSONObject", "as_object",
    # errors a caller catches
    "ProtocolError", "TicketRejected", "StoreUnavailable",
    # tickets and their checks
    "TicketCodec", "Trace", "CHECKS", "CHECK_TITLES", "DEFAULT_TTL",
    # the client
    "Client", "ClientError", "Transport", "InMemoryTransport",
    "__version__",
]
