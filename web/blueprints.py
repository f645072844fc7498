"""Where each feature's blueprint is registered. One line per feature."""

from __future__ import annotations

from flask import Flask


def register(app: Flask) -> None:
    from web import mcp

    app.register_blueprint(mcp.bp)
