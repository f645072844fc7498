"""Where the app is assembled from its features: one blueprint (or init hook) per line."""

from __future__ import annotations

from flask import Flask

from web import templating
from web.build import routes as build
from web.check import routes as check
from web.check_client import routes as check_client
from web.classroom import routes as classroom
from web.demo import routes as demo
from web.embed import routes as embed
from web.errors import pages as error_pages
from web.lessons import routes as lessons
from web.lti import routes as lti
from web.mcp import routes as mcp
from web.out_of_band import routes as out_of_band
from web.playground import routes as playground
from web.quiz import routes as quiz
from web.site import content


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
