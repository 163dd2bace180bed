"""A row's own statement of its engine's scheduler flags (vLLM's ``num_scheduler_steps`` and
``enable_chunked_prefill``, SGLang's ``enable_mixed_chunk``) is read, named in the engine's
label and run, over what the benchmark's harness or the engine sets (docs/model.md §F9)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from inference_econ.errors import SpecError
from inference_econ.measured import comparison, predicting
from inference_econ.measured import semantics as sem
from inference_econ.measured.reading import load_measured

NEWER = Path(__file__).parent / "data" / "benchmarks_test_mlperf_newer.csv"
#: Requests of an instance's run where an Interactive row below is replayed (``small_runs``;
#: the rows' own runs are 6,144 and 21,504): its mean TTFT within 2 % of the whole run's
#: (MI325X 0.716 / 1.537 of the measured against 0.729 / 1.544, MI355X 0.952 / 0.257 against
#: 0.893 / 0.222), where 300 requests move MI355X's unstated figure to 0.76.
SERVER_RUN_REQUESTS = 2000


def test_the_scheduler_flags_are_read_in_the_forms_configurations_write_them():
    """vLLM's YAML keys and command-line flags, in the cell or the notes; a value not read,
    or two values for one scenario, is the row's reason."""
    assert sem.scheduler_of("num_scheduler_steps 1; enable_chunked_prefill True", "server") == (
        1,
        True,
        None,
    )
    assert sem.scheduler_of(
        "", "offline", "--num-scheduler-steps 8 --no-enable-chunked-prefill"
    ) == (
        8,
        False,
        None,
    )
    assert sem.scheduler_of("enable_chunked_prefill: False", "server") == (None, False, None)
    assert sem.scheduler_of("--enable-chunked-prefill", "server") == (None, True, None)
    assert sem.scheduler_of("max batch 600", "server") == (None, None, None)
    # the cell's statement is the row's; the notes only fill in what it leaves out
    assert sem.scheduler_of("num_scheduler_steps 4", "server", "num_scheduler_steps 9") == (
        4,
        None,
        None,
    )
    for bad in ("0", "1.5", "many", "2000"):
        with pytest.raises(SpecError, match=r"num_scheduler_steps .* is not read \(give a whole"):
            sem.scheduler_of(f"num_scheduler_steps {bad}", "server", "", "f.csv:2")
    with pytest.raises(SpecError, match="states num_scheduler_steps twice, differently"):
        sem.scheduler_of("num_scheduler_steps 1, num_scheduler_steps 8", "server")
    assert sem.scheduler_of('enable_chunked_prefill: "false"', "server") == (None, False, None)
    assert sem.scheduler_of("--enable-chunked-prefill --max-num-seqs 256", "server") == (
        None,
        True,
        None,
    )
    for bad in ("maybe", ""):
        with pytest.raises(SpecError, match=r"enable_chunked_prefill .* is not read \(give True"):
            sem.scheduler_of(f"enable_chunked_prefill: {bad}", "server", "", "f.csv:2")
    with pytest.raises(SpecError, match="states chunked prefill twice, differently"):
        sem.scheduler_of("enable_chunked_prefill True; --no-enable-chunked-prefill", "server")


def _mi325x_interactive_ttft(tmp_path) -> Path:
    """AMD's MLPerf v5.1 Llama 2 70B Interactive run on 8 MI325X (mean TTFT 117.9 ms), as the
    shipped file has it (its harness configuration's flags stated) and with them left out."""
    with open(NEWER, newline="") as f:
        records = [
            r
            for r in csv.DictReader(f)
            if "8xMI325X_2xEPYC_9575F_2/llama2-70b-99.9/Interactive" in r["source"]
            and r["metric"] == "mean_TTFT"
        ]
    assert len(records) == 1
    stated = records[0]
    assert "num_scheduler_steps 1; enable_chunked_prefill True" in stated["batch_or_concurrency"]
    unstated = dict(
        stated,
        batch_or_concurrency=stated["batch_or_concurrency"].replace(
            "; num_scheduler_steps 1; enable_chunked_prefill True", ""
        ),
    )
    return _written(tmp_path / "mi325x.csv", [stated, unstated])


def _written(path: Path, records: list[dict]) -> Path:
    """``records`` (rows of the newer file, changed) written as a measured-rows CSV."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(records[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
    path.write_text(out.getvalue())
    return path


def test_a_stated_scheduler_replaces_the_harness_one_and_moves_the_first_token(
    tmp_path, small_runs
):
    """AMD's harness runs vLLM with 9 decode steps a schedule and prompts in steps of their
    own in its Server configurations; its MI325X Interactive one sets num_scheduler_steps 1
    and enable_chunked_prefill True (mlcommons/inference_results_v5.1, closed/AMD/code/
    llama2-70b-99.9/harness_llm/models/llama2-70b/interactive_mi325x.yaml). As stated, a
    prompt no longer waits out a window of decode steps: the predicted mean TTFT falls from
    about 1.5x the measured 117.9 ms to within 35 % of it."""
    path = _mi325x_interactive_ttft(tmp_path)
    stated, unstated = load_measured(path)
    assert (stated.scheduler_steps, stated.chunked_prefill) == (1, True)
    assert (unstated.scheduler_steps, unstated.chunked_prefill) == (None, None)
    base = predicting.preset("achievable")
    run, harness = predicting.row_engine(stated, base), predicting.row_engine(unstated, base)
    assert (run.config.prefill, run.config.scheduler_steps) == ("chunked", 1)
    assert (harness.config.prefill, harness.config.scheduler_steps) == ("separate", 9)
    assert "mlperf harness (chunked prompts as stated" in run.label
    assert "1 decode step per schedule as stated" in run.label
    assert "(separate prompts, recompute admission, 9 decode steps per schedule" in harness.label
    table = comparison.compare(path, "achievable").table
    assert list(table.status) == ["ok", "ok"], list(table.status)
    measured = 117.895
    assert table.measured.iloc[0] == pytest.approx(measured)
    as_stated, as_harness = table.predicted.iloc[0], table.predicted.iloc[1]
    assert as_harness > 1.35 * measured, as_harness
    assert abs(as_stated / measured - 1) < 0.35, as_stated
    assert as_stated < as_harness


def test_unchunked_prompts_as_stated_are_the_engines_own_unchunked_mode(tmp_path):
    """``enable_chunked_prefill False`` runs prompts as the engine does without chunking:
    vLLM V0 in steps of their own (its profile's ``separate``), vLLM V1 whole prompts beside
    the decodes; a row under no harness names what it states."""
    head = (
        "source,model,precision,hardware,n_gpus,parallelism,batch_or_concurrency,input_len,"
        "output_len,metric,value,unit,notes"
    )
    row = (
        "s,Llama-3.1-8B,BF16,H100 SXM,1,TP1,{batch},1000,200,throughput_total,3000,"
        "output tok/s,{engine} offline"
    )
    path = tmp_path / "u.csv"
    flags = "max batch 256; enable_chunked_prefill False; num_scheduler_steps 4"
    path.write_text(
        "\n".join(
            [
                head,
                row.format(batch=flags, engine="vLLM 0.6.3"),
                row.format(batch=flags, engine="vLLM 0.10"),
            ]
        )
        + "\n"
    )
    v0, v1 = load_measured(path)
    base = predicting.preset("achievable")
    old, new = predicting.row_engine(v0, base), predicting.row_engine(v1, base)
    assert (old.config.prefill, old.config.scheduler_steps) == ("separate", 4)
    assert (new.config.prefill, new.config.scheduler_steps) == ("whole", 4)
    assert ", whole prompts as stated, 4 decode steps per schedule as stated" in new.label


def test_sglangs_mixed_chunks_as_stated_mix_its_prompts_into_the_decoding_steps(tmp_path):
    """SGLang runs prompts first in steps of their own (``chunked_separate``); a row stating
    ``--enable-mixed-chunk`` ran them in chunks beside its decoding requests (``chunked``),
    and says so; another engine has no such switch, so its row stating one is unresolved. A
    value not read is the row's reason; the flag is read as a word of its own."""
    assert sem.scheduler_of("--enable-mixed-chunk", "server") == (None, None, True)
    assert sem.scheduler_of("", "server", "enable_mixed_chunk: false") == (None, None, False)
    with pytest.raises(SpecError, match=r"enable_mixed_chunk 'sometimes' is not read \(give"):
        sem.scheduler_of("enable_mixed_chunk: sometimes", "server", "", "f.csv:2")
    with pytest.raises(SpecError, match="states enable_mixed_chunk twice, differently"):
        sem.scheduler_of("--enable-mixed-chunk; enable_mixed_chunk False", "server")
    for other in (
        "enable_mixed_chunking False",
        "--enable-mixed-chunk-size 512",
        "reenable_mixed_chunk",
    ):
        assert sem.scheduler_of(other, "server") == (None, None, None)
    head = (
        "source,model,precision,hardware,n_gpus,parallelism,batch_or_concurrency,input_len,"
        "output_len,metric,value,unit,notes"
    )
    row = "s,Qwen3-32B,BF16,H100 SXM,2,TP2,16,1024,128,mean_TPOT,16.5,ms,{engine} {flag}"
    path = tmp_path / "m.csv"
    lines = [
        row.format(engine="SGLang 0.5.1", flag=""),
        row.format(engine="SGLang 0.5.1", flag="--enable-mixed-chunk"),
        row.format(engine="vLLM 0.12", flag="--enable-mixed-chunk"),
    ]
    path.write_text("\n".join([head, *lines]) + "\n")
    plain, mixed, vllm = load_measured(path)
    base = predicting.preset("achievable")
    assert predicting.row_engine(plain, base).config.prefill == "chunked_separate"
    found = predicting.row_engine(mixed, base)
    assert found.config.prefill == "chunked" and "chunked prompts as stated" in found.label
    said = predicting.row_engine(vllm, base)
    assert isinstance(said, str) and said.startswith("unresolved: engine 'vllm'")
    assert "enable_mixed_chunk" in said and "drop the statement" in said


def test_an_admission_cadence_is_read_as_the_harness_configuration_writes_it():
    """AMD's vLLM scheduler patch as a v6.0 harness configuration sets it
    (``VLLM_SUBSEQUENT_DECODE_STEPS: 6`` in ``vllm_env_config``), in the cell or the notes;
    the floor alone is a cadence of none; a value not read, or two for one scenario, is the
    row's reason."""
    assert sem.cadence_of("VLLM_SUBSEQUENT_DECODE_STEPS: 6", "interactive") == (6, 0)
    assert sem.cadence_of(
        "max batch 2048",
        "server",
        "VLLM_SUBSEQUENT_DECODE_STEPS 2, VLLM_MIN_REQUEST_DECODE_STEP 1216",
    ) == (2, 1216)
    assert sem.cadence_of("VLLM_MIN_REQUEST_DECODE_STEP=256", "offline") == (0, 256)
    assert sem.cadence_of("max batch 4096; max_num_batched_tokens 8192", "server") is None
    for bad in ("six", "1.5", "-1", "", "2000000"):
        with pytest.raises(SpecError, match=r"VLLM_SUBSEQUENT_DECODE_STEPS .* is not read"):
            sem.cadence_of(f"VLLM_SUBSEQUENT_DECODE_STEPS {bad}", "server", "", "f.csv:2")
    with pytest.raises(SpecError, match="states VLLM_MIN_REQUEST_DECODE_STEP twice, differently"):
        sem.cadence_of("VLLM_MIN_REQUEST_DECODE_STEP 1, VLLM_MIN_REQUEST_DECODE_STEP 8", "server")


def test_amds_v6_prompt_pacing_as_stated_moves_the_first_token_to_the_measured_one(
    tmp_path, small_runs
):
    """AMD's MLPerf v6.0 Llama 2 70B Interactive run on 8 MI355X (GigaComputing's, mean TTFT
    242.7 ms) runs vLLM 0.14 with ``VLLM_SUBSEQUENT_DECODE_STEPS: 6`` (closed/GigaComputing/src/
    llama2-70b-99.9/interactive_MI355X.yaml, gbeezybez/inference_results_v6.0): waiting prompts
    are admitted on one scheduler call in seven. As the shipped row states it, the predicted
    mean TTFT is within 35 % of the measured; with the cadence left out (vLLM admitting on
    every call) it is under two thirds of it."""
    with open(NEWER, newline="") as f:
        records = [
            r
            for r in csv.DictReader(f)
            if "closed/GigaComputing/results/8xMI355X" in r["source"]
            and "llama2-70b-99.9/Interactive" in r["source"]
            and r["metric"] == "mean_TTFT"
        ]
    assert len(records) == 1
    stated = records[0]
    said = "; VLLM_SUBSEQUENT_DECODE_STEPS 6 ("
    assert said in stated["batch_or_concurrency"] and "vLLM 0.14 (" in stated["notes"]
    unstated = dict(stated, batch_or_concurrency=stated["batch_or_concurrency"].split(said)[0])
    path = _written(tmp_path / "mi355x.csv", [stated, unstated])
    paced, every = load_measured(path)
    assert (paced.admission_cadence, every.admission_cadence) == ((6, 0), None)
    run = predicting.row_engine(paced, predicting.preset("achievable"))
    assert run.config.admission_cadence == (6, 0) and run.config.prefill == "chunked"
    assert "prompts admitted every 7th schedule as stated" in run.label
    # its configuration's ``async_scheduling: True``: the host work overlapped with the GPU
    assert paced.async_scheduling is True and every.async_scheduling is None
    assert run.profile is not None and run.profile.host_overhead_exposed == 0.0
    assert ", async scheduling as stated" in run.label
    table = comparison.compare(path, "achievable").table
    assert list(table.status) == ["ok", "ok"], list(table.status)
    measured = table.measured.iloc[0]
    assert measured == pytest.approx(242.739)
    as_stated, as_vllm = table.predicted.iloc[0], table.predicted.iloc[1]
    assert abs(as_stated / measured - 1) < 0.35, as_stated
    assert as_vllm < measured * 2 / 3, as_vllm


def test_async_scheduling_is_read_and_is_vllms_alone(tmp_path):
    """vLLM's ``async_scheduling`` as a configuration or a command line writes it: on, the
    engine's host work overlaps the GPU's (``host_overhead_exposed`` 0, §F5), off it waits;
    stated for another engine it is the row's reason, not a silent change."""
    assert sem.async_of("async_scheduling: True", "server") is True
    assert sem.async_of("", "offline", "--async-scheduling --max-num-seqs 256") is True
    assert sem.async_of("--no-async-scheduling", "server") is False
    assert sem.async_of("max batch 256", "server") is None
    with pytest.raises(SpecError, match=r"async_scheduling 'sometimes' is not read \(give True"):
        sem.async_of("async_scheduling: sometimes", "server", "", "f.csv:2")
    with pytest.raises(SpecError, match="states async_scheduling twice, differently"):
        sem.async_of("async_scheduling True; --no-async-scheduling", "server")
    head = (
        "source,model,precision,hardware,n_gpus,parallelism,batch_or_concurrency,input_len,"
        "output_len,metric,value,unit,notes"
    )
    row = (
        "s,Llama-3.1-8B,BF16,H100 SXM,1,TP1,max batch 256; async_scheduling {on},1000,200,"
        "throughput_total,3000,output tok/s,{engine} offline"
    )
    path = tmp_path / "a.csv"
    lines = [
        row.format(on=on, engine=e) for on, e in (("True", "vLLM 0.10"), ("False", "vLLM 0.10"))
    ]
    path.write_text(
        "\n".join([head, *lines, row.format(on="True", engine="TensorRT-LLM 1.0")]) + "\n"
    )
    on, off, trt = load_measured(path)
    base = predicting.preset("achievable")
    fast, slow = predicting.row_engine(on, base), predicting.row_engine(off, base)
    assert fast.profile.host_overhead_exposed == 0.0 and slow.profile.host_overhead_exposed == 1.0
    assert ", no async scheduling as stated" in slow.label
    refused = predicting.row_engine(trt, base)
    assert isinstance(refused, str) and "states async_scheduling, vLLM's" in refused
