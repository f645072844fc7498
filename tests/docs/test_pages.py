"""What the documentation says is kept true by the code it describes: every file it names exists, every dotted
name imports, every constant it cites is where it says, and the tables that mirror data (the import contracts,
the lessons' map, the settings, the probes) hold exactly that data. The README stays a short front page that
links into the site."""

from __future__ import annotations

import importlib
import re
import tomllib
from pathlib import Path

import pytest

from moves.probes import PROBES
from mrtr_settings.environment import SETTINGS
from tests.tracked import tracked, tracked_under
from web.site.content import load_course

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = tracked_under("docs", suffix=".md")
README = ROOT / "README.md"
MAX_README_LINES = 200
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))

#: Paths the docs may name that a fresh checkout does not have yet: what set-up and a run create.
CREATED = ("instance/", ".venv/", "dist/", "conformance-results/")
#: Packages whose dotted names the docs cite (`moves.check.run_check`).
PACKAGES = ("mrtr", "moves", "mrtr_cli", "mrtr_client", "mrtr_grading", "mrtr_settings", "mrtr_stores",
            "mrtr_toolsets", "web")
#: MRTR_* names the docs may use that are not settings of the app: the test harness's own switch.
NOT_SETTINGS = {"MRTR_TEST_SERVERS", "MRTR_CHECK_CLIENT_CHOICES"}  # the second: what check-client tells a client
#: Dotted spans that are not Python names: the JUnit report's class names.
NOT_NAMES = {"mrtr.check.moves", "mrtr.check.probes"}


def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def prose(markdown: str) -> str:
    """The page without its fenced code blocks (commands, JSON), which hold no references to check."""
    return re.sub(r"(?ms)^ *```.*?^ *```", "", markdown)


def spans(markdown: str) -> list[str]:
    return re.findall(r"`([^`\n]+)`", prose(markdown))


def in_checkout(cited: str) -> bool:
    """A tracked file, or a folder holding one (what a clean clone has, not what a run or a build left)."""
    names = [p.relative_to(ROOT).as_posix() for p in tracked()]
    folder = cited.rstrip("/") + "/"
    return cited in names or any(name.startswith(folder) for name in names)


def cited_paths(markdown: str) -> set[str]:
    """Inline-code spans that name a file or folder of the repository (`web/mcp/routes.py`, `tests/mutants/`)."""
    tops = {p.relative_to(ROOT).parts[0] for p in tracked()} | {c.split("/")[0] for c in CREATED}
    found = set()
    for span in spans(markdown):
        if re.fullmatch(r"[\w.-]+(/[\w.-]+)*/?", span) and span.split("/")[0] in tops and (
                "/" in span or "." in span):
            found.add(span)
    return found


@pytest.mark.parametrize("page", [*PAGES, README], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_file_a_page_names_exists(page: Path) -> None:
    missing = [p for p in sorted(cited_paths(text(page)))
               if not in_checkout(p) and not (p.rstrip("/") + "/").startswith(CREATED)]
    assert not missing, f"{page.relative_to(ROOT)} names files that do not exist: {missing}"


def resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            if not hasattr(target, name):
                return False
            target = getattr(target, name)
        return True
    return False


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_dotted_name_a_page_cites_imports(page: Path) -> None:
    names = {s for s in spans(text(page)) if re.fullmatch(rf"(?:{'|'.join(PACKAGES)})(?:\.[A-Za-z_]\w*)+", s)
             and not re.search(r"\.(py|toml|md|json|js)$", s)} - NOT_NAMES
    broken = sorted(n for n in names if not resolves(n))
    assert not broken, f"{page.relative_to(ROOT)} cites names that do not exist: {broken}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_name_a_page_places_in_a_module_is_there(page: Path) -> None:
    """"`mrtr/tickets.py` `MAX_TICKET_LENGTH`": the module defines (or at least names) that name."""
    pairs = re.findall(r"`([\w/]+\.py)` `([A-Za-z_][\w.]*)", prose(text(page)))
    wrong = [f"{module} {name}" for module, name in pairs
             if not re.search(rf"\b{re.escape(name.split('.')[0])}\b", text(ROOT / module))]
    assert not wrong, f"{page.relative_to(ROOT)} places names where they are not: {wrong}"


def test_every_setting_is_documented_and_no_other() -> None:
    configuration = text(DOCS / "deploy" / "configuration.md")
    settings = {s.name for s in SETTINGS}
    assert not sorted(n for n in settings if f"`{n}`" not in configuration), "a setting the page does not list"
    cited = {n for page in [*PAGES, README] for n in re.findall(r"\bMRTR_[A-Z0-9_]*[A-Z0-9]\b", text(page))}
    assert sorted(cited - settings - NOT_SETTINGS) == [], "a page names an MRTR_* setting that does not exist"


def test_the_architecture_page_lists_every_import_contract() -> None:
    rows = re.findall(r"(?m)^\| `([\w-]+)` \| (.+) \|$", text(DOCS / "architecture.md"))
    contracts = [(c["id"], c["name"]) for c in PYPROJECT["tool"]["importlinter"]["contracts"]]
    assert [r for r in rows if r[0] in {c[0] for c in contracts} or "-" in r[0]] == contracts


def test_the_lessons_map_is_the_course() -> None:
    page = text(DOCS / "lessons.md")
    for lesson in load_course().lessons:
        heading = page.index(f"\n### {lesson.title}\n")
        table = page[heading:].split("\n\n")[2]
        rows = re.findall(r"(?m)^\| `([\w-]+)` \| (.+?) \| (?:`(\w+)`)? \|$", table)
        assert rows == [(s.id, s.title, s.widget or "") for s in lesson.sections], lesson.slug
        assert f"`/lessons/{lesson.slug}`" in page


def test_the_checker_page_lists_every_probe() -> None:
    rows = re.findall(r"(?m)^\| `([\w-]+)` \| ", text(DOCS / "checker" / "index.md"))
    assert sorted(rows) == sorted(PROBES)


# -- the README: a front page ---------------------------------------------------------------------------


def test_the_readme_is_short_and_keeps_the_two_commands() -> None:
    readme = text(README)
    assert len(readme.splitlines()) < MAX_README_LINES
    for command in ("bash scripts/run.sh", "bash scripts/test.sh"):
        assert f"```bash\n{command}\n```" in readme, command
    assert "scripts/test.sh" in text(ROOT / ".ci" / "run")


NUMBERS = ("One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine")


@pytest.mark.parametrize("page", [README, DOCS / "lessons.md"], ids=lambda p: p.name)
def test_the_front_pages_count_and_name_the_course_s_lessons(page: Path) -> None:
    """The README and the lessons page say how many lessons the course has and name each one (its manifest,
    lessons/course.toml, is what the app serves)."""
    lessons = load_course().lessons
    words = re.sub(r"\s+", " ", prose(text(page)))
    if page == README:
        assert f"**{NUMBERS[len(lessons) - 1]} lessons**" in words
    for lesson in lessons:
        assert f'"{lesson.title}"' in words, f"{page.name} does not name the lesson {lesson.title!r}"


def test_the_readme_links_into_the_site_and_every_link_lands() -> None:
    readme = text(README)
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme)
    local = [link for link in links if not re.match(r"[a-z]+://", link)]
    assert all((ROOT / link).exists() for link in local), [link for link in local if not (ROOT / link).exists()]
    linked = {link.removeprefix("docs/") for link in local if link.startswith("docs/") and link.endswith(".md")}
    for section in ("getting-started.md", "lessons.md", "checker/index.md", "deploy/index.md", "architecture.md",
                    "how-to/index.md", "api/index.md"):
        assert section in linked, f"the README does not lead to docs/{section}"


def test_the_limits_are_the_numbers_the_code_holds() -> None:
    """A row of the limits table whose place is "`module.py` `CONSTANT`" states that constant's value (minutes as
    seconds where the code counts seconds)."""
    checked = []
    for row in text(DOCS / "deploy" / "limits.md").splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split(" | ")]
        if len(cells) != 4 or not (number := re.match(r"([\d,]+(?:\.\d+)?)(?: (minutes))?", cells[1])):
            continue
        placed = re.findall(r"`([\w/]+)\.py` `([A-Z][A-Z0-9_]*)`", cells[3])
        if not placed:
            continue
        module, name = placed[0]
        value = getattr(importlib.import_module(module.replace("/", ".")), name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        stated = float(number[1].replace(",", "")) * (60 if number[2] else 1)
        assert value == stated, f"limits.md says {cells[0]} is {cells[1]!r}; {module}.py {name} = {value}"
        checked.append(name)
    assert len(checked) >= 10, checked


def test_the_code_map_names_every_module() -> None:
    """The code map names each module by its file: a module straight under its package by its name (those names
    are unique there), one in a subpackage by its folder too (`check/routes.py`: each web feature has a
    `routes.py`), so a row cannot pass for another package's file of the same name."""
    named = re.findall(r"`([\w/]+\.py)`", text(DOCS / "architecture.md"))
    modules = [p.relative_to(ROOT) for p in tracked_under(*PACKAGES) if p.name != "__init__.py"]

    def is_named(module: Path) -> bool:
        if len(module.parts) == 2:
            return module.name in {Path(n).name for n in named}
        return any("/" in n and ("/" + module.as_posix()).endswith("/" + n) for n in named)
    missing = [str(m) for m in modules if not is_named(m)]
    assert not missing, f"docs/architecture.md's code map does not name {missing}"


def test_no_tracked_file_names_a_folder_of_the_machine_it_was_written_on() -> None:
    """Comments and docs point at files by where they are beside the repository (../shared/reference/), never by
    a path on one machine."""
    machine = "/" + "work/"  # spelled apart, so this file does not name it
    named = [p.relative_to(ROOT).as_posix() for p in tracked() if machine.encode() in p.read_bytes()]
    assert named == []
