"""Every file the app keeps on disk goes under its configured state directory, whether MRTR_STATE_DIR comes
from the environment or from the app's own config (as every test app sets it): the generated key, the redeemed
store, /check's runs and the live class's database. None of them may land in the user's home directory."""

from __future__ import annotations

from pathlib import Path

from flask import Flask

from app import create_app
from tests.conftest import APP_CONFIG


def test_the_generated_key_and_every_store_live_under_the_configured_state_dir(tmp_path: Path, monkeypatch) -> None:
    state, home = tmp_path / "state", tmp_path / "home"
    monkeypatch.delenv("MRTR_STATE_DIR", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(home))  # where the default would put them
    config = {**APP_CONFIG, "MRTR_STATE_DIR": str(state), "MRTR_STORE": "sqlite", "TESTING": False}
    config.pop("MRTR_SECRET_KEYS", None)  # no configured key: one is generated, in the state dir
    app: Flask = create_app(config)
    client = app.test_client()
    assert client.get("/check").status_code == 200
    assert client.post("/class/start").status_code == 201  # the live class opens its database
    assert (state / "classroom.sqlite3").is_file()
    assert (state / "check-runs" / "runs.sqlite3").is_file()  # where /check keeps its runs
    assert (state / "secret.key").is_file() and oct((state / "secret.key").stat().st_mode & 0o777) == "0o600"
    assert (state / "redeemed.sqlite3").is_file()
    assert not home.exists(), sorted(str(p) for p in home.rglob("*"))
