"""Where the key ring comes from: `MRTR_SECRET_KEYS`, or a key generated once per machine.

When no key is configured, one is generated with `secrets` and written to a file outside the
repository (`$MRTR_STATE_DIR`, else `$XDG_STATE_HOME/mrtr-lab`, else `~/.local/state/mrtr-lab`) so
every process on the machine shares it. This module never logs or returns key material as text.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from pathlib import Path

from mrtr import KeyConfigError, KeyRing
from mrtr.keys import MIN_KEY_LENGTH
from mrtr_stores.secret_files import secret_file

KEY_FILE_NAME = "secret.key"


def default_state_dir(environ: Mapping[str, str] = os.environ) -> Path:
    if environ.get("MRTR_STATE_DIR"):
        return Path(environ["MRTR_STATE_DIR"])
    base = environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "mrtr-lab"


def load_or_create_key(path: Path) -> bytes:
    """Read the shared generated key, creating it atomically on first use (mode 0600)."""
    key = secret_file(path, lambda: secrets.token_urlsafe(48).encode() + b"\n").strip()
    if len(key) < MIN_KEY_LENGTH:
        raise KeyConfigError(f"the generated key file {path} is damaged; delete it to make a new one")
    return key


def ring_from_config(value: str | None, state_dir: Path | None = None) -> KeyRing:
    """Build the ring from `MRTR_SECRET_KEYS`, or from the generated machine-local key."""
    if value and value.strip():
        return KeyRing(part.strip() for part in value.split(",") if part.strip())
    return KeyRing([load_or_create_key((state_dir or default_state_dir()) / KEY_FILE_NAME)])
