"""MRTR Lab: the Flask app factory. Everything else lives in blueprints under `web/`."""

from __future__ import annotations

from typing import Any

from flask import Flask

from web import blueprints, compress, htmx, security
from web.services import build_services, config_from_env


def create_app(test_config: dict[str, Any] | None = None) -> Flask:
    """Build the app from environment settings, overlaid with `test_config` when testing."""
    app = Flask(__name__, static_folder="static", template_folder="templates")
    app.config.from_mapping(
        MAX_CONTENT_LENGTH=256 * 1024,
        MRTR_TICKET_TTL=120,
        MRTR_STORE="sqlite",
        JSON_SORT_KEYS=False,
    )
    app.config.update(config_from_env())
    if test_config:
        app.config.update(test_config)
    if app.config.get("MRTR_MAX_BODY"):
        app.config["MAX_CONTENT_LENGTH"] = int(app.config["MRTR_MAX_BODY"])
    app.extensions["mrtr"] = build_services(app.config)
    security.init_app(app)
    htmx.init_app(app)
    compress.init_app(app)

    blueprints.register(app)
    return app
