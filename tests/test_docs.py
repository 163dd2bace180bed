"""Every reference a user can follow resolves inside the repository: links in the README and
docs, paths in examples (docs, --help, YAML comments) and the code they cite."""

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from inference_econ.cli import main

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PACKAGE = ROOT / "inference_econ"
PREFIXES = "scenarios|tests|models|hardware|docs|benchmarks|figures|inference_econ|examples"
PATH = re.compile(rf"(?<![\w/.-])((?:{PREFIXES})/[\w./-]*[\w/])")
OUTPUT_FLAGS = re.compile(r"(?:^|\s)(?:-o|--out|--figure|--tornado)\s+$")
#: Files a reader is told to create, and the wheel's copy of the data.
PLACEHOLDERS = ("my_", "my-", "figure-N", "inference_econ/_data")


def _anchor(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    return {_anchor(m) for m in re.findall(r"^#+ (.*)$", path.read_text(), re.M)}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_markdown_links_resolve(doc):
    for target in re.findall(r"\]\(([^)\s]+)\)", doc.read_text()):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        path = (doc.parent / file).resolve() if file else doc
        assert path.exists(), f"{doc.name}: broken link {target}"
        assert ROOT in path.parents or path == ROOT, f"{doc.name}: {target} leaves the repository"
        if anchor:
            assert anchor in _anchors(path), f"{doc.name}: no heading for #{anchor} in {file}"


def _paths_in(text: str):
    for line in text.splitlines():
        for m in PATH.finditer(line):
            token = m.group(1).rstrip(".")
            if OUTPUT_FLAGS.search(line[: m.start()]) or any(p in token for p in PLACEHOLDERS):
                continue
            yield token


def _texts():
    for doc in DOCS:
        yield doc.name, doc.read_text()
    for kind in ("hardware", "models", "scenarios"):
        for path in sorted((ROOT / kind).rglob("*.yaml")):
            yield str(path.relative_to(ROOT)), path.read_text()
    for path in sorted(PACKAGE.rglob("*.py")):
        yield str(path.relative_to(ROOT)), path.read_text()
    runner = CliRunner()
    for name in sorted(main.commands):
        yield f"{name} --help", runner.invoke(main, [name, "--help"]).output


def test_every_path_in_docs_help_and_specs_exists():
    missing = [
        f"{where}: {token}"
        for where, text in _texts()
        for token in _paths_in(text)
        if not (ROOT / token).exists()
    ]
    assert not missing, missing


CODE_REF = re.compile(
    r"`((?:specs|model|serving|optimise|studies|output|cli)/[\w/]+\.py)(?::([\w.]+))?"
)


#: The cost model: model.md (its contents list every section and the file it is in) and the
#: parts too long for one page.
MODEL_DOCS = [ROOT / "docs" / "model.md", *sorted((ROOT / "docs").glob("model-part-*.md"))]


@pytest.mark.parametrize(
    "doc", [*MODEL_DOCS, ROOT / "docs" / "architecture.md"], ids=lambda p: p.name
)
def test_code_the_docs_cite_exists(doc):
    for file, name in CODE_REF.findall(doc.read_text()):
        path = PACKAGE / file
        assert path.is_file(), f"{doc.name}: no inference_econ/{file}"
        if name:
            source = path.read_text()
            for part in name.split("."):
                assert re.search(
                    rf"(def|class) {part}\b|^{part}\b\s*[:=]|^\s+{part}\s*[:=]", source, re.M
                ), f"{doc.name}: {file} has no {part}"


def test_every_model_section_cited_is_in_the_contents():
    """A "model.md §X" cited in code, tests, benchmarks or docs is listed in model.md's contents,
    linked to the file whose heading it is (Parts E and F are files of their own)."""
    model = (ROOT / "docs" / "model.md").read_text()
    contents = model[
        model.index("## Contents") : model.index("\n## ", model.index("## Contents") + 4)
    ]
    listed = dict(re.findall(r"\[(§[A-G]\d+) [^\]]*\]\(([\w.-]*)#", contents))
    for section, file in listed.items():
        path = ROOT / "docs" / (file or "model.md")
        assert any(
            h.startswith(section + " ") for h in re.findall(r"^### (.*)$", path.read_text(), re.M)
        ), f"model.md's contents put {section} in {path.name}, which has no such heading"
    sources = [
        *PACKAGE.rglob("*.py"),
        *(ROOT / "tests").glob("*.py"),
        *(ROOT / "benchmarks").glob("*.py"),
    ]
    sources += [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
    for path in sources:
        for cited in re.findall(r"model\.md\)?,? (§[A-G]\d+)", path.read_text()):
            assert cited in listed, (
                f"{path.relative_to(ROOT)} cites model.md {cited}, not in its contents"
            )


def test_every_test_the_docs_name_exists():
    for where, text in _texts():
        for file, name in re.findall(r"(tests/[\w/]+\.py)::(\w+)", text):
            assert f"def {name}(" in (ROOT / file).read_text(), f"{where}: no {file}::{name}"


def _python_blocks(doc: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", doc.read_text(), re.S)


def test_user_guide_python_names_exist_and_its_setting_example_runs(monkeypatch):
    """Every ie.NAME of the user guide's Python blocks exists, and its make_setting/frontier
    lines run as written (make_setting(..., discrete=True) was refused: discrete is a method
    option). The frontier's search itself is stubbed: its options are still checked."""
    import inference_econ as ie
    from inference_econ import api

    blocks = _python_blocks(ROOT / "docs" / "user-guide.md")
    names = set(re.findall(r"\bie\.(\w+)", "".join(blocks)))
    assert {"make_setting", "frontier", "capacity"} <= names
    assert not [n for n in names if not hasattr(ie, n)]
    searched = []
    monkeypatch.setattr(api, "_frontier", lambda s, m: searched.append((s, m)))
    lines = [
        ln for ln in blocks[0].splitlines() if re.match(r"(setting = |ie\.frontier\(setting)", ln)
    ]
    assert len(lines) == 2, lines
    scope = {"ie": ie}
    exec("\n".join(lines), scope)  # noqa: S102 - the documentation's own example
    ((setting, method),) = searched
    assert setting.model.precision.weight_bits == 8 and setting.gpu.name == "H100-SXM"
    assert method.kind == "discrete" and scope["setting"] is setting


#: The one home of each quantity a new attention kind or precision changes: the
#: recipe for adding a model feature must name each, and each must be defined where it says.
HOMES = {
    "model/workload.py": ("Workload.layer_positions", "Workload.layer_positions_of_many"),
    "model/machine.py": ("Machine.gemm_rate", "usable_hbm_bytes", "min_gpus", "flop_rates"),
    "model/latency.py": ("StepModel.free_hbm_bytes",),
    "model/achievable.py": ("EngineStep.part", "EngineStep.step_work"),
    "model/economics.py": ("usd_per_mtok", "priced_grid"),
    "optimise/method.py": ("GRID_MAX_LOG2",),
}


def test_model_feature_recipe_names_every_home():
    text = (ROOT / "docs" / "architecture.md").read_text()
    recipe = text[text.index("## How to add a model feature") :]
    recipe = recipe[: recipe.index("\n## ", 4)]
    for file, names in HOMES.items():
        source = (PACKAGE / file).read_text()
        for name in names:
            assert name.split(".")[-1] in recipe, f"the recipe does not name {file}:{name}"
            for part in name.split("."):
                assert re.search(
                    rf"(def|class) {part}\b|^{part}\b\s*[:=]|^\s+{part}\s*[:=]", source, re.M
                ), f"{file} has no {part}"


#: The public functions of model/, serving/ and optimise/ that ``inference_econ`` exports.
CORE_EXPORTS = sorted(
    name
    for name, (module, _) in __import__("inference_econ")._EXPORTS.items()
    if module.split(".")[0] in ("model", "serving", "optimise") and name[0].islower()
)


@pytest.mark.parametrize("name", CORE_EXPORTS)
def test_public_core_functions_have_numpydoc_docstrings(name, monkeypatch):
    # Parameters (every argument of the signature), Returns and Examples sections, and the
    # examples give the output they show (run from the repository's root, as they say)
    import doctest
    import inspect

    import inference_econ as ie

    func = getattr(ie, name)
    doc = inspect.getdoc(func) or ""
    for section in ("Parameters\n----------", "Returns\n-------", "Examples\n--------"):
        assert section in doc, f"{name}: no {section.splitlines()[0]} section"
    described = doc.split("Parameters\n----------", 1)[1].split("\n\n", 1)[0]
    documented = set(re.findall(r"^(?:\*\*)?(\w+)(?:,| :|$)", described, re.M))
    documented |= set(re.findall(r"^\w+, (\w+)", described, re.M))
    missing = set(inspect.signature(func).parameters) - documented
    assert not missing, f"{name}: parameters not described: {sorted(missing)}"
    monkeypatch.chdir(ROOT)
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(verbose=False)
    for test in finder.find(func, name, globs={}):
        runner.run(test)
    assert runner.failures == 0, f"{name}: an example does not give the output it shows"


def test_the_test_index_names_every_module_and_existing_files():
    index = (ROOT / "tests" / "README.md").read_text()
    rows = set(re.findall(r"^\| `([\w/*]+)` \|", index, re.M))
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            continue
        module = "/".join(parts)
        covered = module in rows or any(
            r.endswith("/*") and module.startswith(r[:-1]) for r in rows
        )
        assert covered, f"tests/README.md: no row for {module}"
    for name in set(re.findall(r"`(test_\w+\.py)`", index)):
        assert (ROOT / "tests" / name).is_file(), f"tests/README.md names a missing {name}"


@pytest.mark.parametrize("folder", ["docs/img", "figures"])
def test_every_shipped_figure_is_the_one_its_record_stamps(folder):
    """A figure committed without its record (or the other way) makes the command that drew
    it refuse to draw it again on a fresh clone ("has changed since inference-econ wrote it")."""
    import hashlib
    import json

    record = json.loads((ROOT / folder / ".inference-econ-files.json").read_text())
    stale = []
    for name, (size, digest) in record["stamps"].items():
        data = (ROOT / folder / name).read_bytes()
        if len(data) != size or hashlib.sha256(data).hexdigest() != digest:
            stale.append(name)
    assert len(record["stamps"]) >= 8 and stale == []
