"""What a peer of expectations.toml does NOT hold, move by move: its `lacks` (derived from the catalogue) and its
`moves` (written out). One reading for the by-hand tests (test_peers.py) and the checker's (test_peers_report.py).
"""

from __future__ import annotations

from typing import Any

from tests.check.catalogue import caught_by, gated_by, matching


def lacks(entry: dict[str, Any]) -> list[str]:
    """The defences a peer lacks."""
    return list(entry.get("lacks", []))


def failing_moves(entry: dict[str, Any]) -> dict[str, str]:
    """Every move the peer does not hold, with what it does instead."""
    caught = set().union(*(caught_by(feature) for feature in lacks(entry))) if lacks(entry) else set()
    derived = {slug: "completed" for slug in caught} | {slug: "not-run" for slug in gated_by(caught) - caught}
    listed = dict(entry.get("moves", {}))
    for kind in entry.get("kinds", []):  # moves named by what they do: {outcome = ..., <selector>}
        listed |= dict.fromkeys(matching({k: v for k, v in kind.items() if k != "outcome"}), kind["outcome"])
    derived |= {slug: "not-run" for slug in gated_by({s for s, seen in listed.items() if seen != "not-run"})
                if slug not in caught}
    return derived | listed
