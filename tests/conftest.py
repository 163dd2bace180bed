"""Shared fixtures: the paper's settings, built once per test session."""

import contextlib
import functools
import gc
import os
import sys

import pytest

# The suite's budget is CPU seconds: the grid search runs on one thread, its cheapest (a
# second thread cuts wall time by ~1/6 for ~1/3 more CPU). Command-line tests in subprocesses
# inherit it; test_frontier checks that threads give the same frontier.
os.environ.setdefault("INFERENCE_ECON_THREADS", "1")

import inference_econ as ie

# The session holds a large heap (the package's imports, cached frontiers and figures) that
# each older-generation pass of the cyclic collector walks again: a youngest generation of
# 2,000 objects (700 by default) makes those passes a third as many, about 40 % of the
# collector's CPU saved for ~10 % more peak memory. A whole-heap pass after 100 middle ones
# (10 by default) leaves about 3 of the session's 15, ~1 s of CPU, to collect the cycles
# that outlived their test (the explicit collections of tests and of the session's end stay).
gc.set_threshold(2000, 10, 100)


#: A measured step file's ``precision`` -> the (weight, activation, KV cache) bits it ran at.
STEP_BITS = {"bf16": (16, 16, 16), "fp8": (8, 8, 16)}


def measured_steps(name: str, assumptions="refined"):
    """A file of whole steps measured on GPUs (``tests/data/<name>``: decode steps and
    one-prompt prefills on one GPU; BF16 unless its ``precision`` column says) with each step's
    time under ``assumptions`` (``predicted_ms``): a decode step as ``point`` prices it, a
    prefill as ``prefill_pass``."""
    from pathlib import Path

    import pandas as pd

    rows = pd.read_csv(Path(__file__).parent / "data" / name, comment="#")
    times = []
    for r in rows.itertuples():
        w, a, kv = STEP_BITS[getattr(r, "precision", "bf16")]
        bits = dict(weight_bits=w, activation_bits=a, kv_cache_bits=kv)
        if r.phase == "decode":
            p = ie.point(r.model, r.hardware, gpus=1, batch=r.batch, assumptions=assumptions,
                         context_tokens=r.cached_tokens, discrete=True, **bits)  # fmt: skip
        else:
            s = ie.make_setting(r.model, r.hardware, assumptions=assumptions, **bits)
            p = ie.prefill_pass(s, 1, r.prompt_tokens, batch=r.batch, discrete=True)
        times.append(p.latency_s * 1e3)
    return rows.assign(predicted_ms=times)


@functools.cache
def shipped_rows(name: str) -> tuple:
    """The rows of the measured file ``tests/data/<name>`` as ``load_measured`` reads them (a
    row is frozen): read once for the tests that read the file as it ships."""
    from pathlib import Path

    from inference_econ.measured.reading import load_measured

    return tuple(load_measured(Path(__file__).parent / "data" / name))


@pytest.fixture(scope="session")
def overlapped():
    """Per engine that runs it, DeepSeek-R1's point on 8 H200 with two-batch overlap (FP8
    weights, its own checkpoint; 1,000 / 100 tokens): TP8 EP8 under SGLang at batch 256; under
    vLLM, which splits only over data-parallel ranks, at 1,024 (at 256 the model's fastest
    layout has none, one batch a step being faster there than two halves each reading the
    experts). Exported once for the tests that read them: test_export.py checks their flags
    beside the other plans', test_export_two_batch_overlap.py their overlap."""
    from inference_econ import api

    kw = dict(prompt_tokens=1000, output_tokens=100, weight_bits=8, gpus=8, two_batch_overlap=True)
    return {
        "sglang": api.export("DeepSeek-R1", "H200", engine="sglang", batch=256, **kw),
        "vllm": api.export("DeepSeek-R1", "H200", engine="vllm", batch=1024, **kw),
    }


@pytest.fixture(scope="session")
def training_rows():
    """The project's validation set, ``tests/data/benchmarks_train.csv``, as ``load_measured``
    reads it (``shipped_rows``)."""
    return shipped_rows("benchmarks_train.csv")


def benchmark_script(name: str):
    """A script of benchmarks/ as a module (its functions tested as a user runs the script)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def pytest_configure(config):
    """The heap frozen at the session's end (``pytest_unconfigure``) is thawed by the last of
    pytest's clean-ups (registered before theirs, it runs after them): a process that runs
    another session finds the collector as it was. Hypothesis's own modules are imported
    as they are, without pytest's assertion rewriting (``_plain_hypothesis``)."""
    config.add_cleanup(gc.unfreeze)
    _plain_hypothesis(config)


def _plain_hypothesis(config):
    """pytest rewrites the asserts of every module of a distribution that ships a pytest
    plugin: Hypothesis's ~90 modules, whose asserts are its own internal checks, not the
    tests' (about 0.4 s of CPU to rewrite when ``test_properties.py`` imports it). The name is
    taken off the hook's list (a private set: left as it is where a pytest lacks it); the
    test modules, conftest and the plugin module itself are rewritten as before."""
    hook = getattr(config.pluginmanager, "rewrite_hook", None)
    marked = getattr(hook, "_must_rewrite", None)
    if isinstance(marked, set) and "hypothesis" in marked and "hypothesis" not in sys.modules:
        marked.discard("hypothesis")
        getattr(hook, "_marked_for_rewrite_cache", {}).clear()


def pytest_unconfigure(config):
    """At the session's end pytest collects garbage five times over, to report exceptions
    raised in finalizers, each pass a walk of the session's whole heap. One collection here
    (pytest is still listening for those exceptions), then what survives it frozen
    (``gc.freeze``): its five passes walk only what that collection's finalizers made, and
    about four walks of the heap (~0.4 s of CPU each on the whole suite) are saved."""
    gc.collect()
    gc.freeze()


def outline(source: str) -> tuple[tuple, tuple]:
    """A module's source as the tests of its shape read it, from one parse: (imports,
    definitions). An import is ``(line, level, module, names)``: ``import a.b`` is
    ``(line, 0, None, ("a.b",))``, ``from ..x import y`` is ``(line, 2, "x", ("y",))``; a
    definition is ``(name, is_class, lines)`` for each class and function, nested ones too."""
    import ast

    imports, definitions = [], []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imports.append((node.lineno, 0, None, tuple(a.name for a in node.names)))
        elif isinstance(node, ast.ImportFrom):
            names = tuple(a.name for a in node.names)
            imports.append((node.lineno, node.level, node.module, names))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            lines = node.end_lineno - node.lineno + 1
            definitions.append((node.name, isinstance(node, ast.ClassDef), lines))
    return tuple(imports), tuple(definitions)


@functools.cache
def module_outline(path) -> tuple[tuple, tuple]:
    """``outline`` of the file at ``path``, parsed once a run: test_architecture.py
    reads its imports, test_repository.py its definitions (~0.7 s of CPU to parse the
    package's modules; the outlines, not the trees, are kept)."""
    from pathlib import Path

    return outline(Path(path).read_text(encoding="utf-8"))


#: CPU seconds past which a command counts as stuck (a loop over a huge input, a hang on a
#: device file): generous, so that no load on a shared machine fails a test; speed is measured
#: by the scripts in benchmarks/, and no test asserts wall-clock time.
STUCK_CPU_S = 60.0


#: Pipeline degrees a test of the search's own machinery searches, where its presets' 10 only
#: repeat the blocks it compares (``fewer_pipeline_degrees``).
SEARCH_PIPELINE_DEGREES = 4


def fewer_pipeline_degrees(kwargs: dict, degrees: int = SEARCH_PIPELINE_DEGREES) -> dict:
    """``make_setting`` keywords with their preset (``assumptions``, the paper's if none)
    searching ``degrees`` pipeline degrees: each shortcut of the search and each check of a
    block acts within one pipeline degree, and degrees of both kinds remain (a column of
    degrees of the rows below the layers, and degrees the other rows share), at a fraction of
    the CPU."""
    preset = kwargs.get("assumptions", "paper")
    preset = ie.preset(preset) if isinstance(preset, str) else preset
    return {**kwargs, "assumptions": preset.replace(pipeline_degree_count=degrees)}


@pytest.fixture(scope="session")
def h100():
    return ie.load_hardware("H100-paper")


@pytest.fixture(scope="session")
def llama70_8bit_frontier():
    return ie.frontier("Llama 3 70B", "H100-paper", weight_bits=8)


@pytest.fixture(scope="session")
def bound_agrees_with_parts():
    """A check of a result row: its ``bound`` names the side holding at least 90 % of the read
    and arithmetic parts of its breakdown, or says ``mixed`` when neither does."""

    def check(row) -> bool:
        reads = row.weight_read_s + row.kv_read_s + row.activation_read_s
        share = row.arithmetic_s / (reads + row.arithmetic_s)
        return {"memory": share <= 0.1, "compute": share >= 0.9, "mixed": 0.1 < share < 0.9}[
            row.bound
        ]

    return check


@pytest.fixture
def fresh_searches(monkeypatch):
    """A function that gives the grid search empty caches (frontiers, frontier columns and
    pass latencies) for the rest of the test: what follows searches from scratch. The
    session's caches come back after the test (``optimiser.clear_caches`` would empty them
    for every later test, which would then search their settings again)."""
    import collections

    from inference_econ.optimise import optimiser

    def fresh():
        for name in ("_frontier_cached", "_columns_cached"):
            cached = getattr(optimiser, name)
            size = cached.cache_info().maxsize
            monkeypatch.setattr(optimiser, name, functools.lru_cache(size)(cached.__wrapped__))
        monkeypatch.setattr(optimiser, "_PASSES", collections.OrderedDict())

    return fresh


#: Requests an instance's whole run of the shipped measured rows replays where the --help
#: examples run (``help_example_runs``) and where tests read those runs again
#: (``whole_runs_of``): which rows are used and resolved is checked, not their figures.
EXAMPLE_WHOLE_RUNS = 200
#: The caches of ``replay`` kept for each whole-run length asked for: {requests: {name: cache}}.
_WHOLE_RUN_CACHES: dict[int, dict] = {}


def _empty_like(cache):
    """A new, empty cache of the kind of ``cache`` (an ``lru_cache`` of the same function and
    size, or an empty dict)."""
    if hasattr(cache, "cache_clear"):
        return functools.lru_cache(cache.cache_info().maxsize)(cache.__wrapped__)
    assert isinstance(cache, dict), type(cache)
    return type(cache)()


@contextlib.contextmanager
def whole_runs_of(requests: int):
    """Replays of whole runs (MLPerf Offline rows', trtllm-bench datasets) of at most
    ``requests`` requests an instance, extended to their length by their steady middle
    (``replay.RunSpan``), with the replays' caches of that length, kept for the rest of the
    run: the tests replaying the same rows at the same length read one computation. The
    caches of other lengths are left as they were (none is emptied)."""
    from inference_econ.measured import replay

    names = list(replay.CACHES)
    kept = _WHOLE_RUN_CACHES.setdefault(requests, {})
    for name in names:
        if name not in kept:
            kept[name] = _empty_like(getattr(replay, name))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(replay, "WHOLE_RUN_REQUESTS", requests)
        for name in names:
            patch.setattr(replay, name, kept[name])
        yield


@pytest.fixture(scope="module")
def short_offline_runs(request):
    """Whole runs (MLPerf Offline rows', trtllm-bench datasets) of at most 4,000 requests an
    instance (or the asking module's ``WHOLE_RUN_REQUESTS``), extended to their length by their
    steady middle (``replay.RunSpan``; the full runs are ``benchmarks/measured_validation.py``'s),
    for the module that asks (``whole_runs_of``)."""
    with whole_runs_of(getattr(request.module, "WHOLE_RUN_REQUESTS", 4000)):
        yield


@pytest.fixture
def small_runs(monkeypatch, request):
    """Measured Server rows replayed in runs of 300 requests per instance (or the asking
    module's ``SERVER_RUN_REQUESTS``; the search's resolution is unchanged), the replays' cache
    emptied before and after."""
    from inference_econ.measured import replay

    requests = getattr(request.module, "SERVER_RUN_REQUESTS", 300)
    monkeypatch.setattr(replay, "SERVER_REQUESTS", (requests, requests))
    replay.clear()
    yield
    replay.clear()


class _KeptPool:
    """A pool given to ``with`` that leaves it running at the block's end (its owner, the
    fixture ``spawned_worker``, shuts it down)."""

    def __init__(self, pool):
        self.pool = pool

    def __enter__(self):
        return self.pool

    def __exit__(self, *exc) -> bool:
        return False


@pytest.fixture(scope="session")
def spawned_worker():
    """One spawned worker process (``studies.execution.process_pool(1)``), started once and
    shared by the tests of ``--jobs`` (studies' and compare-measured's): each start costs
    ~0.7 s of CPU to spawn and import the package. What a test sends it is computed there as
    in a new worker (the results are compared with one process's, value for value)."""
    from inference_econ.studies import execution

    pool = execution.process_pool(1)
    yield pool
    pool.shutdown()


@pytest.fixture
def one_worker_process(monkeypatch, spawned_worker):
    """``studies.execution.process_pool`` (``--jobs N``'s pool of spawned worker processes,
    studies' and compare-measured's) giving the one worker process of ``spawned_worker``
    whatever it is asked: one runs every batch as several would. Returns the worker counts
    asked for, in order."""
    from inference_econ.studies import execution

    asked = []

    def one_worker(jobs: int):
        asked.append(jobs)
        return _KeptPool(spawned_worker)

    monkeypatch.setattr(execution, "process_pool", one_worker)
    return asked


#: ``point``'s arguments that ``point_in_a_fresh_process`` runs.
POINT = ["point", "Llama 3 70B", "-H", "H100-paper", "--gpus", "8", "--batch", "64"]


@pytest.fixture(scope="session")
def point_in_a_fresh_process():
    """``POINT`` run in a fresh interpreter as a text table, then again as CSV: {"text",
    "csv": (stdout, the modules loaded by then)}, the second's modules those of both runs
    at the interpreter's exit (a superset of the CSV run's own). What a command loads on start-up is checked here
    (test_cli.py, test_fast_output.py) on one interpreter's start, not one per check."""
    import ast
    import subprocess
    import sys

    code = (
        "import atexit, sys; from inference_econ.cli import main\n"
        "def loaded():\n"
        "    print('loaded:', sorted(sys.modules), file=sys.stderr, flush=True)\n"
        "atexit.register(loaded)  # after the command's own exit handlers\n"
        "for extra in ([], ['--format', 'csv']):\n"
        "    try:\n"
        "        main([*sys.argv[1:], *extra])\n"
        "    except SystemExit as e:\n"
        "        assert not e.code, e.code\n"
        "    print(END, flush=True)\n"
        "    if not extra:\n"
        "        loaded()\n"
    )
    end = "-- end of a run --"
    out = subprocess.run(
        [sys.executable, "-c", f"END = {end!r}\n" + code, *POINT], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    printed = out.stdout.split(end + "\n")[:2]
    loaded = [
        ast.literal_eval(line.removeprefix("loaded: "))
        for line in out.stderr.splitlines()
        if line.startswith("loaded: ")
    ]
    assert len(printed) == len(loaded) == 2, out.stderr
    return {"text": (printed[0], loaded[0]), "csv": (printed[1], loaded[1])}


# --- every --help example, run as written (docs/user-guide.md) -------------------------

#: Examples another test or fixture runs in full, and where: not run twice (``reproduce all``
#: by the fixture ``reproduced_all``, checked by test_figures.py's
#: test_reproduce_all_regenerates_the_committed_outputs).
RUN_ELSEWHERE = {"reproduce all": "tests/conftest.py::reproduced_all"}
#: The Hub repository of the import-hf example, served by a stand-in huggingface_hub (CI has no
#: network) with the repository's config.json, the file examples/config.json ships.
HUB_EXAMPLE = "meta-llama/Llama-3.1-8B-Instruct"


@functools.cache
def help_examples() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(command, arguments) of every example of every command's --help (subcommands too), in
    an order they can run in: a study before the report of the folder it writes."""
    import re
    import shlex

    from click.testing import CliRunner

    from inference_econ.cli import main

    found = []

    def walk(command, path):
        text = CliRunner().invoke(main, [*path, "--help"]).output
        block = re.search(r"Examples?:(.*?)(?:\n\s*\n|\Z)", text, re.S)
        lines = re.sub(r"\\\n\s*", " ", block.group(1)).splitlines() if block else []
        for line in lines:
            if line.strip().startswith("inference-econ "):
                found.append((" ".join(path) or "inference-econ", tuple(shlex.split(line)[1:])))
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            walk(sub, [*path, name])

    walk(main, [])
    return tuple(sorted(found, key=lambda e: e[1][0] != "study"))  # the rest keep their order


def _stand_in_hub(folder):
    """A huggingface_hub whose one repository (``HUB_EXAMPLE``) holds examples/config.json."""
    import shutil
    import types

    class EntryNotFoundError(Exception):  # the hub's name for a file a repository lacks
        pass

    def hf_hub_download(repo_id, filename, *, revision=None, **_):
        if repo_id != HUB_EXAMPLE or filename != "config.json":
            raise EntryNotFoundError(f"{repo_id}: no {filename} in the stand-in hub")
        target = folder / "hub" / repo_id / filename
        target.parent.mkdir(parents=True, exist_ok=True)
        return str(shutil.copy(folder / "examples" / "config.json", target))

    return types.SimpleNamespace(hf_hub_download=hf_hub_download)


def named_only(fig, stem, formats=("png", "svg")) -> list:
    """``output.plots.save`` without the rendering: the figure closed and each format's file
    written empty, atomically, as ``save`` names it (the 200 dpi files are checked by
    test_figures.py's test_figures_are_fit_for_a_report)."""
    import matplotlib.pyplot as plt

    from inference_econ.output import plots

    plt.close(fig)
    return [plots.write_atomic(f"{stem}.{fmt}", b"") for fmt in formats]


@pytest.fixture
def figures_named_only(monkeypatch):
    """Figures written as ``named_only`` writes them for the rest of the test: for a test of
    what a command computes and writes beside its figures, not of the images."""
    from inference_econ.output import plots

    monkeypatch.setattr(plots, "save", named_only)


@pytest.fixture(scope="session")
def reproduced_all(tmp_path_factory):
    """``reproduce all`` run once per session in this process (every figure drawn and its files
    named, not rendered: test_figures_are_fit_for_a_report checks the 200 dpi files), then each
    paper table as ``run_table`` gives it, from the frontiers that run computed (the frontier
    cache): the command's test and the tables' tests read one computation, not two. Returns
    the output folder, the click result and {table name: run_table's DataFrame}."""
    from click.testing import CliRunner

    from inference_econ.cli import main
    from inference_econ.output import plots
    from inference_econ.studies.tables import run_table

    folder = tmp_path_factory.mktemp("reproduce-all")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plots, "save", named_only)
        result = CliRunner().invoke(main, ["reproduce", "all", "--out", str(folder), "-q"])
    tables = {f"table-{i}": run_table(f"table-{i}") for i in range(1, 7)}
    return folder, result, tables


@pytest.fixture(scope="session")
def help_example_runs(tmp_path_factory):
    """Every --help example run as written, once per session, from a folder laid out as a
    fresh clone (the shipped examples/ and scenarios/, an empty models/ for what import-hf
    writes) in one process: examples share its imports and the frontiers earlier ones
    computed, and the report examples read the folder the study example wrote. Returns the
    folder and {command line: click result}; RUN_ELSEWHERE's examples are left out."""
    import shlex
    import sys
    from pathlib import Path

    from click.testing import CliRunner

    from inference_econ.cli import main

    root = Path(__file__).resolve().parents[1]
    folder = tmp_path_factory.mktemp("fresh-clone")
    for name in ("examples", "scenarios"):
        (folder / name).symlink_to(root / name, target_is_directory=True)
    (folder / "models").mkdir()
    results = {}
    # the examples' whole runs (trtllm-bench datasets) of at most EXAMPLE_WHOLE_RUNS requests
    # an instance, extended by their steady middle: what is checked is that each example runs
    # and what it writes, not its figures (``whole_runs_of``)
    with whole_runs_of(EXAMPLE_WHOLE_RUNS), pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        patch.setitem(sys.modules, "huggingface_hub", _stand_in_hub(folder))
        for _, args in help_examples():
            line = shlex.join(args)
            if line not in RUN_ELSEWHERE:
                results[line] = CliRunner().invoke(main, list(args))
    return folder, results
