"""mrtr: a sans-IO MCP server, client and ticket codec for Multi Round-Trip Requests.

The package never imports a web framework, opens no sockets and reads time only through the
clock it is given. Adapters (stdio here, Flask in the app) move bytes in and out.
"""

__version__ = "0.1.0"

from mrtr_settings.keyfiles import ring_from_config  # noqa: E402
from mrtr_stores.redeemed_sqlite import SqliteStore  # noqa: E402

from .clock import FakeClock, system_clock  # noqa: E402
from .connection import Connection  # noqa: E402
from .errors import FROZEN_TICKET_MESSAGE, ProtocolError, TicketRejected  # noqa: E402
from .handler import CallContext, InputRequired, Policy  # noqa: E402
from .keys import KeyRing
from .protocol import INPUT_REQUIRED_METHODS, MODERN_VERSION, SUPPORTED_VERSIONS, Exchange  # noqa: E402
from .redeemed import MemoryStore
from .server import Server  # noqa: E402
from .tickets import CHECKS, TicketCodec, Trace  # noqa: E402

__all__ = [
    "CHECKS",
    "CallContext",
    "FROZEN_TICKET_MESSAGE",
    "INPUT_REQUIRED_METHODS",
    "MODERN_VERSION",
    "SUPPORTED_VERSIONS",
    "Connection",
    "Exchange",
    "FakeClock",
    "InputRequired",
    "KeyRing",
    "MemoryStore",
    "Policy",
    "ProtocolError",
    "Server",
    "SqliteStore",
    "TicketCodec",
    "TicketRejected",
    "Trace",
    "__version__",
    "ring_from_config",
    "system_clock",
]
