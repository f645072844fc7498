"""MRTR Lab: the Flask app factory. Everything else lives in blueprints under `web/`."""

from __future__ import annotations

import logging
from typing import Any

from flask import Flask

from mrtr_settings.environment import read_settings
from mrtr_settings.stores import configure_redis
from web import blueprints
from web.mcp import routes as mcp
from web.site import admission, compress, deployment, htmx, security
from web.site.services import SETTINGS_KEY, build_services

#: The largest request body when MRTR_MAX_BODY is unset.
DEFAULT_MAX_BODY = 256 * 1024


def configure_logging() -> None:
    """Send the app's own log lines ("mrtr", "mrtr.http", "mrtr.web") to stderr at INFO.

    The wire never says why a ticket was refused; the server log must. Production servers (granian,
    gunicorn) configure no Python logging, so without this those INFO lines would be dropped. When
    someone has configured logging already (a root handler, as pytest does), it is left alone.
    """
    logger = logging.getLogger("mrtr")
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.INFO)
    if not logger.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler()  # stderr: the process manager collects it
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)


def create_app(test_config: dict[str, Any] | None = None) -> Flask:
    """Build the app from environment settings, overlaid with `test_config` when testing.

    Every `MRTR_*` setting is read once, by `mrtr_settings.environment.read_settings`; features reach the result
    through `web.site.services.get_settings()`. `test_config` may also carry Flask settings and test seams.
    """
    configure_logging()
    app = Flask(__name__, static_folder="static", template_folder="templates")
    app.config.from_mapping(MAX_CONTENT_LENGTH=DEFAULT_MAX_BODY, JSON_SORT_KEYS=False)
    if test_config:
        app.config.update(test_config)
    settings = read_settings(overrides=test_config)
    if settings.max_body:
        app.config["MAX_CONTENT_LENGTH"] = settings.max_body
    app.extensions[SETTINGS_KEY] = settings
    if settings.public and not settings.public_url:
        # Public, with no public address: the absolute addresses the app writes follow each request's Host.
        logging.getLogger("mrtr.web").warning(
            "MRTR_PUBLIC=1 without MRTR_PUBLIC_URL: set it to the address learners open, so that no request's Host "
            "chooses the addresses the app writes (URL-mode pages, embeds, LTI)")
    configure_redis(settings)  # before any store connects: how many threads may wait on Redis at once
    app.extensions["mrtr"] = build_services(settings, clock=app.config.get("MRTR_CLOCK"))
    admission.init_app(app, settings.held_streams)
    security.init_app(app)
    htmx.init_app(app)
    compress.init_app(app)

    blueprints.register(app)
    # /mcp is served beside Flask by the same adapter (web/mcp/routes.py handle_http), without Flask's per-request work.
    app.wsgi_app = mcp.wsgi_entry(app, app.wsgi_app)  # type: ignore[method-assign]
    # Outermost, so /mcp too sees the visitor's address behind a trusted proxy and names its replica.
    app.wsgi_app = deployment.wrap(  # type: ignore[method-assign,assignment]
        app.wsgi_app, trusted_proxies=settings.trusted_proxies, replica=settings.replica_name,
        proxy_secret=settings.proxy_secret, public_url=settings.public_url)
    return app
