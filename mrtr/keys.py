"""The key ring every replica shares: several keys verify, the first one signs and seals.

Keys come from configuration (`MRTR_SECRET_KEYS`, comma-separated, newest first). When none is
configured, one key is generated with `secrets` and written to a file outside the repository
(`$MRTR_STATE_DIR`, else `$XDG_STATE_HOME/mrtr-lab`, else `~/.local/state/mrtr-lab`) so every
process on the machine shares it. This module never logs or returns key material as text.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from collections.abc import Iterable, Mapping
from pathlib import Path

MIN_KEY_LENGTH = 32
KEY_FILE_NAME = "secret.key"


class KeyConfigError(ValueError):
    """The configured keys are unusable. The message tells the operator how to fix it."""


class KeyRing:
    """An ordered, non-empty set of secret keys. `signing_key` (index 0) mints new tickets."""

    def __init__(self, keys: Iterable[bytes | str]) -> None:
        ring = tuple(k.encode() if isinstance(k, str) else bytes(k) for k in keys)
        if not ring:
            raise KeyConfigError("the key ring is empty")
        for key in ring:
            if len(key) < MIN_KEY_LENGTH:
                raise KeyConfigError(
                    f"every secret key needs at least {MIN_KEY_LENGTH} characters; generate one with: "
                    'python -c "import secrets; print(secrets.token_urlsafe(32))"'
                )
        self.keys = ring

    @property
    def signing_key(self) -> bytes:
        return self.keys[0]

    def key_id(self, key: bytes) -> str:
        """A short public fingerprint of a key, safe to show and log."""
        return hashlib.sha256(b"mrtr.key-id\x00" + key).hexdigest()[:8]

    def __len__(self) -> int:
        return len(self.keys)

    def __repr__(self) -> str:  # never print the keys themselves
        return f"KeyRing({', '.join(self.key_id(k) for k in self.keys)})"


def default_state_dir(environ: Mapping[str, str] = os.environ) -> Path:
    if environ.get("MRTR_STATE_DIR"):
        return Path(environ["MRTR_STATE_DIR"])
    base = environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "mrtr-lab"


def load_or_create_key(path: Path) -> bytes:
    """Read the shared generated key, creating it atomically on first use (mode 0600)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        # Write a private temp file, then hard-link it into place: the link either creates the
        # final name with the full key in it or fails because another process won the race.
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(secrets.token_urlsafe(48).encode() + b"\n")
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    key = path.read_bytes().strip()
    if len(key) < MIN_KEY_LENGTH:
        raise KeyConfigError(f"the generated key file {path} is damaged; delete it to make a new one")
    return key


def ring_from_config(value: str | None, state_dir: Path | None = None) -> KeyRing:
    """Build the ring from `MRTR_SECRET_KEYS`, or from the generated machine-local key."""
    if value and value.strip():
        return KeyRing(part.strip() for part in value.split(",") if part.strip())
    return KeyRing([load_or_create_key((state_dir or default_state_dir()) / KEY_FILE_NAME)])
