"""scripts/run.sh, the README's way to try the app, run for real in a copy of the checkout whose .venv holds a
stand-in granian that reports what it was started with: the address the app gives for the pages it sends people
to (MRTR_PUBLIC_URL) follows PORT, so the URL-mode page never points at a port nothing listens on."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.external  # bash, running the script

ROOT = Path(__file__).resolve().parent.parent
#: Answers every pip and pyodide_install call the script makes, doing nothing.
PYTHON = "#!/bin/sh\nexit 0\n"
#: Prints where it would serve and the address the app would give, instead of serving.
GRANIAN = "#!/bin/sh\necho \"args: $*\"\necho \"MRTR_PUBLIC_URL=$MRTR_PUBLIC_URL\"\n"


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "run.sh", tmp_path / "scripts" / "run.sh")
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name, body in (("python", PYTHON), ("granian", GRANIAN)):
        (bin_dir / name).write_text(body)
        (bin_dir / name).chmod(0o755)
    return tmp_path


def run(checkout: Path, **env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if k not in ("PORT", "MRTR_PUBLIC_URL")}
    done = subprocess.run(["bash", str(checkout / "scripts" / "run.sh")], env={**environ, **env},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(("env", "port", "public"), [
    ({}, "5000", "http://127.0.0.1:5000"),
    ({"PORT": "5123"}, "5123", "http://127.0.0.1:5123"),
    ({"PORT": "5123", "MRTR_PUBLIC_URL": "https://lab.example.org"}, "5123", "https://lab.example.org"),
])
def test_the_public_address_follows_the_port_unless_set(checkout: Path, env: dict[str, str], port: str,
                                                        public: str) -> None:
    out = run(checkout, **env)
    assert f"--port {port} " in out
    assert f"MRTR_PUBLIC_URL={public}\n" in out
    assert f"Serving MRTR Lab on http://127.0.0.1:{port} " in out
