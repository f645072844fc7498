"""Run one small client of `flawed_clients` as a process: `flawed_client_main.py FLAW URL` (FLAW may be `sound`)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.client_check.flawed_clients import Flaws, SmallClient  # noqa: E402 - the path is set just above

if __name__ == "__main__":
    flaw, url = sys.argv[1], sys.argv[2]
    flaws = Flaws() if flaw == "sound" else Flaws(**{flaw: True})
    sys.exit(SmallClient(url, flaws, time.sleep).run())
