"""A test app's live-class files live in a temporary directory the app owns: never in the user's state directory,
never left behind once the app is gone (the suite makes over a thousand apps; tests/conftest.py fails a run that
leaves an `mrtr-*` directory)."""

from __future__ import annotations

import gc
from collections.abc import Callable
from pathlib import Path

from flask import Flask

from web.classroom.services import classroom


def _class_folder(app: Flask) -> Path:
    with app.app_context():
        return classroom().lab_path.parent


def test_a_test_apps_class_files_go_with_the_app(make_app: Callable[..., Flask]) -> None:
    app, other = make_app(), make_app()
    folder = _class_folder(app)
    assert folder.is_dir() and folder.name.startswith("mrtr-class-")
    assert _class_folder(other) != folder  # no later app sees an earlier one's classes
    del app
    gc.collect()
    assert not folder.exists()
