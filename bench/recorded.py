"""Sections of bench/RESULTS.md that one option records on its own (`--cluster`, `--pyodide`, `--checker`).

Each sits between two marker lines of its own, so a later run of the same option replaces it, and a full
run, which rewrites RESULTS.md, carries every such section over unchanged (`carry_over`). This module only
edits text; it never runs a benchmark.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RecordedSection:
    """The section `python -m bench <option>` writes, found by its marker lines."""

    option: str

    @property
    def begin(self) -> str:
        return f"<!-- bench {self.option}: begin -->"

    @property
    def end(self) -> str:
        return f"<!-- bench {self.option}: end -->"

    def find(self, text: str) -> str | None:
        """The recorded section in `text`, markers included; None if there is none."""
        start = text.find(self.begin)
        stop = text.find(self.end, start)
        if start < 0 or stop < 0:
            return None
        return text[start:stop + len(self.end)]

    def put(self, text: str, section: str, before: str) -> str:
        """`text` with `section` in place of the recorded one; if none, just before the line `before` (the
        hand-written appendix's heading), or at the end when that is missing."""
        old = self.find(text)
        if old is not None:
            return text.replace(old, section, 1)
        at = text.find("\n" + before) if before else -1
        if at < 0:
            return text.rstrip("\n") + "\n\n" + section + "\n"
        return text[:at].rstrip("\n") + "\n\n" + section + "\n\n" + text[at + 1:]


CLUSTER = RecordedSection("--cluster")
PYODIDE = RecordedSection("--pyodide")
CHECKER = RecordedSection("--checker")
#: Every section recorded on its own, in the order they stand in RESULTS.md.
SECTIONS = (CLUSTER, PYODIDE, CHECKER)


def carry_over(report: str, old: str, before: str) -> str:
    """A freshly generated `report` with every separately recorded section of the `old` RESULTS.md kept."""
    for section in SECTIONS:
        kept = section.find(old)
        if kept is not None:
            report = section.put(report, kept, before)
    return report
