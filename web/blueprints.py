"""Where each feature's blueprint is registered. One line per feature."""

from __future__ import annotations

from flask import Flask


def register(app: Flask) -> None:
    from web import mcp

    app.register_blueprint(mcp.bp)

    from web import content, errors, lessons, quiz, templating

    content.init_app(app)  # the course is read and validated once: a broken lesson fails create_app()
    errors.init_app(app)
    templating.init_app(app)
    app.register_blueprint(lessons.bp)
    app.register_blueprint(quiz.bp)
    app.register_blueprint(__import__("web.playground").playground.bp)  # the "Misuse the ticket" playground
    app.register_blueprint(__import__("web.demo").demo.bp)  # presenter mode: /demo
    app.register_blueprint(__import__("web.embed").embed.bp)  # the embeddable quiz and /oembed
