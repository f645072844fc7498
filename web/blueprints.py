"""Where the app is assembled from its features: one blueprint (or init hook) per line."""

from __future__ import annotations

from flask import Flask

from web import (
    build,
    classroom,
    content,
    demo,
    embed,
    error_pages,
    lessons,
    lti,
    mcp,
    out_of_band,
    playground,
    quiz,
    templating,
)
from web import check_client_page as check_client
from web import check_page as check


def register(app: Flask) -> None:
    content.init_app(app)  # the course is read and validated once: a broken lesson fails create_app()
    error_pages.init_app(app)
    templating.init_app(app)
    app.register_blueprint(mcp.bp)  # MCP over HTTP at /mcp
    app.register_blueprint(lessons.bp)  # the course home and lesson pages
    app.register_blueprint(quiz.bp)  # the quick check
    app.register_blueprint(playground.bp)  # "Misuse the ticket"
    app.register_blueprint(demo.bp)  # presenter mode at /demo
    app.register_blueprint(embed.bp)  # the embeddable quiz and /oembed
    app.register_blueprint(check.bp)  # /check: the server checker in the browser
    app.register_blueprint(check_client.bp)  # /check-client: the client checker in the browser
    app.register_blueprint(classroom.bp)  # the live class: /class/..., /join, /j/<code>
    app.register_blueprint(out_of_band.bp)  # the URL-mode question's page, where a learner enters an API key
    app.register_blueprint(build.bp)  # the build loop's pasted checker report
    app.register_blueprint(lti.bp)  # LTI 1.3 tool at /lti/...: a 404 page unless MRTR_LTI_PLATFORMS is set
