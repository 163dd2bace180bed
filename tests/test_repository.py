"""The repository's shape: modules, classes and functions a newcomer can read in one sitting,
rooms of a similar size, documents that state the present, and every benchmark script described.

The limits (docs/architecture.md): no module over 800 lines, no class over 400, no function over
80 (from its ``def`` to its last line, docstring included), no top-level room over 15 % of the
package's lines.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import module_outline, outline

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "inference_econ"
MODULES = sorted(PACKAGE.rglob("*.py"))

MAX_MODULE_LINES = 800
MAX_CLASS_LINES = 400
MAX_FUNCTION_LINES = 80
MAX_ROOM_SHARE = 0.15


def line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def oversized(definitions) -> list[str]:
    """The classes and functions of a module (its ``conftest.outline`` definitions) over their
    limits, as 'name (lines)'."""
    found = []
    for name, is_class, lines in definitions:
        limit = MAX_CLASS_LINES if is_class else MAX_FUNCTION_LINES
        if lines > limit:
            found.append(f"{name} ({lines} lines, limit {limit})")
    return found


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_modules_classes_and_functions_stay_readable(path):
    assert line_count(path) <= MAX_MODULE_LINES, f"{line_count(path)} lines"
    assert oversized(module_outline(path)[1]) == []


def test_the_size_check_catches_a_long_function():
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    assert oversized(outline(f"def f():\n{body}\n")[1]) == [
        f"f ({MAX_FUNCTION_LINES + 1} lines, limit {MAX_FUNCTION_LINES})"
    ]
    assert oversized(outline(f"def f():\n{body[: body.rindex(chr(10))]}\n")[1]) == []


def room_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else parts[0].removesuffix(".py")


def test_no_room_holds_more_than_its_share_of_the_package():
    rooms: dict[str, int] = {}
    for path in MODULES:
        rooms[room_of(path)] = rooms.get(room_of(path), 0) + line_count(path)
    total = sum(rooms.values())
    over = {room: f"{n / total:.1%}" for room, n in rooms.items() if n > MAX_ROOM_SHARE * total}
    assert over == {}


#: Words about how the work was organised, which documents and code never carry: a numbered
#: issue, a numbered helper, a numbered session or round of work. Built from parts so that this
#: file does not match itself.
PROCESS_WORDS = re.compile(
    r"\b("
    + "|".join(
        ["iss" + r"ue [0-9]", "hel" + r"per-?[0-9]", "sess" + r"ion [0-9]", "rou" + r"nd [0-9]"]
    )
    + ")",
    re.IGNORECASE,
)
TEXT_SUFFIXES = {".py", ".md", ".yaml", ".toml", ".txt", ".html", ".cfg"}


def text_files() -> list[Path]:
    roots = [PACKAGE, ROOT / "tests", ROOT / "docs", ROOT / "benchmarks"]
    files = [ROOT / "README.md"]
    for root in roots:
        files += [p for p in sorted(root.rglob("*")) if p.suffix in TEXT_SUFFIXES]
    return [p for p in files if p.is_file() and "__pycache__" not in p.parts]


def test_no_document_or_code_speaks_of_how_the_work_was_organised():
    found = []
    for path in text_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if PROCESS_WORDS.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:80]}")
    assert found == [], "\n".join(found[:20]) + f"\n({len(found)} lines)"


def test_the_process_word_check_catches_one():
    assert PROCESS_WORDS.search("as " + "iss" + "ue 21 asked")
    assert PROCESS_WORDS.search("Hel" + "per-3 found")
    assert not PROCESS_WORDS.search("MLPerf Inference v5.1, the newer results")


def test_every_benchmark_script_is_described_and_every_row_names_a_script():
    readme = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    named = set(re.findall(r"^\| `([\w]+\.py)` \|", readme, re.MULTILINE))
    scripts = {p.name for p in (ROOT / "benchmarks").glob("*.py")}
    assert scripts - named == set(), "scripts without a row in benchmarks/README.md"
    assert named - scripts == set(), "rows naming no script"


#: A wall clock read in a test (the machine is shared: a loaded run once failed a 10 s limit).
#: A deadline that only ends a wait loop (``monotonic`` against a generous limit) is allowed.
WALL_CLOCK = re.compile(r"time\.(time|perf_counter|perf_counter_ns|time_ns)\(\)")


def wall_clock_reads(text: str) -> list[str]:
    """The lines of a test module that read a wall clock (not a monkeypatched stand-in)."""
    return [line.strip() for line in text.splitlines() if WALL_CLOCK.search(line)]


def test_no_test_reads_a_wall_clock():
    found = {
        p.name: hits
        for p in sorted((ROOT / "tests").glob("*.py"))
        if p.name != "test_repository.py" and (hits := wall_clock_reads(p.read_text()))
    }
    assert found == {}


def test_the_wall_clock_check_catches_one():
    assert wall_clock_reads("    start = time.perf_counter()\n    x = 1\n") == [
        "start = time.perf_counter()"
    ]
    assert wall_clock_reads("    t = time.process_time()\n") == []
