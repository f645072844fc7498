"""Run one small client of `flawed_clients` as a process: `flawed_client_main.py FLAW [--stdio] TARGET` (FLAW may
be `sound`); the user's choices come from MRTR_CHECK_CLIENT_CHOICES, as `mrtr check-client` sets it."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.client_check.flawed_clients import Flaws, SmallClient  # noqa: E402 - the path is set just above

if __name__ == "__main__":
    flaw, target, stdio = sys.argv[1], sys.argv[-1], "--stdio" in sys.argv[2:-1]
    flaws = Flaws() if flaw == "sound" else Flaws(**{flaw: True})
    choices = json.loads(os.environ.get("MRTR_CHECK_CLIENT_CHOICES", "{}"))
    code, output = SmallClient(target, flaws, time.sleep, stdio=stdio, choices=choices).run()
    sys.stdout.write(output)
    sys.exit(code)
