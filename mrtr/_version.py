"""The version of the core, in one place: `mrtr.__version__` and the server's `serverInfo` both read it."""

__version__ = "0.1.0"
