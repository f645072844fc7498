"""Guard the vendored front-end files against silent drift.

static/vendor/VENDOR.md records the version and SHA-256 of each vendored file;
these tests recompute the hashes, so editing a file without updating VENDOR.md
(or the reverse) fails the suite.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

VENDOR_DIR = Path(__file__).resolve().parent.parent / "static" / "vendor"
VENDOR_MD = VENDOR_DIR / "VENDOR.md"

_HASH_ROW = re.compile(r"^\|\s*(?P<name>[^|\s]+)\s*\|\s*(?P<sha>[0-9a-f]{64})\s*\|\s*$", re.MULTILINE)
_VERSION = re.compile(r"^- Version:\s*(?P<version>\d+\.\d+\.\d+)\s*$", re.MULTILINE)


def _recorded_hashes() -> dict[str, str]:
    rows = {m["name"]: m["sha"] for m in _HASH_ROW.finditer(VENDOR_MD.read_text(encoding="utf-8"))}
    assert rows, "VENDOR.md has no '| file | sha256 |' rows"
    return rows


def _recorded_htmx_version() -> str:
    match = _VERSION.search(VENDOR_MD.read_text(encoding="utf-8"))
    assert match, "VENDOR.md does not name an htmx version ('- Version: X.Y.Z')"
    return match["version"]


def test_every_recorded_hash_matches_the_file_on_disk():
    for name, sha in _recorded_hashes().items():
        path = VENDOR_DIR / name
        assert path.is_file(), f"VENDOR.md lists {name} but static/vendor/{name} is missing"
        actual = hashlib.sha256(path.read_bytes()).hexdigest()
        assert actual == sha, f"{name}: sha256 {actual} != {sha} recorded in VENDOR.md"


def test_every_vendored_script_is_recorded():
    recorded = set(_recorded_hashes())
    on_disk = {p.name for p in VENDOR_DIR.glob("*.js")}
    assert on_disk <= recorded, f"unrecorded vendored files: {sorted(on_disk - recorded)}"


def test_htmx_file_name_carries_the_recorded_version():
    version = _recorded_htmx_version()
    expected = f"htmx-{version}.min.js"
    assert expected in _recorded_hashes(), f"VENDOR.md names htmx {version} but records no {expected}"
    assert (VENDOR_DIR / expected).is_file()
    htmx_files = sorted(p.name for p in VENDOR_DIR.glob("htmx-*.js"))
    assert htmx_files == [expected], f"stale or extra htmx builds in static/vendor: {htmx_files}"


def test_htmx_build_reports_the_recorded_version():
    version = _recorded_htmx_version()
    source = (VENDOR_DIR / f"htmx-{version}.min.js").read_text(encoding="utf-8")
    assert f'version:"{version}"' in source, "htmx.version inside the build differs from VENDOR.md"
