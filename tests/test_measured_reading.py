"""Reading real measured files: per-scenario layouts and caps, attention data
parallelism, derived rows, the "/GPU" unit rule, MLPerf dataset lengths and limits, metric
names, hardware strings, engines and their versions, disaggregated rows, and a file whose
unreadable rows never stop the others (docs/user-guide.md, "Measured results: the CSV format")."""

import dataclasses
import math
import re
from pathlib import Path

import numpy as np
import pytest

from inference_econ.errors import SpecError
from inference_econ.measured import comparison, engine_words, layouts, mlperf, predicting
from inference_econ.measured import metric_names as mn
from inference_econ.measured import semantics as sem
from inference_econ.measured.reading import SHARED, load_measured

DATA = Path(__file__).parent / "data"
V50 = DATA / "benchmarks_train_mlperf_v50.csv"  # MLPerf Inference v5.0, closed division
ROOT = Path(__file__).parent.parent


def v50_lines(*lines: int) -> list[str]:
    """Lines of the MLPerf v5.0 file (1: its header), as written."""
    import csv
    import io

    text = V50.read_text().splitlines(keepends=True)
    records = list(csv.reader(io.StringIO("".join(text))))
    out = []
    for n in lines:
        buf = io.StringIO()
        csv.writer(buf, lineterminator="").writerow(records[n - 1])
        out.append(buf.getvalue())
    return out


def edited(line: str, header: str | None = None, **cells) -> tuple[str, str]:
    """(line, header): a line of a file with that header (default: the v5.0 file's) with some
    cells replaced by column name; a new column is added to both."""
    import csv
    import io

    names = next(csv.reader(io.StringIO(header or v50_lines(1)[0])))
    record = next(csv.reader(io.StringIO(line)))
    for column, value in cells.items():
        if column not in names:
            names.append(column)
            record.append("")
        record[names.index(column)] = value
    buf = io.StringIO()
    csv.writer(buf, lineterminator="").writerow(record)
    return buf.getvalue(), ",".join(names)


def write(tmp_path, rows, header=None, name="m.csv"):
    header = header or v50_lines(1)[0]
    path = tmp_path / name
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


# v5.0 lines 20-24: H200-SXM x8 Llama 2 70B Offline, Server (+TTFT), Interactive (line 26)
OFFLINE, SERVER, SERVER_TTFT, INTERACTIVE = 20, 21, 22, 26


# --- per-scenario layouts and caps --------------------------------------------------------------


@pytest.mark.parametrize(
    "text, gpus, scenario, expected",
    [
        ("Off: TP2xPP2 x2; Server/Interactive: TP4 x2", 8, "offline", (2, 2, 2)),
        ("Off: TP2xPP2 x2; Server/Interactive: TP4 x2", 8, "server", (4, 1, 2)),
        ("Off: TP2xPP2 x2; Server/Interactive: TP4 x2", 8, "interactive", (4, 1, 2)),
        ("Server: TP4 x18; Off: TP2xPP2", 72, "server", (4, 1, 18)),
        ("Server: TP4 x18; Off: TP2xPP2", 72, "offline", (2, 2, 18)),
        ("TP2 x4 instances", 8, "offline", (2, 1, 4)),
        ("2x TP4", 8, "server", (4, 1, 2)),
        ("DP2 TP4", 8, "server", (4, 1, 2)),
        ("TP8", 16, "offline", (8, 1, 2)),
    ],
)
def test_a_layout_per_scenario_is_the_rows_own(text, gpus, scenario, expected):
    lay = layouts.row_layout(text, "", scenario, gpus, "f.csv, row 2")
    assert (lay.tensor, lay.pipeline, lay.replicas) == expected and lay.gpus == gpus


def test_layouts_for_other_scenarios_only_leave_the_row_unresolved(tmp_path):
    line, header = edited(v50_lines(INTERACTIVE)[0], parallelism="Server: TP4 x2; Off: TP2xPP2 x2")
    offline, _ = edited(v50_lines(OFFLINE)[0], parallelism="Server: TP4 x2; Off: TP2xPP2 x2")
    rows = load_measured(write(tmp_path, [line, offline], header))
    assert rows[0].status == (
        "unresolved: parallelism: 'Server: TP4 x2; Off: TP2xPP2 x2' names layouts for offline, "
        "server only, not for this interactive row (give the row's own layout "
        "(e.g. 'Server: TP4 x2; Offline: TP8'))"
    )
    assert rows[1].ok and rows[1].layout.label() == "2 x TP2 PP2"


@pytest.mark.parametrize(
    "text, scenario, concurrency, cap",
    [
        ("768 (Interactive)", "interactive", None, 768),
        ("768 (Interactive)", "offline", None, None),
        ("gpu_batch 512", "server", None, 512),
        ("max batch 896 (Off) / 1024 (Server) per instance", "offline", None, 896),
        ("max batch 896 (Off) / 1024 (Server) per instance", "server", None, 1024),
        ("max batch 896 (Off) / 1024 (Server) per instance", "interactive", None, None),
        ("Off: 2048; Server: 512; Interactive: 256", "interactive", None, 256),
        ("512", "server", None, 512),  # MLPerf has no client concurrency: an engine cap
        ("64", "closed_loop", 64, None),
    ],
)
def test_caps_per_scenario(text, scenario, concurrency, cap):
    assert sem.batch_of(text, scenario) == (concurrency, cap)


def test_a_cap_in_the_notes():
    assert sem.batch_of("n/a", "closed_loop", "vLLM 0.8.5 --max-num-seqs 256") == (None, 256)


@pytest.mark.parametrize(
    "text",
    [
        "TP8 attention-DP",
        "TP8 attn-DP",
        "TP8 DP-attention",
        "TP8 dp-attention",
        "TP8 DP8 attention",
        "--tp 8 --dp 8 --enable-dp-attention",
        "TP8 (EP8, DPA)",
        "DEP8",
    ],
)
def test_attention_data_parallelism_is_read(text):
    lay = layouts.layout_of(text, 8, "w")
    assert lay.attention_dp and lay.tensor == 8 and lay.replicas == 1
    assert lay.attention_ranks == 8  # every GPU attends alone


@pytest.mark.parametrize(
    "text, ranks",
    [
        ("TP8 DP2 attn-DP", 2),  # SGLang --tp 8 --dp 2 --enable-dp-attention: attention TP4
        ("TP8 (EP8, DP4 attn-DP)", 4),
        ("--tp 8 --dp 2 --enable-dp-attention", 2),
        ("TP8 (EP8, attn-DP)", 8),
        ("TP8 EP8", 1),
        # vLLM's data-parallel ranks of attention TP4, their experts over all eight GPUs
        ("--tensor-parallel-size 4 --data-parallel-size 2 --enable-expert-parallel", 2),
        ("DEP8", 8),
    ],
)
def test_attention_over_part_of_the_tensor_group_keeps_its_ranks(text, ranks):
    """A DP degree written with attention data parallelism is the attention's ranks: "TP8 DP2
    attn-DP" attends on two ranks of TP4, not on eight of TP1, and its label reads back as
    itself."""
    lay = layouts.layout_of(text, 8, "w")
    assert (lay.tensor, lay.attention_ranks) == (8, ranks)
    assert layouts.layout_of(lay.label(), 8, "w") == lay
    with pytest.raises(SpecError, match=r"into 3 data-parallel ranks.*TP8 DP2 attn-DP"):
        layouts.layout_of("TP8 DP3 attn-DP", 8, "row 2")


def test_a_count_of_copies_after_attention_dp_is_not_its_degree():
    """ "attn-DP 2 instances" is two instances attending on every GPU, not attention on two
    ranks; a degree written with it is its ranks ("attention-DP 8", "attn-DP2")."""
    for text in ("TP8 attn-DP 2 instances", "attn-DP 2x TP8", "TP8 EP8 attention-DP 2 copies"):
        lay = layouts.layout_of(text, 16, "w")
        assert (lay.tensor, lay.attention_ranks, lay.replicas) == (8, 8, 2), text
    assert layouts.layout_of("TP8 attention-DP 8", 8, "w").attention_ranks == 8
    assert layouts.layout_of("TP8 attn-DP2", 8, "w").attention_ranks == 2
    for bad in (0, -2, True, 2.0, 3):
        with pytest.raises(ValueError, match="not a whole divisor of TP8"):
            layouts.Layout(8, attention_ranks=bad)
        with pytest.raises(ValueError, match="not a whole divisor of TP8"):
            predicting.Candidate(8, 1, 1, bad, False)


def test_a_layout_naming_one_degree_twice_is_refused():
    """ "TP8 TP4" had read as TP4 twice over; the same degree said twice is one layout."""
    with pytest.raises(SpecError, match=r"names two TP degrees \(8 and 4\)"):
        layouts.layout_of("TP8 TP4", 8, "row 2")
    with pytest.raises(SpecError, match="two EP degrees"):
        layouts.layout_of("DEP8 EP4", 8, "row 2")
    assert layouts.layout_of("TP8 (EP8) --tp 8", 8, "w") == layouts.Layout(8, 1, 8)
    with pytest.raises(SpecError, match="names two DP degrees"):
        layouts.layout_of("DEP8 DP2", 8, "row 2")  # DEP8's attention is data-parallel over 8
    # launch flags in a row's notes: the message names the notes and what to write instead
    with pytest.raises(SpecError, match=r"field 'notes'.*two DP degrees.*parallelism field"):
        layouts.row_layout(
            "", "--tp 8 --dp 2 --enable-dp-attention (tried --dp 4 too)", None, 8, "w"
        )


def test_data_parallel_replicas_are_not_attention_dp():
    lay = layouts.layout_of("DP2 TP4", 8, "w")
    assert not lay.attention_dp and lay.replicas == 2
    vllm = layouts.layout_of(
        "--tensor-parallel-size 4 --data-parallel-size 2 --enable-expert-parallel", 8, "w"
    )
    assert vllm.attention_dp and vllm.expert == 8 and vllm.gpus == 8


# --- one unreadable row never stops the file ------------------------------------------------


@pytest.mark.filterwarnings("error::RuntimeWarning")  # 1e308 GPUs overflowed numpy's products
def test_a_file_with_unreadable_rows_predicts_every_other_row(tmp_path, small_runs):
    # the Server rows in runs of 300 requests: the clean file's and the mixed file's alike
    good = v50_lines(OFFLINE, SERVER, SERVER_TTFT, INTERACTIVE)
    header = v50_lines(1)[0] + ",engine"
    good = [g + "," for g in good]
    bad = {
        "unresolved: n_gpus: is 0 in GPUs (expected a whole number >= 1 and <= 1048576)": dict(
            n_gpus="0"
        ),
        "unresolved: value: is 0": dict(value="0"),
        "unresolved: parallelism: 'TP3' uses 3 GPUs but the row has 8": dict(parallelism="TP3"),
        "unresolved: parallelism: PP0 in 'TP2PP0' (degrees are >= 1)": dict(parallelism="TP2PP0"),
        "unresolved: parallelism: 'TP?' names a degree without its number": dict(parallelism="TP?"),
        "unresolved: batch_or_concurrency: is -4": dict(batch_or_concurrency="-4"),
        "unresolved: hardware: is 0 in GPUs": dict(hardware="0xH100", n_gpus="n/a"),
        "unresolved: lengths '1e400' / '294.45' are not finite": dict(input_len="1e400"),
        "unresolved: engine: no engine profile named 'nope'": dict(engine="nope"),
        # typos beyond any real count: were an overflowing product ('infeasible: no layout')
        # and a KV cache of 1e308 tokens ('infeasible: ... no room for the KV cache')
        "unresolved: n_gpus: is 1e+308 in GPUs (expected a whole number >= 1 and <= 1048576)": (
            dict(n_gpus="1e308")
        ),
        "unresolved: lengths '1e308' / '294.45': more than 1e+12 tokens": dict(input_len="1e308"),
        "unresolved: lengths '222' / '2e12': more than 1e+12 tokens": dict(
            input_len="222", output_len="2e12"
        ),
    }
    unreadable = [edited(good[0], header, **cells)[0] for cells in bad.values()]
    mixed_rows = [
        *unreadable[:4],
        *(x for pair in zip(good, unreadable[4:]) for x in pair),
        *unreadable[8:],
    ]
    clean = comparison.compare(write(tmp_path, good, header, "clean.csv"), "achievable").table
    table = comparison.compare(write(tmp_path, mixed_rows, header, "mixed.csv"), "achievable").table
    is_good = table.row.isin([mixed_rows.index(g) + 2 for g in good])
    reasons = table.status[~is_good].tolist()
    assert [s[: len(r)] for s, r in zip(reasons, bad)] == list(bad)
    kept = table[is_good].reset_index(drop=True)
    assert np.isfinite(kept.predicted).sum() == np.isfinite(clean.predicted).sum() >= 3
    assert np.allclose(kept.predicted, clean.predicted, equal_nan=True)
    assert (kept.status == clean.status).all()


def test_a_row_with_more_cells_than_the_header_is_that_rows_reason(tmp_path, small_runs):
    """A ragged row (an unquoted comma) was the file's end (pandas: "Expected 6 fields in line
    3, saw 8", exit 2), and as the FIRST row pandas silently took its first cell as an index
    and shifted every column: now it is that row's reason, and the others are predicted (the
    Server row in runs of 300 requests: the clean file's and the mixed file's alike)."""
    path = tmp_path / "ragged.csv"
    path.write_text("model,hardware,n_gpus,metric,value,unit\nx,y,1,2,3,4,5,6\na,b,1,m,2,u\n")
    first, second = load_measured(path)
    assert (first.row, first.status) == (
        2,
        "unresolved: has 8 cells for the header's 6 columns (quote cells that hold commas)",
    )
    assert first.model_text == "x" and second.model_text == "a"  # no column shifted
    assert second.status.startswith("unresolved: ") and "cells" not in second.status
    path.write_text("model,hardware,n_gpus,metric,value,unit\nx,y,1,2,3,4,5,6\na,b,1,m,2,u,7\n")
    with pytest.raises(SpecError, match="line 2: has 8 cells.*none of its 2 rows can be read"):
        load_measured(path)  # no row can be read: one error (exit 2), not a table of reasons
    good = v50_lines(OFFLINE, SERVER)
    clean = comparison.compare(write(tmp_path, good, name="clean.csv"), "achievable").table
    ragged = good[0] + ',"an unquoted, comma"'  # one cell more than the header
    mixed = [ragged, good[0], ragged + ",x", good[1]]
    table = comparison.compare(write(tmp_path, mixed, name="mixed.csv"), "achievable").table
    assert table.row.tolist() == [2, 3, 4, 5]
    header_cells = len(v50_lines(1)[0].split(","))
    assert table.status.tolist()[0::2] == [
        f"unresolved: has {header_cells + n} cells for the header's {header_cells} columns "
        "(quote cells that hold commas)"
        for n in (1, 2)
    ]
    kept = table.iloc[[1, 3]].reset_index(drop=True)
    assert (kept.status == clean.status).all() and (clean.status == "ok").all()
    assert np.allclose(kept.predicted, clean.predicted) and np.isfinite(kept.predicted).all()


# --- derived rows, the /GPU rule, per node ---------------------------------------------------


def per_gpu_line() -> str:
    """The per-GPU throughput derived from the v5.0 Server row (a derived row's line)."""
    return edited(
        v50_lines(SERVER)[0],
        metric="throughput_per_gpu",
        unit="output tok/s/GPU",
        value="4129.65",
        notes="derived = total/n_gpus",
        parallelism="n/a",
    )[0]


def test_derived_rows_take_their_parents_engine_layout_and_limits(tmp_path):
    parent, header = edited(
        v50_lines(SERVER)[0], parallelism="TP2 x4", batch_or_concurrency="gpu_batch 512"
    )
    derived = per_gpu_line()
    named = edited(
        v50_lines(SERVER)[0],
        metric="per_user_decode_speed",
        unit="tok/s/user",
        value="5.42",
        notes="derived from row 2: 1000/mean_TPOT",
        parallelism="n/a",
    )[0]
    rows = load_measured(write(tmp_path, [parent, derived, named], header))
    p, d, n = rows
    assert p.engine == "trtllm" and p.limits == (2.0, 0.2) and p.batch_cap == 512
    for row in (d, n):
        assert row.status.startswith("derived:") and row.parent == 2
        assert (row.engine, row.layout, row.limits, row.batch_cap, row.scenario) == (
            p.engine,
            p.layout,
            p.limits,
            p.batch_cap,
            p.scenario,
        )
    assert d.per == "gpu" and d.per_count == 8


def test_a_repeated_derived_row_shares_its_reading_and_names_its_own_parent(tmp_path):
    """A log repeating a run and its derived row reads the derived row once (a 100,000-row
    log's derived rows had been read one by one), each copy naming its own parent's line."""
    parent, header = edited(v50_lines(SERVER)[0], parallelism="TP2 x4")
    derived = per_gpu_line()
    rows = load_measured(write(tmp_path, [parent, derived, parent, derived], header))
    first, second = rows[1], rows[3]
    assert (first.parent, second.parent) == (2, 4) and (first.row, second.row) == (3, 5)
    assert first.__dict__[SHARED] is second.__dict__[SHARED]
    assert first.layout == second.layout == rows[0].layout and first.layout.tensor == 2


def test_derived_rows_of_the_training_file_find_their_parents():
    rows = {r.row: r for r in load_measured(DATA / "mlperf_v4.1_server.csv")}
    derived = [r for r in rows.values() if r.status.startswith("derived")]
    assert len(derived) == 153 and all(r.parent for r in derived)
    speed = next(r for r in derived if r.metric.quantity == "user_speed")
    assert rows[speed.parent].metric_text == "mean_TPOT"  # "derived = 1000/mean_TPOT"


def test_a_per_gpu_unit_divides_the_prediction(tmp_path):
    """The user guide's "/GPU" rule: a total throughput metric in "output tok/s/GPU" is per
    GPU (a probe row came out 8x high before it was read)."""
    total = v50_lines(OFFLINE)[0]
    per_unit = edited(total, unit="output tok/s/GPU", value="4350.89")[0]
    per_name = edited(total, metric="output_throughput_per_gpu", unit="tok/s", value="4350.89")[0]
    clash = edited(total, metric="throughput_per_gpu", unit="output tok/s (system)")[0]
    table = comparison.compare(write(tmp_path, [total, per_unit, per_name, clash]), "paper").table
    assert table.predicted[1] == pytest.approx(table.predicted[0] / 8, rel=1e-12)
    assert table.predicted[2] == pytest.approx(table.predicted[0] / 8, rel=1e-12)
    assert table.status[3].startswith("unresolved: unit: 'output tok/s (system)' says per system")


def test_a_rate_in_a_unit_that_counts_nothing_and_a_count_in_words_are_refused(tmp_path):
    """A throughput in 'furlongs' had been compared as tokens/s (a silently wrong error); a
    GPU count in words had been called "not stated". Each row is refused with its reason,
    while a unit that names a rate or what it counts ("TPS", "output tok/s per GPU") or none
    at all (the metric's name says) still reads."""
    total = v50_lines(OFFLINE)[0]
    rows = [
        edited(total, unit="furlongs")[0],
        edited(total, unit="TPS")[0],
        edited(total, n_gpus="eight")[0],
        total,
        edited(total, unit="")[0],
        edited(total, unit="k tok/s")[0],
    ]
    status = [r.status for r in load_measured(write(tmp_path, rows))]
    assert "is not per second or has a prefix (k, M), which is not scaled" in status[5]
    assert status[0] == (
        "unresolved: unit 'furlongs' of 'throughput_total' names no tokens, requests or other "
        "count and no rate (give one such as tok/s, output tok/s per GPU or req/s)"
    ), status[0]
    assert status[1] == status[3] == status[4] == "ok", status
    assert status[2].startswith("unresolved: n_gpus 'eight' is not a number: give --gpus N")
    # a row of no dataset that states no lengths says which columns to fill in
    header = "model,hardware,n_gpus,metric,value,unit,precision"
    bare = tmp_path / "bare.csv"
    bare.write_text(f"{header}\nLlama 3.1 8B,H200,1,throughput,5000,tok/s,FP8\n")
    assert load_measured(bare)[0].status == (
        "unresolved: input_len and output_len are not given: give the tokens of a prompt and "
        "of an output"
    )


def test_per_node_input_throughput_is_read(tmp_path):
    line, header = edited(
        v50_lines(OFFLINE)[0],
        hardware="8xH200",
        n_gpus="16",
        metric="prefill_input_throughput_per_node",
        unit="input tok/s per node",
        notes="TensorRT-LLM, prompts only",
        scenario="prefill",
    )
    row = load_measured(write(tmp_path, [line], header))[0]
    assert row.metric.quantity == "input_throughput" and row.scenario == "prefill"
    assert (row.per, row.per_count) == ("node", 2)


# --- MLPerf datasets and limits ----------------------------------------------------------


def test_every_dataset_figure_has_a_source_comment():
    number = re.compile(r"^\s*[\w]+:\s*(?:[-+0-9.eE]+|null|\{.*\})\s*(#.*)?$")
    path = ROOT / "datasets" / "mlperf.yaml"
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if number.match(line):
            assert "#" in line, f"mlperf.yaml:{i} has a figure without a comment: {line.strip()}"


def test_dataset_contexts_agree_with_their_moments():
    """E[n_in^2] / (2 E[n_in]) is (mean^2 + sd^2) / (2 mean): the YAML's prefill contexts,
    computed from per-sample counts, must match its means and standard deviations."""
    for b in mlperf.benchmarks().values():
        if b.prefill_context is not None:
            expected = (b.input_mean**2 + b.input_sd**2) / (2 * b.input_mean)
            assert b.prefill_context == pytest.approx(expected, abs=0.01), b.name


@pytest.mark.parametrize(
    "model, input_text, output_text, expected",
    [
        ("Llama 2 70B", "OpenOrca 24576 samples", "n/a", (222.33, 294.45, 437.98, 177.31)),
        ("Mixtral 8x7B", "OpenOrca+GSM8K+MBXP", "", (427.39, 144.84, 554.88, 340.03)),
        ("Llama 3.1 405B", "n/a", "n/a", (9428.64, 684.68, 9585.12, 5591.44)),
        ("DeepSeek-R1", "", "", (803.79, 3886.23, 5624.07, 504.25)),
        ("Llama 3.1 8B", "CNN-DailyMail", "100", (870.73, 100.0, 920.73, 541.57)),
        ("gpt-oss-120b", "1000", "n/a", (1000.0, 1278.2, 1639.1, 500.0)),
        # the published mean 5011 and the sd of the log-normal through it and the median 4593:
        # decode 5011 + 1278.2/2; prefill (5011^2 + 2186^2) / (2 x 5011)
        ("gpt-oss-120b", "n/a", "n/a", (5011.0, 1278.2, 5650.1, 2982.31)),
    ],
)
def test_mlperf_dataset_lengths(model, input_text, output_text, expected):
    bench = mlperf.benchmark_of(model, "MLPerf Inference v5.1")
    got = mlperf.lengths_of(input_text, output_text, bench)
    assert (got.input_mean, got.output_mean, got.decode_context, got.prefill_context) == (
        pytest.approx(expected, abs=0.01)
    )


def test_gpt_oss_input_sd_reproduces_the_published_quartiles():
    """The gpt-oss-120b performance set publishes its input lengths' mean (5011), median (4593)
    and quartiles (3492, 6046) as a figure, not per-sample counts: the YAML's sd is the
    log-normal's through the mean and median, whose quartiles must land within 1 % of the
    published ones."""
    b = mlperf.benchmarks()["gpt-oss-120b"]
    sigma = math.sqrt(math.log1p((b.input_sd / b.input_mean) ** 2))
    median = b.input_mean * math.exp(-(sigma**2) / 2)
    assert median == pytest.approx(4593, rel=0.002)
    z = 0.6745  # the standard normal's upper quartile
    assert median * math.exp(-z * sigma) == pytest.approx(3492, rel=0.01)
    assert median * math.exp(z * sigma) == pytest.approx(6046, rel=0.01)


def test_unpublished_dataset_figures_leave_the_row_unresolved():
    bench = mlperf.benchmark_of("Llama 3.1 8B", "mlcommons/inference_results_v5.1")
    assert mlperf.lengths_of("n/a", "n/a", bench) == (
        "the output mean of the MLPerf llama3.1-8b dataset is not published "
        "(at most 128 new tokens): give output_len"
    )
    assert mlperf.benchmark_of("Llama 3.1 8B", "a vendor blog") is None


def test_limits_come_from_the_notes_else_the_benchmark():
    b405 = mlperf.benchmark_of("Llama 3.1 405B", "MLPerf")
    assert mlperf.limits_of("", "server", b405) == (6.0, 0.175)
    assert mlperf.limits_of("", "interactive", b405) == (4.5, 0.08)
    assert mlperf.limits_of("p99 TTFT<=2000ms, p99 TPOT<=200ms", "server", b405) == (2.0, 0.2)
    assert mlperf.limits_of("", "server", None) is None


# --- metric names, hardware, engines ------------------------------------------------------


@pytest.mark.parametrize(
    "name, quantity, per",
    [
        ("output_throughput_per_gpu", "throughput", "gpu"),
        ("interactivity", "user_speed", None),
        ("per_user_output_speed", "user_speed", None),
        ("output_speed_median", "user_speed", None),
        ("prefill_input_throughput_per_gpu", "input_throughput", "gpu"),
        ("input_throughput_per_node", "input_throughput", "node"),
        ("Output token throughput (tok/s)", "throughput", None),
        ("Total Token throughput (tok/s)", "total_throughput", None),
        ("p99_TTFT", "ttft_p99", None),
        ("median_TTFT", "ttft_median", None),
        ("Median TPOT (ms)", "tpot", None),
        ("ITL_mean", "itl", None),
        ("throughput_per_gpu", "throughput", "gpu"),
    ],
)
def test_metric_names(name, quantity, per):
    assert mn.metric_of(name) == mn.Metric(quantity, per)


def test_hardware_strings(tmp_path):
    base = v50_lines(OFFLINE)[0]
    lines = [
        edited(base, hardware="Virtualized NVIDIA H200-SXM-141GB")[0],
        edited(base, hardware="NVIDIA H200-SXM-141GB (x8)", n_gpus="n/a")[0],
        edited(base, hardware="8xH200", n_gpus="n/a")[0],
        edited(base, hardware="8xH100 + 8xH200", n_gpus="16")[0],
        edited(base, hardware="NVIDIA H200-SXM-141GB, 2x Xeon Platinum 8480")[0],
    ]
    rows = load_measured(write(tmp_path, lines))
    for row in (rows[0], rows[1], rows[2], rows[4]):
        assert row.ok and row.gpu.name == "H200-SXM" and row.gpus == 8
    assert rows[3].status == (
        "unresolved: heterogeneous: hardware '8xH100 + 8xH200' mixes H100-SXM and H200-SXM"
    )


@pytest.mark.parametrize(
    "notes, hardware, engine, expected",
    [
        ("vLLM 0.6.x", "H100 SXM", "", ("vllm", "0.6", "cuda")),
        ("TensorRT-LLM 0.17", "NVIDIA H200-SXM-141GB", "", ("trtllm", "0.17", "cuda")),
        ("TRT-LLM 1.0", "B200", "", ("trtllm", "1.0", "cuda")),
        ("SGLang 0.4.6", "MI300X", "", ("sglang", "0.4.6", "rocm")),
        ("vLLM 0.9.1 on ROCm 6.4", "MI325X", "", ("vllm", "0.9.1", "rocm")),
        ("'vLLM 0.0.0.dev1+mlperf50'", "8xMI325X_2xEPYC_9575F", "", ("vllm", None, "rocm")),
        ("TensorRT 10.8, CUDA 12.8", "H200", "", ("trtllm", None, "cuda")),
        ("", "H100 SXM", "vllm@0.10", ("vllm", "0.10", "cuda")),
        ("TGI 2.0", "H100 SXM", "", (None, None, "cuda")),
    ],
)
def test_engine_version_and_platform(notes, hardware, engine, expected):
    from inference_econ.measured.resolving import hardware_of

    gpu = hardware_of(hardware)[0]
    row = {"notes": notes, "hardware": hardware, "engine": engine}
    got = engine_words.engine_of(row, notes, gpu.description)
    assert (got.name, got.version, got.platform) == expected


# --- disaggregated rows ------------------------------------------------------------------


def test_disaggregated_rows_say_which_gpus_decode(tmp_path):
    base, header = edited(v50_lines(OFFLINE)[0], disaggregated="true", decode_gpus="", n_gpus="24")
    split = edited(base, header, parallelism="prefill: TP8 x1; decode: TP8 x2")[0]
    per_decode = edited(
        base, header, n_gpus="16", unit="output tok/s per decode GPU", parallelism="TP8"
    )[0]
    column = edited(base, header, decode_gpus="16")[0]
    rows = load_measured(write(tmp_path, [split, per_decode, base, column], header))
    assert rows[0].ok and rows[0].decode_gpus == 16 and rows[0].layout.label() == "2 x TP8"
    assert rows[1].ok and (rows[1].decode_gpus, rows[1].per, rows[1].per_count) == (
        16,
        "decode_gpu",
        16,
    )
    assert rows[2].status.startswith("unresolved: a disaggregated row must say which GPUs decode")
    assert rows[3].ok and rows[3].decode_gpus == 16 and rows[3].serving_gpus == 16


def test_a_disaggregated_part_without_degrees_leaves_its_row_unresolved(tmp_path):
    """'prefill: TPx x1' states no degrees: that row is unresolved, naming the part and the
    fix (before, a traceback stopped the whole file), and the file's other rows are read."""
    base, header = edited(v50_lines(OFFLINE)[0], n_gpus="24")
    bad = edited(base, header, parallelism="prefill: TPx x1; decode: TP8 x2")[0]
    good = edited(base, header, parallelism="prefill: TP8 x1; decode: TP8 x2")[0]
    rows = load_measured(write(tmp_path, [bad, good], header))
    assert rows[0].status.startswith("unresolved: parallelism: 'TPx x1': the prefill part")
    assert "give each part's degrees and replicas" in rows[0].status
    assert rows[1].ok and rows[1].decode_gpus == 16 and rows[1].prefill_layout.label() == "TP8"


def test_a_row_of_an_unstated_layout_text_is_refused_in_semantics():
    with pytest.raises(SpecError, match="context or sequence parallelism"):
        layouts.layout_of("CP2 TP4", 8, "w")


def test_disaggregated_workers_described_in_the_notes():
    """The held-out MLPerf file's wording: "2 prefill worker(s) of 4 GPUs each (tp 4, ...);
    4 decode worker(s) of 16 GPUs each (tp 16, ep 16, attention data parallel, ...)"."""
    notes = (
        "disaggregated serving (NVIDIA Dynamo): 2 prefill worker(s) of 4 GPUs each (tp 4, ep 4, "
        "attention data parallel, max_batch_size 128; a.yml); 4 decode worker(s) of 16 GPUs each "
        "(tp 16, ep 16, attention data parallel, max_batch_size 64; b.yml); multi-node: 18 nodes "
        "x 4 accelerators per node"
    )
    flag, decode, text = layouts.disaggregation_of({}, notes, "tok/s", 72, "w", "interactive")
    assert (flag, decode) == (True, 64)
    lay = layouts.layout_of(text, decode, "w")
    assert (lay.tensor, lay.expert, lay.attention_dp, lay.replicas) == (16, 16, True, 4)
    assert sem.batch_of("", "interactive", text) == (None, 64)


def test_disaggregated_is_read_for_the_scenario_it_names():
    notes = "colocated Offline/Server, while disaggregated Interactive used a KV transceiver"
    assert not layouts.disaggregation_of({}, notes, "tok/s", 72, "w", "offline")[0]
    assert layouts.disaggregation_of({}, notes, "tok/s", 72, "w", "interactive")[0]


def test_notes_state_a_layout_only_by_label_or_launch_flags():
    assert layouts.notes_layout("multi-node: 18 nodes x 4 accelerators per node; tp 4") == ""
    assert (
        layouts.notes_layout("vLLM 0.9 --tp 8 --enable-dp-attention")
        == "--tp 8 --enable-dp-attention"
    )
    assert layouts.notes_layout("layout: TP4 x2; vLLM") == "TP4 x2"


# --- dataset maxima: lengths truncated at the longest sample ------------------------------------


def test_405b_prompts_truncated_at_the_longest_sample_reproduce_its_99th_percentile():
    """The Llama 3.1 405B dataset's prompts ([dash] per-sample counts: mean 9428.64, sd 4066.94,
    p99 18955, max 19988 tokens). The log-normal of that mean and sd, unbounded, puts its 99th
    percentile at 22,633 tokens, past the longest prompt; truncated at 19,988 with its mean
    kept (``truncated_mu``), at 18,885: within 0.4 % of the dataset's.

    By hand: sigma = sqrt(ln(1 + (4066.94/9428.64)^2)) = sqrt(ln 1.186058) = 0.413075;
    unbounded mu = ln 9428.64 - sigma^2/2 = 9.066192, p99 = exp(mu + 2.32635 sigma) = 22,633."""
    from scipy.special import ndtr, ndtri

    from inference_econ.load.lengths import Lengths, truncated_mu

    b = mlperf.benchmarks()["llama3.1-405b"]
    assert (b.input_max, b.output_max) == (19988.0, 1830.0)
    sigma = math.sqrt(math.log1p((b.input_sd / b.input_mean) ** 2))
    assert sigma == pytest.approx(0.413075, abs=1e-6)
    plain = math.log(b.input_mean) - sigma**2 / 2
    assert plain == pytest.approx(9.066192, abs=1e-6)
    assert math.exp(plain + 2.32635 * sigma) == pytest.approx(22633, rel=1e-4)
    mu = truncated_mu(b.input_mean, sigma, b.input_max)
    below = ndtr((math.log(b.input_max) - mu) / sigma)
    p99 = math.exp(mu + sigma * ndtri(0.99 * below))
    assert p99 == pytest.approx(18955, rel=0.005)
    # the truncated mean, integrated numerically, is the published mean
    from scipy.integrate import quad

    def pdf(x: float) -> float:
        return math.exp(-((math.log(x) - mu) ** 2) / (2 * sigma**2)) / (
            x * sigma * math.sqrt(2 * math.pi)
        )

    mass = quad(pdf, 0, b.input_max, limit=200)[0]
    assert quad(lambda x: x * pdf(x), 0, b.input_max, limit=200)[0] / mass == pytest.approx(
        b.input_mean, rel=1e-6
    )
    draws = Lengths("lognormal", b.input_mean, b.input_max, sigma).draw(
        np.random.default_rng(0), 100_000
    )
    assert draws.max() <= 19988 and draws.mean() == pytest.approx(b.input_mean, rel=0.005)
    assert np.percentile(draws, 99) == pytest.approx(18955, rel=0.01)


def test_a_rows_mlperf_lengths_carry_the_datasets_maxima_into_the_replayed_run():
    b405 = mlperf.benchmark_of("Llama 3.1 405B", "MLPerf")
    for cells in (("n/a", "n/a"), ("9428.64 mean (sd 4066.94)", "655.7 mean (sd 260.8)")):
        got = mlperf.lengths_of(*cells, b405)
        assert (got.input_max, got.output_max) == (19988.0, 1830.0)
    # a stated mean above the dataset's longest sample is not that dataset's: no bound
    got = mlperf.lengths_of("30000 mean (sd 100)", "n/a", b405)
    assert (got.input_max, got.output_max) == (math.inf, 1830.0)
    assert mlperf.lengths_of("2000", "500", None).input_max == math.inf
    # the replayed traffic is drawn under the bound
    from inference_econ.measured import replay as rp

    case = rp.LoadCase(
        None, 8, 1, 1, 1, None, (9428.64, 4066.94), (684.68, 260.78), "offline",
        maxima=(19988.0, 1830.0),
    )  # fmt: skip

    class Model:  # traffic_of reads only the model's context window
        max_context_tokens = 131072

    class Setting:
        model = Model()

    s = rp.traffic_of(dataclasses.replace(case, setting=Setting()), 4000).stream()
    assert s.prompt_tokens.max() <= 19988 and s.output_tokens.max() <= 1830


@pytest.mark.parametrize(
    "line, problem",
    [
        ("    input_max_tokens: 100", "the longest input (100 tokens) is below the mean (222.33"),
        ("    input_max_tokens: -5", "input_max_tokens"),
        ("    input_max_tokens: lots", "input_max_tokens"),
    ],
)
def test_a_bad_dataset_maximum_is_one_line_naming_file_and_field(
    tmp_path, monkeypatch, line, problem
):
    """A maximum below its mean, negative or not a number: one line naming the file, the field
    and the fix; the rows that need the dataset are unresolved with it, as for its other
    figures."""
    text = (ROOT / "datasets" / "mlperf.yaml").read_text()
    text = re.sub(r"^    input_max_tokens: 1021 .*$", line, text, count=1, flags=re.MULTILINE)
    (tmp_path / "datasets").mkdir()
    (tmp_path / "datasets" / "mlperf.yaml").write_text(text)
    monkeypatch.setenv("INFERENCE_ECON_PATH", str(tmp_path))
    mlperf.benchmarks.cache_clear()
    try:
        with pytest.raises(SpecError) as info:
            mlperf.benchmarks()
        message = str(info.value)
        assert "mlperf.yaml" in message and "benchmarks.llama2-70b.input_max_tokens" in message
        assert problem in message and "\n" not in message
        from click.testing import CliRunner

        from inference_econ.cli import main

        path = tmp_path / "one.csv"
        path.write_text("\n".join(v50_lines(1, 2)) + "\n")
        # as every dataset figure: the rows of the file say why they cannot be predicted, and
        # a file none of whose rows could be read exits 2
        result = CliRunner().invoke(main, ["compare-measured", str(path), "--format", "csv"])
        assert result.exit_code == 2 and "Traceback" not in result.output
        assert "unresolved: benchmarks.llama2-70b.input_max_tokens" in result.output
        assert "no row could be read" in result.stderr.strip().splitlines()[-1]
    finally:
        monkeypatch.delenv("INFERENCE_ECON_PATH")
        mlperf.benchmarks.cache_clear()


def test_a_row_in_the_checkpoints_own_element_width_keeps_its_format(tmp_path):
    """gpt-oss-120b ships MXFP4 experts (4.25 bits with their scales): a row that says "FP4"
    runs that checkpoint, not NVFP4's 4.5, and so does a bare "FP8" (its only release); a
    Llama row in FP4 is NVFP4 (4 bits + scales) and a gpt-oss row whose cell states FP8
    weights of its own is FP8."""
    base = v50_lines(OFFLINE)[0]
    lines = [
        edited(base, model="gpt-oss-120b", precision="FP4")[0],
        edited(base, model="gpt-oss-120b", precision="FP8 (self-quantized weights)")[0],
        edited(base, precision="FP4")[0],
        edited(base, model="gpt-oss-120b", precision="FP8")[0],
    ]
    rows = load_measured(write(tmp_path, lines))
    # on this Hopper system the MX checkpoint keeps its BF16 KV cache (machine.mx_kv_cache_bits)
    assert [r.bits for r in rows] == [(4.25, 16, 16), (8, 16, 8), (4, 16, 8), (4.25, 16, 16)]


@pytest.mark.parametrize(
    "text, notes, scenario, budget",
    [
        (
            "max batch 256, max_num_tokens 2048 (per engine instance; closed/x/Server/y.py)",
            "",
            "server",
            2048,
        ),
        ("max batch 600, max_num_batched_tokens 40960 (per engine instance)", "", "offline", 40960),
        ("Off: max_num_tokens 1536; Server: max_num_tokens 2048", "", "offline", 1536),
        ("Off: max_num_tokens 1536; Server: max_num_tokens 2048", "", "server", 2048),
        ("Off: max_num_tokens 1536; Server: max_num_tokens 2048", "", "interactive", None),
        ("n/a", "vLLM 0.10 --max-num-batched-tokens 8192", "closed_loop", 8192),
        ("token budget 4,096", "", "server", 4096),
        ("max batch 512", "", "server", None),  # a batch cap is not a token budget
        (None, "", "server", None),
    ],
)
def test_token_budgets_per_scenario(text, notes, scenario, budget):
    assert sem.budget_of(text, scenario, notes) == budget


def test_two_budgets_for_one_scenario_are_refused_not_the_first_taken():
    """A label claims its text up to the next ";": the Server items after the first leak into
    every scenario's part, and the Offline part then states two budgets."""
    cell = "Server: max batch 512; max_num_tokens 2560; Offline: max batch 512; max_num_tokens 1536"
    with pytest.raises(SpecError, match=r"states 2 token budgets for the offline scenario"):
        sem.budget_of(cell, "offline", "", "f.csv:2")
    labelled = (
        "Server: max batch 512, max_num_tokens 2560; Offline: max batch 256, max_num_tokens 1536"
    )
    assert [sem.budget_of(labelled, sc) for sc in ("server", "offline")] == [2560, 1536]
    assert [sem.batch_of(labelled, sc)[1] for sc in ("server", "offline")] == [512, 256]
    assert sem.number("1,4,16,64") is None and sem.number("12,000") == 12000
    assert sem.lead_number("1,4,16,64; max_num_tokens 2048") is None  # a sweep, not a number
    assert sem.lead_number("64; kvcache_free_gpu_mem_frac 0.95") == 64


def test_disaggregated_decode_workers_state_their_own_budget(tmp_path):
    """The decode workers' budget and KV share come first where the notes give each pool its
    own; the prefill workers' do not make the row ambiguous."""
    head = (
        "source,model,precision,hardware,n_gpus,parallelism,batch_or_concurrency,input_len,"
        "output_len,metric,value,unit,notes"
    )
    notes = (
        "TensorRT-LLM 1.0; disaggregated; p99 TTFT<=2000ms, p99 TPOT<=80ms; 2 prefill workers "
        "of 4 GPUs each (tp 4, max_num_tokens 8192, kvcache_free_gpu_mem_frac 0.85); 1 decode "
        "worker of 8 GPUs (tp 8, max_batch_size 64, max_num_tokens 512, "
        "kvcache_free_gpu_mem_frac 0.95)"
    )
    row = (
        "s,Llama-3.3-70B,FP8,H100 SXM,16,,n/a,2000,200,throughput_total,2000,output tok/s,"
        f'"Server; {notes}"'
    )
    path = tmp_path / "d.csv"
    path.write_text(head + "\n" + row + "\n")
    (r,) = load_measured(path)
    assert r.resolved, r.status
    assert (r.disaggregated, r.decode_gpus, r.batch_cap) == (True, 8, 64), r
    assert (r.token_budget, r.kv_cache_fraction) == (512, 0.95)


def test_a_stated_budget_is_the_engines_not_the_ideal_engines(tmp_path):
    """A row's ``max_num_tokens`` replaces the engine profile's default budget (and is named
    in the engine's label); the ideal engine of the bound keeps tuning its own. A tighter
    budget never raises a steady offline throughput."""
    head = (
        "source,model,precision,hardware,n_gpus,parallelism,batch_or_concurrency,input_len,"
        "output_len,metric,value,unit,notes"
    )
    row = "s,Llama-3.3-70B,FP8,H100 SXM,2,TP2,{batch},2000,200,throughput_total,2000,output tok/s,{notes}"
    path = tmp_path / "b.csv"
    path.write_text(
        "\n".join(
            [
                head,
                row.format(batch="static 256", notes="TensorRT-LLM 1.0 offline"),
                row.format(
                    batch="static 256; max_num_tokens 1024", notes="TensorRT-LLM 1.0 offline"
                ),
            ]
        )
        + "\n"
    )
    plain, tight = load_measured(path)
    assert (plain.token_budget, tight.token_budget) == (None, 1024)
    got = predicting.row_engine(tight, predicting.preset("achievable"))
    assert got.config.step_token_budget == 1024 and "1,024 tokens a step as stated" in got.label
    default = predicting.row_engine(plain, predicting.preset("achievable"))
    assert default.config.step_token_budget == 8192
    ideal = predicting.row_engine(tight, predicting.preset("refined"))
    assert ideal.config.step_token_budget == predicting.REPLAY_IDEAL_ENGINE.step_token_budget
    table = comparison.compare(path, "achievable").table
    assert list(table.status) == ["ok", "ok"], list(table.status)
    assert table.predicted.iloc[1] < table.predicted.iloc[0]


def test_prompts_that_fill_the_step_are_said_and_run_one_at_a_time(tmp_path):
    """Whole prompts (chunked prefill off, TensorRT-LLM's default) as long as the engine's
    8,192-token step join only a batch with nothing decoding: the label says so, and a closed
    loop of 32 clients at 8,192 in / 1,024 out replays about one request in flight, every
    client's TPOT that of a batch of one. Stating the budget the run raised (9,728 tokens, as
    AIConfigurator's benchmark generator sets it) lets prompts join and the TPOT grow with the
    batch; a prompt longer than the budget goes in chunks beside the decoding requests; a
    prompt a little shorter fits beside that few. The label says so only where the step holds
    fewer decoding requests than the row runs at once."""
    head = (
        "source,model,precision,hardware,n_gpus,parallelism,batch_or_concurrency,input_len,"
        "output_len,metric,value,unit,scenario,notes"
    )
    row = "s,DeepSeek-R1,FP8,H200,8,TEP8,32,{n_in},1024,mean_TPOT,28.0,ms,closed_loop,{notes}"
    plain = "TensorRT-LLM 1.1.0rc2"
    path = tmp_path / "p.csv"
    path.write_text(
        "\n".join(
            [
                head,
                row.format(n_in=8192, notes=plain),
                row.format(n_in=8192, notes=plain + "; max_batch_size 32; max_num_tokens 9728"),
                row.format(n_in=12000, notes=plain),
                row.format(n_in=8180, notes=plain),
                row.format(n_in=8192, notes=plain + "; max_num_tokens 8192"),
            ]
        )
        + "\n"
    )
    rows = load_measured(path)
    base = predicting.preset("achievable")
    labels = [predicting.row_engine(r, base).label for r in rows]
    fill = "prompts of 8,192 tokens fill its 8,192-token step: each joins only a batch with"
    assert fill in labels[0] and "(state max_num_tokens if the run raised it)" in labels[0]
    assert "prompts of" not in labels[1] and "prompts of" not in labels[2]
    assert (
        "prompts of 8,180 tokens fit its 8,192-token step beside at most 12 decoding" in (labels[3])
    )
    assert fill in labels[4] and "state max_num_tokens" not in labels[4]  # stated as run
    table = comparison.compare(path, "achievable").table
    assert list(table.status) == ["ok"] * 5, list(table.status)
    one, batched, chunked = table.predicted.iloc[:3]
    assert batched > 1.5 * one and chunked > 1.5 * one  # decoding beside the prompts


@pytest.mark.parametrize(
    "text, notes, scenario, fused",
    [
        (
            "max batch 256; max_num_tokens 2048; gemm_allreduce_plugin float16 (per engine "
            "instance; closed/x/Server/y.py)",
            "",
            "server",
            True,
        ),
        ("max batch 256", "build flags {'gemm_allreduce_plugin': 'bfloat16'}", "offline", True),
        ("max batch 256", "'gemm_allreduce_plugin': None", "offline", False),
        ("max batch 256", "gemm_allreduce_plugin disable", "offline", False),
        ("", "TensorRT-LLM, GEMM+all-reduce fused", "server", True),
        ("", "fused GEMM-AllReduce kernels", "server", True),
        (
            "Server: gemm_allreduce_plugin float16; Offline: max_num_tokens 1536",
            "",
            "offline",
            False,
        ),
        ("max batch 256", "custom all-reduce; GEMM plugin auto", "server", False),
        ("", "gemm_allreduce_plugin not set", "server", False),
        ("", "gemm_allreduce_plugin is disabled", "server", False),
        ("", "no fused GEMM+all-reduce", "server", False),
        ("", "without GEMM-AllReduce fusion", "server", False),
        ("", "TRTLLM_GEMM_ALLREDUCE_FUSION_ENABLED=1", "server", True),
        ("", "TRTLLM_GEMM_ALLREDUCE_FUSION_ENABLED=0", "server", False),
        ("", "gemm_allreduce_plugin enabled", "server", True),
        ("", "GEMM+all-reduce fusion disabled", "server", False),
        ("", "gemm_allreduce fused", "server", True),
        ("", "built without gemm_allreduce_plugin", "server", False),
        ("", "gemm_allreduce_plugin (float16)", "server", True),
    ],
)
def test_fused_gemm_allreduce_statements(text, notes, scenario, fused):
    assert sem.fused_allreduce_of(text, scenario, notes) is fused


def test_a_stated_gemm_allreduce_fusion_runs_the_engine_so(tmp_path):
    """A row stating its engine fuses each row-parallel GEMM with its all-reduce runs the
    engine's profile with the overlap (and says so in the engine's label); it is never slower
    than the same row without the statement, and faster where the all-reduces take time
    (Llama 3.1 405B on four B200s, 2,048-token steps; docs/model.md §F6)."""
    head = (
        "source,model,precision,hardware,n_gpus,parallelism,batch_or_concurrency,input_len,"
        "output_len,metric,value,unit,notes"
    )
    row = (
        "s,Llama-3.1-405B,FP4,B200,4,TP4,{batch},9400,650,throughput_total,800,output tok/s,"
        "TensorRT-LLM 1.0 offline"
    )
    path = tmp_path / "f.csv"
    path.write_text(
        "\n".join(
            [
                head,
                row.format(batch="max batch 128; max_num_tokens 2048"),
                row.format(
                    batch="max batch 128; max_num_tokens 2048; gemm_allreduce_plugin float16"
                ),
            ]
        )
        + "\n"
    )
    plain, fused = load_measured(path)
    assert (plain.fused_allreduce, fused.fused_allreduce) == (False, True)
    got = predicting.row_engine(fused, predicting.preset("achievable"))
    assert got.profile.gemm_allreduce_overlap == 1.0
    assert "GEMM and all-reduce fused as stated" in got.label
    assert (
        predicting.row_engine(plain, predicting.preset("achievable")).profile.gemm_allreduce_overlap
        == 0.0
    )
    table = comparison.compare(path, "achievable").table
    assert list(table.status) == ["ok", "ok"], list(table.status)
    assert table.predicted.iloc[1] > 1.05 * table.predicted.iloc[0]


def test_a_fusion_statement_the_reader_cannot_take_is_its_rows_reason(tmp_path):
    """A flag value it does not read, or a scenario's part saying the fusion both on and off,
    is that row's reason (the other rows go on); a closed-loop concurrency followed by the
    engine's statements is still the concurrency."""
    head = (
        "source,model,precision,hardware,n_gpus,parallelism,batch_or_concurrency,input_len,"
        "output_len,metric,value,unit,notes"
    )
    row = "s,Llama-3.1-70B,FP8,H100 SXM,4,TP4,{batch},2000,200,{metric},{value},{unit},{notes}"
    tput = dict(metric="throughput_total", value=2000, unit="output tok/s")
    both = (
        "Server: max batch 512; gemm_allreduce_plugin float16; "
        "Offline: max batch 512; gemm_allreduce_plugin None"
    )
    path = tmp_path / "f.csv"
    path.write_text(
        "\n".join(
            [
                head,
                row.format(
                    batch="max batch 64",
                    notes="TensorRT-LLM 1.0 offline; gemm_allreduce_plugin: maybe",
                    **tput,
                ),
                row.format(batch=both, notes="TensorRT-LLM 1.0 offline", **tput),
                row.format(
                    batch="64; max_num_tokens 2048; gemm_allreduce_plugin float16",
                    notes="TensorRT-LLM 1.0",
                    metric="mean_TPOT",
                    value=40,
                    unit="ms",
                ),
            ]
        )
        + "\n"
    )
    maybe, conflict, closed = load_measured(path)
    assert maybe.status == (
        "unresolved: notes: gemm_allreduce_plugin 'maybe' is not read (give a type (float16, "
        "bfloat16) or on to fuse, None or disable not to)"
    ), maybe.status
    assert conflict.status.startswith(
        "unresolved: batch_or_concurrency: says the GEMM/all-reduce fusion is both on and off "
        "for the offline scenario"
    ), conflict.status
    assert closed.ok and closed.scenario == "closed_loop", closed.status
    assert (closed.concurrency, closed.token_budget, closed.fused_allreduce) == (64, 2048, True)


def test_a_stated_kv_cache_fraction_sizes_the_engines_cache(tmp_path):
    """TensorRT-LLM's ``kvcache_free_gpu_mem_frac`` a row states replaces the profile's share
    of the memory left after the weights (named in the engine's label); a larger share never
    holds fewer requests, so never lowers a cache-bound offline throughput; a value outside
    (0, 1] is the row's reason, and an engine that sizes its cache from all memory refuses
    the statement rather than misread it (docs/model.md §F8)."""
    assert sem.kv_fraction_of("max batch 896; kvcache_free_gpu_mem_frac 0.95", "offline") == 0.95
    assert sem.kv_fraction_of("", "server", "'kvcache_free_gpu_mem_frac': 0.9,") == 0.9
    assert sem.kv_fraction_of("max batch 896", "server") is None
    assert sem.kv_fraction_of("", "offline", "kvcache_free_gpu_mem_frac 0.95.") == 0.95
    # TensorRT-LLM's performance tables give a range: its lower end, the least cache
    assert sem.kv_fraction_of("", "offline", "kv_cache_free_gpu_mem_fraction 0.9-0.95") == 0.9
    for bad in ("1.5", "0.005", "95%", "0.9.1"):
        with pytest.raises(SpecError, match=r"is not read \(give a fraction from 0.01 to 1"):
            sem.kv_fraction_of(f"kvcache_free_gpu_mem_frac {bad}", "offline", "", "f.csv:2")
    with pytest.raises(SpecError, match=r"kvcache_free_gpu_mem_frac 0.9, 0.95 for the offline"):
        sem.kv_fraction_of(
            "kvcache_free_gpu_mem_frac 0.9; kvcache_free_gpu_mem_frac 0.95", "offline"
        )
    head = (
        "source,model,precision,hardware,n_gpus,parallelism,batch_or_concurrency,input_len,"
        "output_len,metric,value,unit,notes"
    )
    row = (
        "s,Llama-2-70B,FP8,H200 SXM,1,TP1,{batch},1000,1000,throughput_total,3000,output tok/s,"
        "{engine} offline"
    )
    path = tmp_path / "k.csv"
    path.write_text(
        "\n".join(
            [
                head,
                row.format(batch="max batch 4096", engine="TensorRT-LLM 1.0"),
                row.format(
                    batch="max batch 4096; kvcache_free_gpu_mem_frac 0.98",
                    engine="TensorRT-LLM 1.0",
                ),
                row.format(
                    batch="max batch 4096; kvcache_free_gpu_mem_frac 0.98", engine="vLLM 0.10"
                ),
            ]
        )
        + "\n"
    )
    plain, more, vllm = load_measured(path)
    assert (plain.kv_cache_fraction, more.kv_cache_fraction) == (None, 0.98)
    got = predicting.row_engine(more, predicting.preset("achievable"))
    assert got.profile.kv_cache_memory_fraction == 0.98
    assert "KV cache 0.98 of the free memory as stated" in got.label
    assert predicting.row_engine(vllm, predicting.preset("achievable")).startswith(
        "unresolved: engine 'vllm': the row states kvcache_free_gpu_mem_frac"
    )
    table = comparison.compare(path, "achievable").table
    assert list(table.status[:2]) == ["ok", "ok"], list(table.status)
    assert table.predicted.iloc[1] > table.predicted.iloc[0]  # cache-bound: more requests


def test_a_zero_token_budget_is_refused_for_its_row_alone(tmp_path):
    """A stated budget of 0 tokens is that row's reason, not the engine's default in silence."""
    head = (
        "source,model,precision,hardware,n_gpus,parallelism,batch_or_concurrency,input_len,"
        "output_len,metric,value,unit,notes"
    )
    row = "s,Llama-3.3-70B,FP8,H100 SXM,2,TP2,{batch},2000,200,throughput_total,2000,output tok/s,TensorRT-LLM 1.0 offline"
    path = tmp_path / "z.csv"
    path.write_text(
        "\n".join(
            [head, row.format(batch="static 64; max_num_tokens 0"), row.format(batch="static 64")]
        )
        + "\n"
    )
    zero, plain = load_measured(path)
    assert zero.status == (
        "unresolved: batch_or_concurrency: is 0 in tokens (expected a number >= 1 and <= 4194304)"
    ), zero.status
    assert plain.ok and plain.token_budget is None


# --- a run's own request count ----------------------------------------------------------------
def test_a_requests_column_is_the_runs_count_and_a_bad_one_its_rows_reason(tmp_path, monkeypatch):
    """``requests`` says how many requests the run completed: a closed loop's replay sends as
    many (``LoadCase.issued``), at most ``replay.WHOLE_RUN_REQUESTS`` an instance; a count
    that is not a whole number from 1 to 10^9 is that row's reason and the file's other rows
    go on."""
    header = (
        "model,hardware,n_gpus,precision,metric,value,unit,batch_or_concurrency,input_len,"
        "output_len,requests"
    )
    base = "Llama-3.3-70B-Instruct,H100,8,FP8,throughput,2000,tokens/s,64,1000,200"
    cells = ("640", "", "0", "2.5", "many", "11427840", "2e9")
    path = write(tmp_path, [f"{base},{c}" for c in cells], header)
    rows = load_measured(path)
    assert [r.ok for r in rows] == [True, True, False, False, False, True, False]
    assert rows[0].lengths.issued == 640 and rows[1].lengths.issued == 0
    # an MLPerf Offline run on 72 GPUs issued 11.4 million samples; above 10^9 is no run's
    assert rows[5].lengths.issued == 11427840
    for r in (*rows[2:5], rows[6]):
        assert r.status.startswith("unresolved") and "requests" in r.status, r.status
    assert "<= 1e+09" in rows[6].status
    # a closed loop of 8 clients replays at most WHOLE_RUN_REQUESTS of a run's requests
    from inference_econ.measured import predicting as pr
    from inference_econ.measured import replay as rp

    loop = write(
        tmp_path,
        ["lab,Llama-3.1-8B,FP8,H100 SXM,1,TP1,8,1000,200,throughput,900,tok/s,vLLM 0.10,"
         "closed_loop,11427840"],
        "source,model,precision,hardware,n_gpus,parallelism,batch_or_concurrency,input_len,"
        "output_len,metric,value,unit,notes,scenario,requests",
        name="loop.csv",
    )  # fmt: skip
    (case,) = pr.build_plan(load_measured(loop), "achievable").load.values()
    assert case.issued == 11427840 and case.clients == 8

    class Sent(Exception):
        pass

    def record(inst, run):
        raise Sent(len(run.arrivals()))

    monkeypatch.setattr(rp, "WHOLE_RUN_REQUESTS", 300)
    monkeypatch.setattr(rp, "simulate_run", record)
    with pytest.raises(Sent) as sent:
        rp.replay(case)
    assert sent.value.args == (300,)
    # the replay sends them: tests/test_export.py, a plan's 640-request loop read back
    # an MLPerf run issues at least its performance sample count: a smaller count is not its
    line = v50_lines(SERVER)[0]
    samples = load_measured(write(tmp_path, [line], name="s.csv"))[0].lengths.issued
    assert samples > 1000
    for given, issued in ((100, samples), (samples + 5, samples + 5)):
        row, head = edited(line, requests=str(given))
        assert load_measured(write(tmp_path, [row], head, name="r.csv"))[0].lengths.issued == issued


@pytest.mark.parametrize(
    "text, block",
    [
        ("FP8 (block-scaled)", True),
        ("fp8 block scales, KV cache fp8", True),
        ("FP8 blockwise", True),
        ("fp8_block", True),
        ("FP8", False),
        ("FP8 (per-tensor)", False),
        ("NVFP4 (block-scaled)", False),  # NVFP4's own micro-blocks: not an 8-bit checkpoint
    ],
)
def test_a_row_stating_block_scaled_fp8_runs_the_block_scaled_kernels(tmp_path, text, block):
    # AIConfigurator's runs state Qwen3-235B-A22B's own FP8 release ("fine-grained fp8
    # quantization with block size of 128", its model card) as "FP8 (block-scaled)": the row
    # reads 8-bit weights with block scales, which the kernel clock prices with the tables'
    # fp8_block GEMMs and experts; plain "FP8" is ModelOpt's per-tensor format
    import pandas as pd

    from inference_econ.model.assumptions import preset
    from inference_econ.model.kernel_clock import Formats
    from inference_econ.model.workload import compile_workload

    runs = pd.read_csv(DATA / "aic_silicon_runs.csv.gz")
    row = runs[(runs.model == "Qwen3-235B-A22B") & (runs.precision == "FP8 (block-scaled)")]
    row = row.iloc[:1].drop(columns=["group", "split", "measured_date"]).assign(precision=text)
    path = tmp_path / "qwen3.csv"
    row.to_csv(path, index=False)
    (read,) = load_measured(path)
    assert read.ok, read.status
    arch = read.arch.with_precision(*read.bits)
    assert arch.precision.weight_block_scaled is block
    assert engine_words.states_block_scaled(text) is (block or text.startswith("NVFP4"))
    if block:
        a = preset("achievable").replace(kernel_tables=True)
        formats = Formats(compile_workload(arch, a), read.gpu)
        assert (formats.dense, formats.moe) == ("fp8_block", "fp8_block")


def test_a_column_the_file_leaves_out_is_the_options_for_every_row(tmp_path):
    # a plain CSV without the optional precision column (nor, here, the hardware column):
    # --precision and --hardware state them for every row, as for a blank cell
    path = tmp_path / "rows.csv"
    path.write_text(
        "model,n_gpus,metric,value,unit,input_len,output_len,batch_or_concurrency,engine\n"
        "Llama 3.1 8B,1,output_throughput,5000,tok/s,1000,1000,64,vllm\n"
    )
    row = load_measured(path, {"hardware": "H200", "n_gpus": None, "precision": "FP8"})[0]
    assert row.status == "ok", row.status
    assert (row.gpu.name, row.bits[0]) == ("H200-SXM", 8)
    # without --hardware the file's missing column is the error, and the fix names the option
    with pytest.raises(SpecError, match=r"columns missing: hardware .*or give --hardware"):
        load_measured(path, {"hardware": None, "n_gpus": None, "precision": "FP8"})
    # calibrate's rows take no such option: its fix names the columns only
    with pytest.raises(SpecError, match=r"columns missing: hardware \(the columns are [^;]*\)$"):
        load_measured(path)


def test_a_request_past_the_models_context_window_is_infeasible_for_that_reason(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text(
        "model,hardware,n_gpus,metric,value,unit,input_len,output_len,batch_or_concurrency,"
        "engine,precision\n"
        "DeepSeek-R1,H200,8,output_throughput,5000,tok/s,100000000,1000,64,sglang,FP8\n"
    )
    table = comparison.compare(path, "achievable").table
    assert table.status[0] == (
        "infeasible: a request of 100,001,000 tokens (prompt and output) is past "
        "DeepSeek-R1's context window of 163,840 tokens"
    )


def test_a_stated_layout_that_splits_attention_heads_below_one_is_infeasible(tmp_path):
    # TP1000000 of a 64-head model had been priced ("ok", within 6 % of the measured figure);
    # no engine splits a head, so the row says why it cannot be run
    path = tmp_path / "rows.csv"
    path.write_text(
        "model,hardware,n_gpus,parallelism,metric,value,unit,input_len,output_len,"
        "batch_or_concurrency,engine,precision\n"
        "Llama 3.3 70B,H200,1000000,TP1000000,output_throughput,11000,tok/s,128,128,64,"
        "vllm,FP8\n"
        "Llama 3.3 70B,H200,64,TP64,output_throughput,11000,tok/s,128,128,64,vllm,FP8\n"
    )
    table = comparison.compare(path, "achievable").table
    assert table.status[0] == (
        "infeasible: TP1000000 splits Llama 3.3 70B's 64 attention heads over 1,000,000 GPUs, "
        "less than one each"
    )
    assert table.status[1] == "ok" and table.layout[1] == "TP64"  # one head a GPU: it runs


def test_a_layout_label_names_its_expert_degree_and_reads_back_as_it():
    from inference_econ.measured.layouts import layout_of
    from inference_econ.measured.predicting import Candidate

    for cand in (Candidate(8, 1, 1, 2, True), Candidate(4, 2, 1, 1, True)):
        label = cand.label()
        assert f"EP{cand.tensor}" in label  # "TP8 EP8 DP2 attn-DP", "TP4PP2 EP4"
        back = layout_of(label, cand.gpus, "row")
        assert (back.tensor, back.pipeline, back.expert) == (
            cand.tensor,
            cand.pipeline,
            cand.tensor,
        )
        assert back.attention_ranks == cand.attention_ranks


def test_an_unresolved_row_shows_the_value_it_read_whatever_stopped_it(tmp_path):
    """A GPU count of 0 or a layout wider than the row's GPUs had blanked the row's measured
    value, where a unit or a model the toolkit does not know showed it: every row whose value
    cell is a number shows it; a value that is no number stays blank."""
    from click.testing import CliRunner

    from inference_econ.cli import main

    head = "source,model,precision,hardware,n_gpus,parallelism,batch_or_concurrency,input_len,"
    head += "output_len,metric,value,unit,notes\n"
    cells = [
        ("2", "TP2", "Llama-3.3-70B", "18.58", "ms"),  # ok
        ("0", "TP2", "Llama-3.3-70B", "18.58", "ms"),  # n_gpus 0
        ("1", "TP3", "Llama-3.3-70B", "18.58", "ms"),  # TP3 on one GPU
        ("2", "TP2", "Llama-3.3-70B", "18.58", "furlongs"),
        ("2", "TP2", "Nonexistent-Model-9B", "18.58", "ms"),
        ("2", "TP2", "Llama-3.3-70B", "abc", "ms"),
    ]
    lines = [
        f"s,{m},FP8,H100 SXM,{g},{tp},1,5000,500,ITL_mean,{v},{u},\n" for g, tp, m, v, u in cells
    ]
    path = tmp_path / "rows.csv"
    path.write_text(head + "".join(lines))
    rows = load_measured(path)
    assert [r.value for r in rows] == [18.58] * 5 + [None]
    assert [r.ok for r in rows] == [True] + [False] * 5
    assert rows[1].status.startswith("unresolved: n_gpus: is 0 in GPUs")
    assert rows[2].status.startswith("unresolved: parallelism: 'TP3' uses 3 GPUs but the row has 1")
    out = tmp_path / "out.csv"
    result = CliRunner().invoke(
        main, ["compare-measured", str(path), "--format", "csv", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    import pandas as pd

    table = pd.read_csv(out, skiprows=1)
    assert list(table.measured.fillna(-1)) == [18.58] * 5 + [-1]
