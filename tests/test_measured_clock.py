"""Which clock prices a measured row (docs/model.md, "Which clock prices a measured row"): the
kernel clock where the row states an engine version the measured kernel tables time, on a
part they were measured on; the engine profile's terms everywhere else, and always in the fit
of those terms."""

import pytest
import yaml
from conftest import shipped_rows

from inference_econ.errors import SpecError
from inference_econ.measured import comparison
from inference_econ.measured import predicting as pr
from inference_econ.measured.fit_problem import ENGINE_TERMS
from inference_econ.measured.reading import load_measured
from inference_econ.model.assumptions import preset
from inference_econ.specs.engine import load_engine, profile_from_dict, profile_yaml
from inference_econ.specs.hardware import load_hardware

HEADER = (
    "source,model,precision,hardware,n_gpus,parallelism,batch_or_concurrency,input_len,"
    "output_len,metric,value,unit,notes,scenario"
)
#: Llama 3.1 8B in FP8 on one GPU, 8 clients of 500/100 tokens, under the engine named.
ROW = "lab,Llama-3.1-8B,FP8,{gpu},1,TP1,8,500,100,throughput_total,1000,tok/s,{engine},closed_loop"


@pytest.mark.parametrize(
    ("engine", "version", "gpu", "reads"),
    [
        ("trtllm", "1.2", "H200 SXM", True),
        ("trtllm", "1.0.0rc3", "H100 SXM", True),
        ("trtllm", "1.2.0rc6.post2", "GB200", True),
        ("trtllm", None, "H100 SXM", False),  # no version: the kernels are not known
        ("trtllm", "1.2", "B300", False),  # tables, but the engine clock erred less there
        ("trtllm", "1.2", "GB300", False),
        ("trtllm", "1.2", "H20", False),  # a part without tables
        ("trtllm-0", "0.17", "H100 SXM", False),  # the tables time 1.x kernels
        ("vllm", "0.12.0", "H100 SXM", False),  # another engine's kernels
        ("vllm", "1", "H100 SXM", False),  # "vLLM V1": the tables time TensorRT-LLM's
        ("sglang", "1.0", "H200 SXM", False),
    ],
)
def test_the_rows_the_kernel_tables_price(engine, version, gpu, reads):
    assert pr.reads_kernel_tables(load_engine(engine), version, load_hardware(gpu)) is reads


def test_a_row_on_the_kernel_clock_is_priced_as_the_kernel_clock_prices_it(tmp_path):
    """The default prices a row stating TensorRT-LLM 1.2 on an H100 exactly as the kernel
    clock forced on does, and differently from the profile's terms; the same row stating no
    version, or on a part without tables, exactly as the profile's terms do."""
    path = tmp_path / "rows.csv"
    lines = [
        ROW.format(gpu="H100 SXM", engine="TensorRT-LLM 1.2"),
        ROW.format(gpu="H100 SXM", engine="TensorRT-LLM"),
        ROW.format(gpu="B300", engine="TensorRT-LLM 1.2"),
    ]
    path.write_text(HEADER + "\n" + "\n".join(lines) + "\n")
    base = preset("achievable")
    auto = comparison.compare(str(path), base).table
    on = comparison.compare(str(path), base.replace(kernel_tables=True)).table
    off = comparison.compare(str(path), base.replace(kernel_tables=False)).table
    assert list(auto.status) == ["ok"] * 3
    assert auto.predicted[0] == on.predicted[0]
    assert abs(auto.predicted[0] / off.predicted[0] - 1.0) > 1e-3
    assert list(auto.predicted[1:]) == list(off.predicted[1:])
    assert "each operation priced from the measured kernel tables" in auto.engine[0]
    assert not any("kernel tables" in e for e in auto.engine[1:])
    assert not any("kernel tables" in e for e in on.engine)  # forced: every row, unlabelled


def test_a_derived_profile_is_priced_by_its_own_terms(tmp_path):
    """The tables time the base engine's kernels, not a profile derived from it: the profile
    ``calibrate`` writes, a what-if one, another engine's (vLLM's and SGLang's derive from
    TensorRT-LLM's) read no tables unless they say so."""
    prof = load_engine("trtllm")
    assert prof.kernel_table_versions == ">=1.0"
    text = profile_yaml(prof, "trtllm", ["fitted here"], {"layer_overhead_s": (2.5e-5, 1e-6)})
    fitted = profile_from_dict(yaml.safe_load(text), str(tmp_path / "fitted.yaml"))
    what_if = profile_from_dict({"derive_from": "trtllm", "gemm_efficiency_scale": 0.3})
    stated = profile_from_dict({"derive_from": "trtllm", "kernel_table_versions": ">=1.2"})
    h100 = load_hardware("H100 SXM")
    for p in (fitted, what_if, load_engine("vllm"), load_engine("sglang")):
        assert p.kernel_table_versions == ""
        assert not pr.reads_kernel_tables(p, "1.2", h100)
    assert pr.reads_kernel_tables(stated, "1.2", h100)
    assert not pr.reads_kernel_tables(stated, "1.1", h100)


def test_a_fit_prices_every_row_by_the_terms_it_fits(tmp_path):
    """A plan built for a fit of the profile's terms puts a row that reads the tables on
    the engine clock (the terms are what it times), its label saying nothing of the tables."""
    path = tmp_path / "rows.csv"
    path.write_text(HEADER + "\n" + ROW.format(gpu="H100 SXM", engine="TensorRT-LLM 1.2") + "\n")
    rows = load_measured(path)
    assert pr.row_engine(rows[0], preset("achievable")).kernel_tables
    plan = pr.build_plan(rows, "achievable", for_fit=True)
    assert not plan.engines[0].kernel_tables
    fitted = pr.row_engine(rows[0], ENGINE_TERMS)
    assert not fitted.kernel_tables and "kernel tables" not in fitted.label


def test_a_bad_version_range_of_the_tables_is_one_line():
    with pytest.raises(SpecError, match="x.yaml: field 'kernel_table_versions': cannot read"):
        profile_from_dict({"name": "x", "kernel_table_versions": "newest"}, "x.yaml")
    none = profile_from_dict({"name": "x", "kernel_table_versions": None})
    assert none.kernel_table_versions == ""
    with pytest.raises(SpecError, match="kernel_tables.*true, false or null, got 'auto'"):
        preset("achievable").replace(kernel_tables="auto")


def test_the_training_files_overview_rows_read_the_tables(training_rows):
    """TensorRT-LLM 1.0's performance overview rows state their version (on H100, H200,
    B200): all 56 read the tables; the file's MLPerf rows state none and read none."""
    base = preset("achievable")
    found = [pr.row_engine(r, base) for r in training_rows if r.kind == "end-to-end" and r.resolved]
    reading = [f for f in found if isinstance(f, pr.RowEngine) and f.kernel_tables]
    assert len(reading) == 56


def test_the_overviews_moe_results_resolve_and_read_the_tables():
    """All 86 MoE figures of TensorRT-LLM 1.2's performance overview (two files) name a model
    of the catalogue (gpt-oss-20b, Llama 4 Maverick and Qwen3-30B-A3B among them), state 1.2
    and run on parts with tables: every one is priced by the kernel clock."""
    rows = [
        r
        for name in ("trtllm_perf_overview_moe.csv", "trtllm_perf_overview_moe_rest.csv")
        for r in shipped_rows(name)
    ]
    assert len(rows) == 86 and all(r.resolved for r in rows)
    assert {"gpt-oss-20b", "Llama 4 Maverick", "Qwen3-30B-A3B"} <= {r.arch.name for r in rows}
    base = preset("achievable")
    assert all(pr.row_engine(r, base).kernel_tables for r in rows)


def test_compare_measured_takes_the_clock_of_every_row_as_asked(tmp_path):
    """--clock engine and --clock kernel price every row by that clock (the API's
    ``kernel_tables`` False and True), auto by the rule; an ideal preset has no clock to set:
    one line, exit 2."""
    import pandas as pd
    from click.testing import CliRunner

    from inference_econ.cli import main

    path = tmp_path / "rows.csv"
    lines = [
        ROW.format(gpu="H100 SXM", engine="TensorRT-LLM 1.2"),
        ROW.format(gpu="H100 SXM", engine="TensorRT-LLM"),
    ]
    path.write_text(HEADER + "\n" + "\n".join(lines) + "\n")
    base = preset("achievable")
    want = {
        "auto": comparison.compare(str(path), base).table.predicted,
        "kernel": comparison.compare(str(path), base.replace(kernel_tables=True)).table.predicted,
        "engine": comparison.compare(str(path), base.replace(kernel_tables=False)).table.predicted,
    }
    for clock, predicted in want.items():
        out = tmp_path / f"{clock}.csv"
        args = ["compare-measured", str(path), "--assumptions", "achievable", "--clock", clock]
        result = CliRunner().invoke(main, [*args, "-q", "-o", str(out)])
        assert result.exit_code == 0, result.output
        got = pd.read_csv(out, comment="#").predicted
        assert list(got) == pytest.approx(list(predicted), rel=1e-8), clock
    assert want["kernel"][1] != want["engine"][1] and want["auto"][1] == want["engine"][1]
    # the public function takes it too, and the output says the clock every row was priced by
    import inference_econ as ie

    forced = ie.compare_measured(str(path), assumptions=base, clock="kernel")
    assert list(forced.table.predicted) == list(want["kernel"])
    assert forced.assumptions.endswith("every row on the kernel clock")
    assert "clock" not in ie.compare_measured(str(path), assumptions="achievable").assumptions
    result = CliRunner().invoke(main, ["compare-measured", str(path), "--clock", "kernel"])
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1].startswith("error: --clock:")


def test_a_row_naming_a_source_branch_is_priced_as_no_version_and_says_the_branch(tmp_path):
    """NVIDIA's MLPerf v6.x systems name "TensorRT-LLM feat/1.2-mlpinf": a branch, not a
    release the profiles or the kernel tables place, so the row is priced as one stating no
    version (the engine clock, on a part with tables too) and its label names the branch
    instead of saying nothing was stated."""
    path = tmp_path / "rows.csv"
    lines = [
        ROW.format(gpu="B200", engine="TensorRT 10.14; TensorRT-LLM feat/1.2-mlpinf"),
        ROW.format(gpu="B200", engine="TensorRT-LLM"),
    ]
    path.write_text(HEADER + "\n" + "\n".join(lines) + "\n")
    rows = load_measured(str(path))
    assert [(r.engine_version, r.engine_branch) for r in rows] == [
        (None, "feat/1.2-mlpinf"),
        (None, None),
    ]
    table = comparison.compare(str(path), preset("achievable")).table
    assert table.predicted[0] == table.predicted[1]
    assert table.engine[0].startswith("trtllm (branch feat/1.2-mlpinf stated, no release version)")
    assert table.engine[1].startswith("trtllm (version not stated)")
