"""Studies: expansion and exclusion, validation, the cache, identical results however the cells
are run (one process, two processes, a Dask cluster), a killed run resuming, failed cells."""

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pandas as pd
import pytest
from click.testing import CliRunner

import inference_econ as ie
from inference_econ.cli import main
from inference_econ.runs import study_run
from inference_econ.studies import study as study_module
from inference_econ.studies.study import expand, load_study, study_from_dict

TINY = """
title: Tiny study
axes:
  model: [Llama 3 70B, Llama 3 8B]
  hardware: [H100-paper, A100-paper]
  precision:
    - {label: FP8, weight_bits: 8}
    - {label: BF16, weight_bits: 16}
exclude:
  - {model: Llama 3 8B, precision: BF16}
  - {model: Llama 3 8B, hardware: "A100*"}
defaults: {grid_points: 60}
at_speeds: [50, 1000]
"""


def write(tmp_path, text, name="study.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture(scope="module")
def tiny_file(tmp_path_factory):
    return write(tmp_path_factory.mktemp("tiny"), TINY)


@pytest.fixture(scope="module")
def tiny_run(tiny_file, tmp_path_factory):
    out = tmp_path_factory.mktemp("tiny-out")
    return ie.study(tiny_file, out, jobs=1), out


def test_expansion_and_exclusion(tiny_file):
    study = load_study(tiny_file)
    cells = expand(study)
    # 2 x 2 x 2 = 8, minus 8B at BF16 (2 cells), minus 8B on A100 at FP8 (the other is gone)
    assert [c.values for c in cells] == [
        {"model": "Llama 3 70B", "hardware": "H100-paper", "precision": "FP8"},
        {"model": "Llama 3 70B", "hardware": "H100-paper", "precision": "BF16"},
        {"model": "Llama 3 70B", "hardware": "A100-paper", "precision": "FP8"},
        {"model": "Llama 3 70B", "hardware": "A100-paper", "precision": "BF16"},
        {"model": "Llama 3 8B", "hardware": "H100-paper", "precision": "FP8"},
    ]
    first = cells[0].setting
    assert first.model.precision.weight_bits == 8 and first.gpu.name == "H100-paper"
    assert cells[1].setting.model.precision.weight_bits == 16
    assert cells[0].method.grid_points == 60
    assert len({c.key for c in cells}) == 5
    assert cells[0].label == "Llama 3 70B · H100-paper · FP8"


def test_numeric_axes_and_what_ifs_expand():
    data = {
        "title": "t",
        "axes": {
            "context_tokens": [1000, 8000],
            "hardware_scale": [None, {"hbm_bandwidth_bytes_per_s": 2}],
        },
        "defaults": {"model": "Llama 3 70B", "hardware": "H100-paper"},
        "exclude": [{"context_tokens": 8000, "hardware_scale": "none"}],
    }
    cells = expand(study_from_dict(data))
    assert [c.values for c in cells] == [
        {"context_tokens": 1000, "hardware_scale": "none"},
        {"context_tokens": 1000, "hardware_scale": "hbm_bandwidth_bytes_per_s=2"},
        {"context_tokens": 8000, "hardware_scale": "hbm_bandwidth_bytes_per_s=2"},
    ]
    base, fast = cells[0].setting.gpu, cells[1].setting.gpu
    assert fast.hbm_bandwidth_bytes_per_s == 2 * base.hbm_bandwidth_bytes_per_s
    assert cells[2].setting.context_tokens == 8000.0


def test_an_exclude_rule_matches_a_number_by_its_text_and_patterns():
    """A rule's text is matched against a number as the axis lists it: "8*" (the documented
    patterns) and a quoted "8000" had been refused as matching no value of 1000, 8000."""
    data = {
        "title": "t",
        "axes": {"context_tokens": [1000, 8000], "hardware": ["H100-paper", "A100-paper"]},
        "defaults": {"model": "Llama 3 70B"},
    }
    for rule in ({"context_tokens": "8*"}, {"context_tokens": "8000"}, {"context_tokens": 8000}):
        cells = expand(study_from_dict({**data, "exclude": [rule]}))
        assert [c.values["context_tokens"] for c in cells] == [1000, 1000], rule
    with pytest.raises(ie.SpecError, match="'9\\*' matches no value of the axis"):
        study_from_dict({**data, "exclude": [{"context_tokens": "9*"}]})


@pytest.mark.parametrize(
    "change, field, words",
    [
        ("  model: [Llama 3 70B, Llama 3 8B]", "axes.model[1]", "no model named 'Lama 3 8B'"),
        ("  hardware: [H100-paper, A100-paper]", "axes.hardware[0]", "no hardware spec"),
        ("    - {label: FP8, weight_bits: 8}", "axes.precision[0].weight_bit", "weight_bits"),
        ("defaults: {grid_points: 60}", "defaults.grid_points", "expected a whole number >= 4"),
        ("at_speeds: [50, 1000]", "at_speeds", "expected a number > 0"),
        ("  - {model: Llama 3 8B, precision: BF16}", "exclude[0].model", "matches no value"),
        ('  - {model: Llama 3 8B, hardware: "A100*"}', "exclude[1].gpu", "is not an axis"),
    ],
)
def test_errors_name_the_file_the_axis_and_the_field(tmp_path, change, field, words):
    bad = {
        "  model: [Llama 3 70B, Llama 3 8B]": "  model: [Llama 3 70B, Lama 3 8B]",
        "  hardware: [H100-paper, A100-paper]": "  hardware: [H100-papr, A100-paper]",
        "    - {label: FP8, weight_bits: 8}": "    - {label: FP8, weight_bit: 8}",
        "defaults: {grid_points: 60}": "defaults: {grid_points: 2}",
        "at_speeds: [50, 1000]": "at_speeds: [50, -1]",
        "  - {model: Llama 3 8B, precision: BF16}": "  - {model: Llama 3 9B, precision: BF16}",
        '  - {model: Llama 3 8B, hardware: "A100*"}': '  - {model: Llama 3 8B, gpu: "A100*"}',
    }[change]
    path = write(tmp_path, TINY.replace(change, bad))
    with pytest.raises(ie.SpecError) as info:
        load_study(path)
    msg = str(info.value)
    assert str(path) in msg and field in msg and words in msg, msg
    result = CliRunner().invoke(main, ["study", str(path)])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr


def test_axis_errors(tmp_path):
    cases = {
        "contexts: [1000]": ("axes.contexts", "did you mean 'context_tokens'"),
        "context_tokens: [-5]": ("axes.context_tokens[0]", "expected a number >= 0"),
        "weight_bits: [8]": ("axes.precision", "sets weight_bits, which axis 'weight_bits'"),
        "model: []": ("axes.model", "non-empty list"),
        "point: [{label: x}]": ("axes.point", "is the name of a column"),
    }
    for extra, (field, words) in cases.items():
        text = TINY.replace("  model: [Llama 3 70B, Llama 3 8B]", f"  {extra}")
        if not extra.startswith("model"):
            text = TINY.replace("axes:\n", f"axes:\n  {extra}\n")
        with pytest.raises(ie.SpecError) as info:
            load_study(write(tmp_path, text))
        assert field in str(info.value) and words in str(info.value), str(info.value)


def test_summary_axes_left_unplaced_go_where_no_axis_is_yet():
    data = {
        "title": "t",
        "axes": {"model": ["Llama 3 70B", "Llama 3 8B"], "hardware": ["H100-paper", "A100-paper"]},
    }
    assert study_from_dict(data).summary["rows"] == "model"
    placed = study_from_dict({**data, "summary": {"rows": "hardware"}}).summary
    assert (placed["rows"], placed["columns"], placed["panels"]) == ("hardware", "model", None)
    placed = study_from_dict({**data, "summary": {"columns": "model"}}).summary
    assert (placed["rows"], placed["columns"]) == ("hardware", "model")
    with pytest.raises(ie.SpecError) as info:
        study_from_dict({**data, "summary": {"rows": "model", "columns": "model"}})
    assert "summary.columns" in str(info.value) and "the summary's rows already" in str(info.value)


def test_a_summary_speed_the_metric_does_not_read_is_refused():
    data = {"title": "t", "axes": {"model": ["Llama 3 8B"], "hardware": ["H100-paper"]}}
    data["at_speeds"] = [50]
    summary = {"metric": "fastest_speed", "speed": 77}
    with pytest.raises(ie.SpecError) as info:
        study_from_dict({**data, "summary": summary})
    assert "summary.speed" in str(info.value) and "not fastest_speed" in str(info.value)
    summary = {"metric": "cost_at_speed", "speed": 50}
    assert study_from_dict({**data, "summary": summary}).summary["speed"] == 50


def test_key_points_and_tables(tiny_run):
    result, out = tiny_run
    kp, fr = result.key_points, result.frontiers
    assert result.computed == 5 and result.cached == 0 and result.complete
    assert set(kp["point"]) == {"fastest", "cheapest", "preference", "at_speed"}
    assert kp["feasible"].dtype == bool and kp[kp.point != "at_speed"]["feasible"].all()
    assert len(kp) == 5 * 5  # fastest, cheapest, preference, two speeds
    for col in ("model", "hardware", "precision", "cell", "cell_key", "gpu_name", "weight_bits"):
        assert col in kp and col in fr
    direct = ie.frontier("Llama 3 70B", "A100-paper", weight_bits=16, grid_points=60)
    row = kp[(kp.hardware == "A100-paper") & (kp.precision == "BF16") & (kp.point == "fastest")]
    assert row["tokens_per_s"].item() == direct.fastest()["tokens_per_s"]
    assert row["gpus"].item() == direct.fastest()["gpus"]
    cell = fr[(fr.hardware == "A100-paper") & (fr.precision == "BF16")]
    assert (
        len(cell) == len(direct)
        and cell["usd_per_mtok"].tolist() == direct.points["usd_per_mtok"].tolist()
    )
    for _, g in kp[kp.feasible].groupby("cell"):
        p = g.set_index(g["point"] + g["target_tokens_per_s"].fillna(0).astype(str))
        assert p.loc["cheapest0.0", "usd_per_mtok"] <= p.loc["preference0.0", "usd_per_mtok"]
        assert p.loc["preference0.0", "usd_per_mtok"] <= p.loc["fastest0.0", "usd_per_mtok"]
        assert p.loc["at_speed50.0", "tokens_per_s"] >= 50
    # the cheapest point at >= 50 tok/s is the cheapest frontier point that fast
    for cell_id, g in fr.groupby("cell"):
        at = kp[(kp.cell == cell_id) & (kp.point == "at_speed") & (kp.target_tokens_per_s == 50)]
        assert at["usd_per_mtok"].item() == g[g.tokens_per_s >= 50]["usd_per_mtok"].min()
    # Llama 3 70B reaches at most ~150 tok/s here: 1000 tok/s is out of reach, and says so
    far = kp[
        (kp.point == "at_speed") & (kp.target_tokens_per_s == 1000) & (kp.model == "Llama 3 70B")
    ]
    assert not far["feasible"].any() and far["usd_per_mtok"].isna().all()
    assert far["note"].str.contains("the fastest configuration reaches").all()
    names = {p.name for p in out.iterdir()}
    assert {"key_points.csv", "frontiers.csv", "study.json", "summary.png", "cache"} <= names
    for name, table in (("key_points", kp), ("frontiers", fr)):  # '#' lines, then the table
        text = (out / f"{name}.csv").read_text()
        assert text.startswith("# Computed with: study Tiny study (") and "5, each with" in text
        assert len(pd.read_csv(out / f"{name}.csv", comment="#")) == len(table)


def test_parquet_equals_csv(tiny_run):
    pytest.importorskip("pyarrow")
    _, out = tiny_run
    parquet = pd.read_parquet(out / "key_points.parquet")
    pd.testing.assert_frame_equal(parquet, tiny_run[0].key_points, check_dtype=False)
    assert len(pd.read_parquet(out / "frontiers.parquet")) == len(tiny_run[0].frontiers)


def test_a_cell_that_reaches_every_speed_is_feasible_throughout(tiny_run):
    result, _ = tiny_run
    fr = result.frontiers
    points = fr.columns[list(fr.columns).index("frontier_index") + 1 :]
    front = fr.loc[fr.cell == 0, points].reset_index(drop=True)
    kp = study_module.key_points(ie.Frontier("x", front), at_speeds=(1.0, 10.0))
    assert kp["feasible"].dtype == bool and kp["feasible"].all() and (kp["note"] == "").all()
    assert list(kp["point"]) == ["fastest", "cheapest", "preference", "at_speed", "at_speed"]


def test_cache_recomputes_only_changed_cells(tiny_file, tiny_run, tmp_path, monkeypatch):
    result, first = tiny_run
    cache = tmp_path / "cache"
    shutil.copytree(first / "cache", cache)  # the fixture's folder stays as it was
    again = ie.study(tiny_file, cache_dir=cache, jobs=1)
    assert again.computed == 0 and again.cached == 5
    pd.testing.assert_frame_equal(again.key_points, result.key_points)
    # a new hardware value: only its cells are computed
    grown = write(tmp_path, TINY.replace("A100-paper]", "A100-paper, H200-paper]"))
    bigger = ie.study(grown, cache_dir=cache, jobs=1)
    assert bigger.cached == 5 and bigger.computed == 3  # 70B x2 precisions + 8B FP8 on H200
    # --recompute ignores the cache
    redo = ie.study(tiny_file, cache_dir=cache, jobs=1, recompute=True)
    assert redo.cached == 0 and redo.computed == 5
    # a changed package version invalidates every cell
    monkeypatch.setattr(study_module, "package_version", lambda: "999.0")
    fresh = ie.study(tiny_file, cache_dir=cache, jobs=1)
    assert fresh.cached == 0 and fresh.computed == 5
    pd.testing.assert_frame_equal(
        fresh.key_points.drop(columns="cell_key"), result.key_points.drop(columns="cell_key")
    )
    assert not (tmp_path / "key_points.csv").exists()  # a cache alone writes no tables


def test_jobs_2_gives_identical_results(tiny_file, tiny_run, tmp_path, one_worker_process):
    """``jobs=2``: the cells in batches for two workers, a pool of two worker processes asked
    for, one started (``one_worker_process``), which computes every batch."""
    two = ie.study(tiny_file, tmp_path, jobs=2)
    assert one_worker_process == [2]
    assert two.computed == 5
    pd.testing.assert_frame_equal(two.key_points, tiny_run[0].key_points)
    pd.testing.assert_frame_equal(two.frontiers, tiny_run[0].frontiers)
    for name in ("key_points.csv", "frontiers.csv"):
        assert (tmp_path / name).read_bytes() == (tiny_run[1] / name).read_bytes()


def test_dask_cluster_keeps_partial_results_and_gives_identical_results(
    tiny_file, tiny_run, tmp_path, monkeypatch, fresh_searches, figures_named_only
):
    distributed = pytest.importorskip("distributed")
    from inference_econ.studies import execution

    real = study_module.compute_cell

    def flaky(setting, method):
        if setting.gpu.name == "A100-paper" and setting.model.precision.weight_bits == 16:
            raise MemoryError("worker ran out of memory")
        return real(setting, method)

    args = ["study", str(tiny_file), "--out", str(tmp_path), "--dask"]
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        monkeypatch.setattr(execution, "compute_cell", flaky)
        broken = CliRunner().invoke(main, [*args, cluster.scheduler_address])
        assert broken.exit_code == 1 and "1 cell failed" in broken.stderr, broken.stderr
        assert len(list((tmp_path / "cache").rglob("*.json"))) == 4  # the others are kept
        monkeypatch.setattr(execution, "compute_cell", real)
        result = CliRunner().invoke(main, [*args, cluster.scheduler_address])
        assert result.exit_code == 0, result.output
        assert "1 computed, 4 from the cache" in result.stderr
        for name in ("key_points.csv", "frontiers.csv"):
            assert (tmp_path / name).read_bytes() == (tiny_run[1] / name).read_bytes()
        # an interrupted run's cache: two cells deleted, the rerun computes those two only
        cached = sorted((tmp_path / "cache").rglob("*.json"))
        for path in cached[1:3]:
            path.unlink()
        resumed = CliRunner().invoke(main, [*args, cluster.scheduler_address])
        assert resumed.exit_code == 0 and "2 computed, 3 from the cache" in resumed.stderr
        assert sorted((tmp_path / "cache").rglob("*.json")) == cached
    for name in ("key_points.csv", "frontiers.csv"):
        assert (tmp_path / name).read_bytes() == (tiny_run[1] / name).read_bytes()
    # each cell the cluster computed is the frontier a direct call gives, value for value
    fresh_searches()  # the in-process workers' searches are not reused
    for cell in expand(load_study(tiny_file))[::2]:
        payload = study_run.CellCache(tmp_path / "cache").get(cell.key)
        got = study_module.payload_frontier(payload).points
        pd.testing.assert_frame_equal(got, ie.frontier(cell.setting, method=cell.method).points)
    # --dask local starts (and stops) a LocalCluster of --jobs worker processes, end to end:
    # the workers import the package and search the cells. The cluster asked for is recorded;
    # the one started has one worker process (each costs ~2 s of CPU to start), which runs
    # every cell as two would
    made, real_cluster = [], distributed.LocalCluster

    def recorded_cluster(**kwargs):
        made.append(kwargs)
        return real_cluster(**{**kwargs, "n_workers": 1})

    monkeypatch.setattr(distributed, "LocalCluster", recorded_cluster)
    local = tmp_path / "local"
    result = CliRunner().invoke(
        main, ["study", str(tiny_file), "--out", str(local), "--dask", "local", "--jobs", "2"]
    )
    assert result.exit_code == 0 and "5 computed" in result.stderr, result.output
    assert made == [
        {"n_workers": 2, "threads_per_worker": 1, "processes": True, "dashboard_address": None}
    ]
    assert ": 1 workers" in result.stderr  # the cluster's progress: its workers, then cells
    assert "cell 5/5 done" in result.stderr, result.stderr  # the last cell always gets a line
    for name in ("key_points.csv", "frontiers.csv"):
        assert (local / name).read_bytes() == (tiny_run[1] / name).read_bytes()
    # the rerun finds all five in the cache and computes nothing
    again = CliRunner().invoke(
        main, ["study", str(tiny_file), "--out", str(local), "--dask", "local", "--jobs", "2"]
    )
    assert again.exit_code == 0 and "0 computed, 5 from the cache" in again.stderr, again.stderr


def test_cells_in_this_process_search_on_one_thread(tiny_file, monkeypatch):
    """``--jobs 1`` computes its cells here on one search thread, as a worker process does
    (a 100 x 100 grid costs ~1/3 more CPU on two), unless INFERENCE_ECON_THREADS says
    otherwise; the variable is left as it was."""
    from inference_econ.optimise.optimiser import THREADS_VARIABLE, search_threads
    from inference_econ.studies import execution

    threads = []

    def searched(setting, method):
        threads.append(search_threads())
        return {"elapsed_s": 0.0}

    monkeypatch.setattr(execution, "compute_cell", searched)
    monkeypatch.setattr(execution.os, "cpu_count", lambda: 4)  # the default would be 4
    cells = expand(load_study(tiny_file))[:2]
    monkeypatch.delenv(THREADS_VARIABLE, raising=False)
    assert search_threads() == 4
    execution.run_cells(cells, lambda c, p: None, lambda c, r: None, jobs=1)
    assert threads == [1, 1] and THREADS_VARIABLE not in os.environ
    monkeypatch.setenv(THREADS_VARIABLE, "3")
    execution.run_cells(cells, lambda c, p: None, lambda c, r: None, jobs=1)
    assert threads[2:] == [3, 3] and os.environ[THREADS_VARIABLE] == "3"


def test_batches_keep_cells_sharing_passes_together_and_split_the_work():
    from inference_econ.studies import execution

    data = {
        "title": "t",
        "axes": {
            "hardware": ["H100-paper", "A100-paper", "V100-paper"],
            "acceptance": [0.5, 0.7, 0.9],
            "context_tokens": [1000, 8000],
        },
        "defaults": {"model": "Llama 3 70B", "draft": "Llama 3 8B", "grid_points": 40},
    }
    cells = expand(study_from_dict(data))
    assert len(cells) == 18
    # every cell: (0.19 s + 1600 points x 1e-5 s) x 4.5 with a draft = 0.927 s of CPU
    assert execution.cell_seconds(cells[0]) == pytest.approx(0.927)
    group = {c.key: study_module.pass_group(c.setting) for c in cells}
    assert len(set(group.values())) == 6  # the 3 acceptance rates of a GPU and context share
    # 1 worker: batches of at most min(3 s, 16.7 s / 4): one group (2.8 s) each, never split;
    # 2 workers: at most 16.7 / 8 = 2.09 s: a group cut into 2 cells and 1; 3: one cell each
    for workers, sizes in ((1, [3] * 6), (2, [2, 1] * 6), (3, [1] * 18), (50, [1] * 18)):
        made = execution.batches(cells, workers)
        assert [len(b) for b in made] == sizes
        assert all(len({group[c.key] for c in b}) == 1 for b in made)
        assert [c.key for b in made for c in b] == [c.key for c in sorted(cells, key=lambda c: (
            list(group.values()).index(group[c.key]), c.index))]  # fmt: skip


def test_the_summary_table_does_not_import_matplotlib():
    code = (
        "import sys; import inference_econ.output.study_plots, inference_econ.runs.study_run; "
        "assert 'matplotlib' not in sys.modules, 'imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_unreachable_scheduler_is_one_line(tiny_file, monkeypatch):
    pytest.importorskip("distributed")
    from inference_econ.studies import execution

    monkeypatch.setattr(execution, "CONNECT_TIMEOUT", "1s")
    result = CliRunner().invoke(main, ["study", str(tiny_file), "--dask", "tcp://127.0.0.1:9"])
    assert result.exit_code == 2 and "cannot reach the Dask scheduler" in result.stderr


def test_a_failed_cell_keeps_the_others(tiny_file, tiny_run, tmp_path, monkeypatch):
    real = study_module.compute_cell

    def flaky(setting, method):
        if setting.gpu.name == "A100-paper" and setting.model.precision.weight_bits == 16:
            raise MemoryError("worker ran out of memory")
        return real(setting, method)

    from inference_econ.studies import execution

    monkeypatch.setattr(execution, "compute_cell", flaky)
    broken = ie.study(tiny_file, cache_dir=tmp_path, jobs=1)
    assert len(broken.failed) == 1 and broken.computed == 4 and not broken.complete
    failed = broken.key_points[broken.key_points.point == "failed"]
    assert len(failed) == 1 and "out of memory" in failed["note"].item()
    monkeypatch.setattr(execution, "compute_cell", real)
    fixed = ie.study(tiny_file, cache_dir=tmp_path, jobs=1)
    assert fixed.computed == 1 and fixed.cached == 4 and fixed.complete
    pd.testing.assert_frame_equal(fixed.key_points, tiny_run[0].key_points)


def test_a_killed_run_resumes(tiny_file, tiny_run, tmp_path, figures_named_only):
    cache = tmp_path / "cache"
    proc = subprocess.Popen(
        [sys.executable, "-m", "inference_econ.cli", "study", str(tiny_file), "--out", str(tmp_path),
         "--jobs", "1", "-q"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not list(cache.rglob("*.json")) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done = len(list(cache.rglob("*.json")))
    assert 1 <= done < 5, done
    assert not (tmp_path / "key_points.csv").exists()
    resumed = ie.study(tiny_file, tmp_path, jobs=1)
    assert resumed.cached == done and resumed.computed == 5 - done
    assert (tmp_path / "key_points.csv").read_bytes() == (
        tiny_run[1] / "key_points.csv"
    ).read_bytes()


def test_study_command_prints_the_summary(tiny_file, tiny_run):
    result = CliRunner().invoke(
        main, ["study", str(tiny_file), "--format", "csv", "--jobs", "1", "-q"]
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    # what it was computed with, as every CSV; the value's column says what it is
    said = [line for line in lines if line.startswith("#")]
    assert said[0].startswith(f"# Computed with: study Tiny study ({tiny_file})")
    assert "axes model: Llama 3 70B, Llama 3 8B; hardware: H100-paper, A100-paper" in said[0]
    assert "grid_points 60" in said[0]
    assert said[1].startswith("# Ideal bound: paper preset")  # not expected figures
    lines = lines[len(said) :]
    header = "precision,model,hardware,cheapest_usd_per_mtok_at_50_tokens_per_s"
    assert lines[0] == header and len(lines) == 6
    kp = tiny_run[0].key_points
    at50 = kp[(kp.point == "at_speed") & (kp.target_tokens_per_s == 50)]
    cheapest = at50[(at50.model == "Llama 3 8B")]["usd_per_mtok"].item()
    assert f"{cheapest:.2g}"[:4] in result.stdout


def test_a_study_file_is_not_a_scenario(tiny_file):
    with pytest.raises(ie.SpecError, match="this is a study file"):
        ie.load_scenario(tiny_file)


def test_shipped_study_expands_to_at_least_500_cells():
    study = load_study("studies/accelerators-models")
    cells = expand(study)
    assert len(cells) == 600 and len({c.key for c in cells}) == 600
    drafts = {c.values["model"] for c in cells if c.setting.spec is not None}
    assert drafts == {"Llama 3.3 70B", "Llama 3.1 405B"}


def test_study_result_has_the_manifest(tiny_run):
    import json

    manifest = json.loads((tiny_run[1] / "study.json").read_text())
    assert manifest["complete"] and len(manifest["cells"]) == 5
    assert manifest["assumptions"]["paper"]["pipeline_degree_count"] == 10
    assert manifest["hardware"]["H100-paper"]["price_usd_per_hour"] == 2.1  # hardware/paper
    assert study_run.package_version() == manifest["package_version"]


@pytest.mark.parametrize(
    "metric, point, column, pick, name",
    [
        ("cost_at_speed", "at_speed", "usd_per_mtok", "min", "cheapest_usd_per_mtok_at_50_tokens_per_s"),
        ("preference_cost", "preference", "usd_per_mtok", "min", "preference_usd_per_mtok"),
        ("cheapest_cost", "cheapest", "usd_per_mtok", "min", "cheapest_usd_per_mtok"),
        ("fastest_speed", "fastest", "tokens_per_s", "max", "fastest_tokens_per_s"),
    ],
)  # fmt: skip
def test_summary_table_is_the_best_over_the_other_axes(tiny_run, metric, point, column, pick, name):
    import dataclasses

    from inference_econ.output.study_plots import summary_table

    result, _ = tiny_run
    summary = {
        "rows": "model",
        "columns": "hardware",
        "panels": None,
        "metric": metric,
        "speed": 50,
    }
    study = dataclasses.replace(result.study, summary=summary)
    best, meaning = summary_table(result.key_points, study)
    kp = result.key_points
    rows = kp[(kp.point == point) & kp.feasible]
    if point == "at_speed":
        rows = rows[rows.target_tokens_per_s == 50]
    expected = rows.groupby(["model", "hardware"])[column].agg(pick)
    assert list(best.columns) == ["model", "hardware", name]  # named by what it is
    got = best.set_index(["model", "hardware"])[name]
    assert got.sort_index().tolist() == expected.sort_index().tolist()
    assert "best over precision" in meaning


def test_infeasible_cells_show_as_na_with_a_note(tmp_path, figures_named_only):
    """A cell with no feasible configuration (DeepSeek-V3's 668 GB of weights on at most 4
    H100s) is an n/a row of the summary with its reason, not a KeyError or a dropped row; the
    '#' line names the preset."""
    text = (
        "title: t\naxes:\n  model: [DeepSeek-V3, Llama 3 8B]\n  hardware: [H100]\n"
        "at_speeds: [20]\ndefaults: {max_gpus: 4, grid_points: 12}\n"
    )
    path, out = write(tmp_path, text), str(tmp_path / "o")
    args = ["study", str(path), "--out", out, "--jobs", "1", "-q"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()  # after the line saying the figures are a bound:
    assert lines[0].startswith("Ideal bound: paper preset")
    rows = {ln.split()[0]: ln.split()[-1] for ln in lines[4:6]}
    assert rows["DeepSeek-V3"] == "n/a" and float(rows["Llama"].lstrip("$")) > 0, result.stdout
    assert "n/a: no feasible configuration in 1 of 2 rows" in result.stdout
    # 668 GB over the H100's 81,559 MiB (85.5e9 bytes)
    assert "7.81 GPUs" in result.stdout and "2 cells: 2 computed" in result.stderr
    csv = CliRunner().invoke(main, [*args, "--format", "csv"]).stdout  # from the cache
    assert csv.splitlines()[0].startswith("# Computed with") and "assumptions paper" in csv
    assert "\nDeepSeek-V3,\n" in csv
    # every cell infeasible, no at_speeds: was a KeyError on 'target_tokens_per_s'
    only = write(
        tmp_path, text.replace(", Llama 3 8B", "").replace("at_speeds: [20]\n", ""), "1.yaml"
    )
    result = CliRunner().invoke(main, ["study", str(only), "--jobs", "1", "-q"])
    assert result.exit_code == 0 and "H100      n/a" in result.stdout, result.output
    assert "1 cell: 1 computed" in result.stderr


@pytest.mark.parametrize(
    "value, problem",
    [
        (-1, "a negative value (-1)"),
        (-float("inf"), "a negative value (-inf)"),
        (-(10**400), "a negative value (below -1e300)"),  # was an OverflowError
        ({"a": 1}, "a value that is neither a number nor text"),
        (None, ""),
        (float("nan"), ""),
        (10**400, ""),
        ("text", ""),
    ],
)
def test_a_hand_edited_cached_value_is_checked(tiny_run, value, problem):
    import json

    result, out = tiny_run
    payload = study_run.CellCache(out / "cache").get(result.cells[0].key)
    assert study_module.payload_problem(payload) == ""
    columns = payload["columns"]
    payload["data"][1][columns.index("mfu")] = value  # not one of the frontier's measures
    assert study_module.payload_problem(json.loads(json.dumps(payload))) == problem


def test_frontier_csv_in_chunks_is_the_same_bytes(tiny_run, tmp_path):
    from inference_econ.output.files import write_atomic
    from inference_econ.output.render import csv_chunks, csv_text

    frontiers = tiny_run[0].frontiers.copy()
    frontiers.loc[7, "mfu"] = float("inf")  # written blank
    frontiers.loc[len(frontiers) - 1, "bound"] = "=cmd"  # a formula is defused
    whole = csv_text(frontiers, {"study": "t"}, float_format=None).encode()
    assert ",=cmd" not in whole.decode() and "inf" not in whole.decode()
    # several chunks and a short last one, one short of the table, the table, more than it
    assert len(frontiers) > 2 * 41 and len(frontiers) % 41
    for rows in (41, len(frontiers) - 1, len(frontiers), 50_000):
        chunks = list(csv_chunks(frontiers, {"study": "t"}, float_format=None, rows=rows))
        assert b"".join(chunks) == whole
        assert len(chunks) == -(-len(frontiers) // rows)
    # one row a chunk, on the first rows (a chunk a row of the whole table costs seconds)
    head = frontiers.head(12)
    chunks = list(csv_chunks(head, {"study": "t"}, float_format=None, rows=1))
    assert len(chunks) == 12
    assert b"".join(chunks) == csv_text(head, {"study": "t"}, float_format=None).encode()
    path = write_atomic(tmp_path / "f.csv", csv_chunks(frontiers, {"study": "t"}, None, rows=53))
    assert path.read_bytes() == whole
    # the study's own file is that text
    assert (tiny_run[1] / "frontiers.csv").read_bytes() == csv_text(
        tiny_run[0].frontiers, study_run.study_metadata(tiny_run[0]), float_format=None
    ).encode()


def test_a_study_states_the_model_its_defaults_name_by_name_and_shipped_file(
    tmp_path, one_worker_process
):
    """A model in ``defaults`` had been stated by its absolute path ("/home/.../models/
    llama-3.1-8b.yaml"): its name and its file as every output names a shipped one. Its two
    cells go to the worker processes of the default ``--jobs`` (``one_worker_process``)."""
    path = tmp_path / "s.yaml"
    path.write_text(
        "title: one model\naxes:\n  hardware: [H100-paper, A100-paper]\n"
        "defaults: {model: Llama 3.1 8B, grid_points: 12}\n"
    )
    result = CliRunner().invoke(main, ["study", str(path), "-q"], catch_exceptions=False)
    line = next(t for t in result.stdout.splitlines() if t.startswith("Computed with:"))
    assert result.exit_code == 0 and line.startswith(
        f"Computed with: study one model ({path}) Llama 3.1 8B (models/llama-3.1-8b.yaml); "
        "axes hardware: H100-paper, A100-paper;"
    )
