"""Where each feature's blueprint is registered. One line per feature."""

from __future__ import annotations

from flask import Flask


def register(app: Flask) -> None:
    from web import mcp

    app.register_blueprint(mcp.bp)
    app.register_blueprint(__import__("web.playground").playground.bp)  # the "Misuse the ticket" playground
