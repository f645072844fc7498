"""The key ring every replica shares: several keys verify, the first one signs and seals.

What this module owns: `KeyRing` (ordered keys, newest first; key ids safe to show) and its rules
(`MIN_KEY_LENGTH`). Where keys come from (configuration, a generated file) is `mrtr_settings.keyfiles`.
It never reads files or the environment, and never logs or returns key material as text.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

MIN_KEY_LENGTH = 32


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
