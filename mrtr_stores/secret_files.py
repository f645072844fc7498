"""Secret files that every process of a machine shares: the one way this project writes one (mode 0600, whole).

Callers: the generated ticket key (`mrtr_settings.keyfiles`) and the LTI tool's key (`mrtr_stores.lti_sqlite`).
It never logs or returns key material as text.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path


def secret_file(path: Path, make: Callable[[], bytes]) -> bytes:
    """The contents of the secret file `path`, made with `make()` on first use: mode 0600, never half written.

    Every process of a machine that asks gets the same bytes: a private temp file is hard-linked into place,
    and the link either creates the final name with the whole secret in it or fails because another process
    won the race, whose file is then read.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(make())
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    return path.read_bytes()
