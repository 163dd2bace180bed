"""Measured results as engine tables, benchmark tools and blog posts write them: Hugging Face
repository ids and release names for models, attention-DP and expert-parallel layouts in the
engines' own notations, trtllm-bench's metric labels, lengths in "K" and system names. Each is
read as the catalog's spelling of the same thing, or refused in one line naming what it read
(docs/user-guide.md, "Measured results: the CSV format")."""

from pathlib import Path

import pytest

import inference_econ as ie
from inference_econ.api import compare_measured
from inference_econ.errors import SpecError
from inference_econ.measured import engine_words, layouts
from inference_econ.measured import metric_names as mn
from inference_econ.measured import semantics as sem
from inference_econ.measured.mlperf import lengths_of, token_count
from inference_econ.measured.reading import load_measured
from inference_econ.measured.resolving import hardware_of, resolve_model
from inference_econ.model.assumptions import preset


@pytest.mark.parametrize(
    "name, model",
    [
        # TensorRT-LLM's performance overview: its model list (repository ids) and its headings
        ("nvidia/DeepSeek-R1-0528-NVFP4-v2", "DeepSeek-R1"),
        ("deepseek-ai/DeepSeek-R1-0528", "DeepSeek-R1"),
        ("nvidia/Qwen3-235B-A22B-FP8", "Qwen3-235B-A22B"),
        ("nvidia/Qwen3-30B-A3B-FP4", "Qwen3-30B-A3B"),
        ("nvidia/Llama-3.3-70B-Instruct-FP4", "Llama 3.3 70B"),
        ("nvidia/Llama-4-Maverick-17B-128E-Instruct-NVFP4", "Llama 4 Maverick"),
        ("openai/gpt-oss-120b", "gpt-oss-120b"),
        ("Deepseek R1 0528", "DeepSeek-R1"),
        ("LLaMA v4 Maverick", "Llama 4 Maverick"),
        ("LLaMA v3.3 70B", "Llama 3.3 70B"),
        # releases of an architecture: a date, a revision, a thinking variant, a format
        ("Qwen/Qwen3-235B-A22B-Thinking-2507-FP8", "Qwen3-235B-A22B"),
        ("moonshotai/Kimi-K2-Instruct-0905", "Kimi K2"),
        ("deepseek-ai/DeepSeek-V3-0324", "DeepSeek-V3"),
        ("mistralai/Mixtral-8x7B-Instruct-v0.1", "Mixtral 8x7B"),
        ("meta-llama/Meta-Llama-3.1-8B-Instruct", "Llama 3.1 8B"),
        ("amd/Llama-3.3-70B-Instruct-FP8-KV", "Llama 3.3 70B"),
        ("amd/gpt-oss-120b-w-mxfp4-a-fp8", "gpt-oss-120b"),
        # a revision the catalog names apart keeps its own file
        ("mistralai/Mistral-7B-Instruct-v0.3", "Mistral 7B v0.3"),
        ("DeepSeek-V2", "DeepSeek-V2"),
    ],
)
def test_a_release_name_reads_as_its_architecture(name, model):
    assert resolve_model(name).name == model


@pytest.mark.parametrize(
    "name, said",
    [
        ("deepseek-ai/DeepSeek-V2-Lite", "did you mean"),
        ("zai-org/GLM-4.5-Air", "did you mean"),
        ("nvidia/Nemotron-Super-49B-FP8", "import-hf"),
        # a revision is not a release tag: Mistral 7B v0.2 drops v0.1's sliding window
        ("mistralai/Mistral-7B-Instruct-v0.2", "did you mean"),
        ("Mistral-7B-v0.2", "did you mean"),
    ],
)
def test_another_architecture_is_not_read_as_a_near_name(name, said):
    """A release whose name, less its tags, is still no catalog name is refused in one line that
    names the text, not mapped to the nearest architecture."""
    with pytest.raises(SpecError) as caught:
        resolve_model(name)
    message = str(caught.value)
    assert name in message and said in message and "\n" not in message


@pytest.mark.parametrize(
    "text, gpus, expected",
    [
        # an expert degree alone is the tensor group's (TP8 EP8)
        ("EP8", 8, (8, 1, 8, 1, 1)),
        ("PP2 EP4", 8, (4, 2, 4, 1, 1)),
        # data-parallel ranks sharing experts split wider than one rank: vLLM's DP with EP
        ("DP8 EP8", 8, (8, 1, 8, 8, 1)),
        ("DP4 TP2 EP8", 8, (8, 1, 8, 4, 1)),
        # TensorRT-LLM's ADP and its wide EP (which runs with attention DP only)
        ("ADP8 EP8", 8, (8, 1, 8, 8, 1)),
        ("TP8 EP8 ADP", 8, (8, 1, 8, 8, 1)),
        ("WideEP 8", 8, (8, 1, 8, 8, 1)),
        ("WideEP 16", 32, (16, 1, 16, 16, 2)),
        ("DEP2,PP2", 4, (2, 2, 2, 2, 1)),
        # SGLang's --tp 8 --dp 8 (--ep 8): DP ranks within the tensor group, where replicas of
        # TP8 would need 64 GPUs; launch words and "8-way"
        ("TP8 EP8 DP8", 8, (8, 1, 8, 8, 1)),
        ("DP=8, EP=8", 8, (8, 1, 8, 8, 1)),
        ("tensor parallel 8, expert parallel 8", 8, (8, 1, 8, 1, 1)),
        ("8-way expert parallel", 8, (8, 1, 8, 1, 1)),
        ("tensor parallel size 8", 8, (8, 1, None, 1, 1)),
        # an expert-parallel word or flag without its degree: experts across the instance
        ("TP8 + EP", 8, (8, 1, 8, 1, 1)),
        ("DP8 + EP", 8, (8, 1, 8, 8, 1)),
        ("-tp 8 -ep", 8, (8, 1, 8, 1, 1)),
        ("--tp 8 --enable-deepep-moe", 8, (8, 1, 8, 1, 1)),
        ("--tp 8 --dp 8 --enable-dp-attention --moe-a2a-backend deepep", 8, (8, 1, 8, 8, 1)),
        ("--tp 8 --moe-a2a-backend none", 8, (8, 1, None, 1, 1)),
        # attention DP said to be off is not on; a count of instances is not its degree
        ("TP8 EP8, ADP off", 8, (8, 1, 8, 1, 1)),
        ("TP8 EP8 (not WideEP)", 8, (8, 1, 8, 1, 1)),
        ("TP8 EP8, dp_attention=false", 8, (8, 1, 8, 1, 1)),
        ("TP8 EP8 enable_attention_dp=False", 8, (8, 1, 8, 1, 1)),
        ("TP8 EP8 (no DP attention)", 8, (8, 1, 8, 1, 1)),
        ("TP8 EP8 ADP 2 instances", 16, (8, 1, 8, 8, 2)),
        # a hyphen between a degree's name and its number
        ("TEP-4", 4, (4, 1, 4, 1, 1)),
        ("DEP-8", 8, (8, 1, 8, 8, 1)),
        # as before: DP without experts wider than a rank counts replicas
        ("DP2 TP4", 8, (4, 1, None, 1, 2)),
        ("TP8 DP2", 16, (8, 1, None, 1, 2)),
        ("TP4 EP4 DP2", 8, (4, 1, 4, 1, 2)),
        ("DEP8", 8, (8, 1, 8, 8, 1)),
        ("TEP8", 8, (8, 1, 8, 1, 1)),
    ],
)
def test_engine_layout_notations_read_as_the_layout_they_launch(text, gpus, expected):
    lay = layouts.layout_of(text, gpus, "rows.csv, row 2")
    got = (lay.tensor, lay.pipeline, lay.expert, lay.attention_ranks, lay.replicas)
    assert got == expected and lay.gpus == gpus


def test_an_expert_degree_past_a_stated_tensor_degree_is_still_refused():
    with pytest.raises(SpecError, match="larger than the instance"):
        layouts.layout_of("TP1 EP8", 8, "rows.csv, row 2")


@pytest.mark.parametrize(
    "text, needs",
    [
        # four replicas of TP4 need 16; four ranks within TP4 give 4
        ("TP4 DP4", 16),
        # without experts split, DP counts vLLM's replicas: SGLang's ranks within the tensor
        # group are read only beside an expert degree ("TP8 EP8 DP8")
        ("TP8 DP2", 16),
    ],
)
def test_a_layout_no_reading_fits_is_refused_as_its_replicas_would_run(text, needs):
    with pytest.raises(SpecError, match=f"uses {needs} GPUs but the row has 8"):
        layouts.layout_of(text, 8, "rows.csv, row 2")


def test_a_bare_expert_word_alone_is_still_a_degree_without_its_number():
    with pytest.raises(SpecError, match="names a degree without its number"):
        layouts.layout_of("EP", 8, "rows.csv, row 2")


@pytest.mark.parametrize(
    "name, quantity, per",
    [
        ("Per GPU Output Throughput", "throughput", "gpu"),
        ("Output tokens per second per GPU", "throughput", "gpu"),
        ("output_tokens_per_second_per_gpu", "throughput", "gpu"),
        ("Average time-per-output-token [TPOT]", "tpot", None),
        ("Per User Output Speed [1/TPOT]", "user_speed", None),
        # AIPerf's per-request 1 / inter-token latency
        ("output_token_throughput_per_user", "user_speed", None),
        ("Output Token Throughput Per User (tokens/sec/user)", "user_speed", None),
        ("Request Throughput (req/sec)", "request_throughput", None),
        # a statistic or a basis in brackets is part of the name, an acronym note is not
        ("TTFT (p99)", "ttft_p99", None),
        ("TTFT [p99]", "ttft_p99", None),
        ("[TPOT] P99", "tpot_p99", None),
        ("[TTFT] P50", "ttft_median", None),
        ("TPOT p50", "tpot", None),
        ("Throughput [per GPU]", "throughput", "gpu"),
        # vLLM's result keys, with their unit at the end
        ("p99_ttft_ms", "ttft_p99", None),
        ("mean_itl_ms", "itl", None),
        # InferenceX: "tput" is input + output tokens (utils/process_result.py)
        ("tput_per_gpu", "total_throughput", "gpu"),
        ("output_tput_per_gpu", "throughput", "gpu"),
        ("input_tput_per_gpu", "input_throughput", "gpu"),
    ],
)
def test_trtllm_bench_report_labels_are_metric_names(name, quantity, per):
    metric = mn.metric_of(name)
    assert metric is not None and (metric.quantity, metric.per) == (quantity, per)


@pytest.mark.parametrize("name", ["Throughput [req/s]", "Per GPU TTFT"])
def test_a_metric_name_that_says_a_unit_or_basis_it_cannot_have_is_not_read(name):
    """A throughput named in requests but read as tokens, a latency per GPU: refused."""
    assert mn.metric_of(name) is None


@pytest.mark.parametrize(
    "name, unit, quantity, basis",
    [
        # a throughput per user is one request's speed
        ("throughput", "tok/s/user", "user_speed", None),
        ("Output throughput", "TPS/user", "user_speed", None),
        # a blank unit: the one the name writes
        ("Throughput (tok/s/GPU)", "", "throughput", "gpu"),
        # a GPU by its name: the vLLM blog's "tok/s/H200"
        ("throughput", "tok/s/H200", "throughput", "gpu"),
        ("throughput", "tokens/s per B200 GPU", "throughput", "gpu"),
    ],
)
def test_a_rows_unit_says_what_its_throughput_is_per(name, unit, quantity, basis):
    metric, read = mn.row_metric(name, unit)
    assert metric.quantity == quantity
    if basis is not None:
        assert mn.basis_of_unit(read) == basis


@pytest.mark.parametrize(
    "unit, time",
    [("ms", "ms"), ("ms/token", "ms"), ("milliseconds", "ms"), ("sec", "s"), ("µs", "us")],
)
def test_time_units_as_sources_write_them(unit, time):
    assert mn.time_unit(unit) == time and mn.time_unit("tok/s") is None


@pytest.mark.parametrize(
    "text, tokens", [("1K", 1024.0), ("8k", 8192.0), ("32K", 32768.0), ("1000", 1000.0)]
)
def test_lengths_in_k_are_thousands_of_1024_tokens(text, tokens):
    assert token_count(text) == tokens


@pytest.mark.parametrize("text", ["1KB", "k", "1K2"])
def test_other_lengths_with_a_k_are_not_token_counts(text):
    assert token_count(text) is None


@pytest.mark.parametrize(
    "text, part",
    [
        ("DGX H200", "H200-SXM"),
        ("HGX H100", "H100-SXM"),
        ("H200 SXM 141GB (DGX H200)", "H200-SXM"),
        ("RTX 6000 Pro Blackwell Server Edition", "RTX-PRO-6000-BSE"),
        ("AMD Instinct MI355X GPUs", "MI355X"),
        ("Blackwell Ultra B300", "B300-HGX"),
        ("DGX Spark", None),
    ],
)
def test_system_names_of_engine_tables_are_their_parts(text, part):
    gpu, _, reason = hardware_of(text)
    assert (gpu.name if gpu is not None else None) == part
    assert bool(reason) == (part is None)


def test_a_count_of_dgx_systems_is_not_a_count_of_gpus():
    """ "2x DGX H100" is 16 GPUs, not 2: the count is left for n_gpus to give."""
    assert hardware_of("2x DGX H100")[1] is None and hardware_of("8x H100 GPUs")[1] == 8


HEADER = (
    "source,model,precision,hardware,n_gpus,parallelism,batch_or_concurrency,input_len,"
    "output_len,metric,value,unit,notes,licence"
)
SOURCE = (
    '"NVIDIA/TensorRT-LLM docs/source/developer-guide/perf-overview.md @03e27c7d5ff0c6e89f8328838c0a8e64f1b34f9d'
    ' (TensorRT-LLM 1.2; trtllm-bench throughput, PyTorch backend, max load)"'
)


def test_a_figure_written_the_tables_way_is_predicted_as_the_catalogs_spelling(tmp_path):
    """TensorRT-LLM 1.2's DeepSeek-R1 FP8 on 8 H200 as DEP8, 1,620 output tok/s per GPU at
    1024/1024, written once in the catalog's spelling and once as a reader copies it off the
    page and its model list: the same row, the same prediction."""
    tail = "TensorRT-LLM 1.2 (PyTorch backend),Apache-2.0"
    path = tmp_path / "rows.csv"
    path.write_text(
        "\n".join(
            [
                HEADER,
                f"{SOURCE},DeepSeek-R1,FP8,H200-SXM,8,DEP8,max load,1024,1024,"
                f"throughput_per_gpu,1620,output tok/s per GPU,{tail}",
                f"{SOURCE},deepseek-ai/DeepSeek-R1-0528,FP8,DGX H200,8,ADP8 EP8,max load,1K,1K,"
                f"Per GPU Output Throughput,1620,tps/gpu,{tail}",
            ]
        )
        + "\n"
    )
    table = compare_measured(path, preset("achievable")).table
    assert list(table["status"]) == ["ok", "ok"]
    assert list(table["model"]) == ["DeepSeek-R1", "DeepSeek-R1"]
    first, second = table["predicted"]
    assert first == second and 1000 < first < 3000


RTX_TABLES = Path(__file__).parent / "data" / "trtllm_perf_overview_rtx.csv"


def test_the_overviews_rtx_pro_tables_read_as_the_page_writes_them(tmp_path):
    """TensorRT-LLM 1.2's RTX PRO 6000 tables, copied with the page's model ids, card name and
    "DEP2,PP2" layouts: all 27 figures read, and one predicted near what it measured (Qwen3-30B-A3B
    NVFP4 on one card at 1024/1024, 9,755 output tok/s)."""
    rows = load_measured(str(RTX_TABLES))
    assert [r.status for r in rows] == ["ok"] * 27
    assert {r.arch.name for r in rows} == {"Llama 3.3 70B", "Qwen3-235B-A22B", "Qwen3-30B-A3B"}
    assert {r.gpu.name for r in rows} == {"RTX-PRO-6000-BSE"}
    shapes = {(r.layout.tensor, r.layout.pipeline, r.layout.attention_ranks) for r in rows}
    assert shapes == {(1, 1, 1), (1, 2, 1), (2, 2, 2), (8, 1, 8), (2, 1, 2)}
    lines = RTX_TABLES.read_text().splitlines()
    one = [line for line in lines[1:] if "Qwen3-30B" in line and ',1,"TP1,PP1",' in line]
    one = [line for line in one if ",1024,1024," in line]
    assert len(one) == 1
    path = tmp_path / "one.csv"
    path.write_text("\n".join([lines[0], *one]) + "\n")
    table = compare_measured(path, preset("achievable")).table
    assert list(table["measured"]) == [9755.0]
    assert table["predicted"].iloc[0] == pytest.approx(9755.0, rel=0.05)


AS_WRITTEN = Path(__file__).parent / "data" / "trtllm_perf_overview_as_written.csv"


def test_the_overviews_tables_read_as_the_page_writes_them():
    """TensorRT-LLM 1.2's overview tables copied cell for cell (its model headings, its column
    labels "B200 DEP4 (FP4)" and "H200 TP1 (FP8)", "1000/1000", "6,463"): all 123 figures
    read, as the figures of the files written in the catalog's spelling do, and the Hopper
    gpt-oss columns' "(FP8)" as the MXFP4 release they ran."""
    rows = load_measured(str(AS_WRITTEN))
    assert [r.status for r in rows] == ["ok"] * 123
    assert {r.arch.name for r in rows} == {
        *("DeepSeek-R1", "gpt-oss-120b", "gpt-oss-20b", "Llama 3.3 70B"),
        *("Llama 4 Maverick", "Qwen3-235B-A22B", "Qwen3-30B-A3B"),
    }
    assert {r.gpu.name for r in rows} == {"B200-HGX", "GB200-NVL72", "H200-SXM", "H100-SXM"}
    hopper_oss = [r for r in rows if r.arch.name.startswith("gpt-oss") and r.gpu.name[0] == "H"]
    assert len(hopper_oss) == 20
    assert {(r.bits, r.precision_as_released) for r in hopper_oss} == {((4.25, 16, 16.0), "FP8")}
    assert all(r.precision_as_released is None for r in rows if r not in hopper_oss)


@pytest.mark.parametrize(
    "cell, lengths",
    [
        ("1K/1K", (1024.0, 1024.0)),
        ("ISL 1024 / OSL 1024", (1024.0, 1024.0)),
        ("ISL=4400, OSL=1200", (4400.0, 1200.0)),
        ("8k1k", (8192.0, 1024.0)),
    ],
)
def test_both_lengths_in_the_input_cell(cell, lengths):
    got = lengths_of(cell, "")
    assert (got.input_mean, got.output_mean) == lengths


@pytest.mark.parametrize(
    "precision, bits, block",
    [
        ("FP8 block", (8, 16, 8), True),
        ("FP8 (block)", (8, 16, 8), True),
        ("FP8 [128,128] blocks", (8, 16, 8), True),
        ("FP8", (8, 16, 8), False),
        # INT4 weights with FP8 GEMMs: not read as FP8 weights, refused
        ("W4AFP8", None, False),
        ("W4A8 FP8", None, False),
        # a format named first is the cell's format ("INT4 (W4A8: ...)", Intel's MLPerf cells)
        ("INT4 (W4A8: GPTQ 4-bit weights)", (4, 16, 16), False),
        # INT4 weights, 16-bit activations: weight-only INT4
        ("W4A16", (4, 16, 16), False),
        ("W4A16g128", (4, 16, 16), False),
        ("W4A16?", None, False),  # only guessed
        # W4A8 before a 4-bit format: that format
        ("W4A8 MXFP4", (4, 16, 8), False),
    ],
)
def test_precision_cells_as_sources_write_them(precision, bits, block):
    assert engine_words.precision_of(precision) == bits
    assert engine_words.states_block_scaled(precision) is block


@pytest.mark.parametrize(
    "cells, speculates",
    [
        ({"parallelism": "DEP8 + MTP"}, True),
        ({"notes": "ctx1dep4-gen2dep4-mtp3"}, True),
        ({"notes": "MTP off"}, False),
        ({"notes": "no MTP"}, False),
        ({"notes": "without speculative decoding"}, False),
    ],
)
def test_speculation_said_on_or_off(cells, speculates):
    assert (engine_words.unmodelled_of(cells) is not None) is speculates


@pytest.mark.parametrize(
    "notes, engine, version",
    [
        ("nvcr.io/nvidia/tensorrt-llm/release:1.0.0rc6", "trtllm", "1.0.0rc6"),
        ("vllm/vllm-openai:v0.10.2", "vllm", "0.10.2"),
        ("lmsysorg/sglang:v0.5.2-cu126", "sglang", "0.5.2"),
        # a results folder's name: the engine joined to its version by "_"
        ("results/vllm_0.9.1/deepseek", "vllm", "0.9.1"),
        ("sglang_v0.5.2", "sglang", "0.5.2"),
        # an environment variable names no engine: the row's engine is the one it names
        ("VLLM_USE_V1=1 on TensorRT-LLM 1.2", "trtllm", "1.2"),
        ("pyvllm 0.9", None, None),
    ],
)
def test_an_engine_image_tag_is_its_version(notes, engine, version):
    found = engine_words.engine_of({"notes": notes})
    assert (found.name, found.version) == (engine, version)


@pytest.mark.parametrize(
    "parallelism, notes, gpus, decode",
    [
        ("Prefill: TP4 x2, Decode: DEP8", "", 16, 8),
        ("P: TP4 x2, D: DEP8", "", 16, 8),
        # TensorRT-LLM's configuration names: one context server of DEP4, two generation ones
        ("ctx1dep4-gen2dep4", "", 12, 8),
        # instance counts alone, or the word: disaggregated, its decode GPUs not said
        ("2P1D", "", 24, None),
        ("DEP8", "PD disagg", 8, None),
        # both parts by their full names without ":"
        ("prefill 2xTP4 / decode 1xDEP8", "", 16, 8),
        ("decode DEP8, prefill TP4 x2", "", 16, 8),
        ("prefill TP8 (EP8, attn-DP) / decode DEP8", "", 16, 8),
        ("Prefill: TP4 x2 / Decode: DEP8", "", 16, 8),
        ("prefill TP4 x2; decode: DEP8", "", 16, 8),
    ],
)
def test_disaggregated_rows_as_blog_posts_write_them(parallelism, notes, gpus, decode):
    row = {"parallelism": parallelism}
    split, decode_gpus, _ = layouts.disaggregation_of(row, notes, "tok/s", gpus, "rows.csv")
    assert split is True and decode_gpus == decode


@pytest.mark.parametrize(
    "cell", ["maximum load", "max throughput", "--request-rate inf", "trtllm-bench throughput"]
)
def test_a_run_at_maximum_load_is_offline(cell):
    row = {"batch_or_concurrency": cell, "source": "a blog post", "model": "DeepSeek-R1"}
    assert sem.scenario_of(row, mn.Metric("throughput")) == "offline"


@pytest.mark.parametrize(
    "text, gpus, expected",
    [
        # experts said not to be split
        ("TP8, no EP", 8, (8, 1, None, 1, 1)),
        ("TP8 (EP-MoE disabled)", 8, (8, 1, None, 1, 1)),
        ("--tp 8 --enable-ep-moe false", 8, (8, 1, None, 1, 1)),
        # a context length or a count beside a layout is no part of a disaggregated run
        ("TP8, ctx=8192", 8, (8, 1, None, 1, 1)),
        ("tp=8, p=2", 8, (8, 1, None, 1, 1)),
    ],
)
def test_ordinary_layout_cells_are_left_as_they_read(text, gpus, expected):
    lay = layouts.layout_of(text, gpus, "rows.csv, row 2")
    got = (lay.tensor, lay.pipeline, lay.expert, lay.attention_ranks, lay.replicas)
    assert got == expected
    split, _, _ = layouts.disaggregation_of({"parallelism": text}, "", "tok/s", gpus, "w")
    assert split is False


@pytest.mark.parametrize(
    "notes",
    [
        "not disagg",
        "aggregated baseline for the 2P1D comparison",
        "on AWS P4D24",
        "compared to ctx1dep4-gen1dep4",
    ],
)
def test_notes_that_only_mention_disaggregation_leave_a_row_aggregated(notes):
    row = {"parallelism": "DEP8"}
    assert layouts.disaggregation_of(row, notes, "tok/s", 8, "w") == (False, None, None)


@pytest.mark.parametrize(
    "cells",
    [
        {"notes": "MTP: 0.85 acceptance"},
        {"parallelism": "DEP8 + MTP", "notes": "off-peak run"},
        {"notes": "MTP offset"},
    ],
)
def test_speculation_is_not_read_as_off_by_other_words(cells):
    assert engine_words.unmodelled_of(cells) is not None


@pytest.mark.parametrize("cell", ["1,024", "32,768", "1000-2000"])
def test_a_thousands_separator_or_a_range_is_not_two_lengths(cell):
    assert isinstance(lengths_of(cell, ""), str)


@pytest.mark.parametrize(
    "unit", ["tok/s per GB200 NVL72", "per B200 system", "per H100 node", "per H200 (8 GPUs)"]
)
def test_a_gpu_named_before_a_system_word_is_not_per_gpu(unit):
    assert mn.basis_of_unit(unit) != "gpu"


def test_a_statistic_among_other_bracketed_words_is_kept():
    assert mn.metric_of("TPOT (ms, p99)").quantity == "tpot_p99"
    assert mn.row_metric("TPOT (ms, p99)", "")[1] == "ms, p99"


@pytest.mark.parametrize(
    "scenario, cells",
    [
        ("closed_loop", {"batch_or_concurrency": "64", "source": "max throughput vs latency"}),
        (None, {"batch_or_concurrency": "", "notes": "--request-rate inf --max-concurrency 64"}),
    ],
)
def test_a_stated_concurrency_outweighs_max_throughput_words(scenario, cells):
    row = {"model": "DeepSeek-R1", **cells}
    assert sem.scenario_of(row, mn.Metric("throughput"), cells.get("notes", "")) == scenario


def test_a_name_and_a_unit_that_disagree_leave_the_row_unresolved(tmp_path):
    rows = [
        f"{SOURCE},DeepSeek-R1,FP8,H200-SXM,8,DEP8,64,1024,1024,mean_ttft_ms,0.5,s,vLLM 0.10,CC",
        f"{SOURCE},DeepSeek-R1,FP8,H200-SXM,8,DEP8,64,1024,1024,throughput_per_gpu,50,"
        "tok/s/user,vLLM 0.10,CC",
    ]
    path = tmp_path / "rows.csv"
    path.write_text("\n".join([HEADER, *rows]) + "\n")
    status = [r.status for r in load_measured(str(path))]
    assert status[0] == "unresolved: unit 's' but metric 'mean_ttft_ms' says ms"
    assert status[1].startswith("unresolved: unit: 'tok/s/user' is per user but metric")


@pytest.mark.parametrize(
    "cell",
    [
        "concurrency 64",
        "--max-concurrency 64",
        "64 concurrent requests",
        "64 users",
        "C=64",
        "c: 64",
    ],
)
def test_a_concurrency_written_with_its_name(cell):
    row = {"batch_or_concurrency": cell, "source": "a blog post", "model": "DeepSeek-R1"}
    assert sem.scenario_of(row, mn.Metric("throughput")) == "closed_loop"
    assert sem.batch_of(cell, "closed_loop") == (64.0, None)


@pytest.mark.parametrize(
    "cell, clients",
    [
        ("64 per GPU", 512),
        ("64/GPU", 512),
        ("concurrency 16 users per GPU", 128),
        ("512 (64 per GPU)", 512),
        ("conc 512 (64/GPU)", 512),
        ("512", 512),
    ],
)
def test_a_concurrency_per_gpu_is_the_runs_clients_over_its_gpus(tmp_path, cell, clients):
    row = f"a blog post,DeepSeek-R1,FP4,B200,8,DEP8,{cell},1024,1024,throughput_per_gpu,5000,tok/s/gpu,,CC"
    path = tmp_path / "rows.csv"
    path.write_text(f"{HEADER}\n{row}\n")
    (read,) = load_measured(str(path))
    assert (read.status, read.scenario, read.concurrency) == ("ok", "closed_loop", clients)


@pytest.mark.parametrize(
    "metric, unit, status",
    [
        ("p99_ttft_ms", "", "ok"),  # vLLM's keys write their unit: a blank cell takes it
        ("mean_tpot_ms", "", "ok"),
        ("TPOT", "ms per GPU", "unresolved: unit: 'ms per GPU' is per GPU but metric 'TPOT'"),
        ("TTFT", "s/node", "unresolved: unit: 's/node' is per node but metric 'TTFT'"),
    ],
)
def test_a_latency_takes_the_unit_its_name_writes_and_is_never_per_gpu(
    tmp_path, metric, unit, status
):
    row = f"a blog post,Llama-3.3-70B-Instruct,FP8,H100,8,TP8,64,1024,1024,{metric},20,{unit},,CC"
    path = tmp_path / "rows.csv"
    path.write_text(f"{HEADER}\n{row}\n")
    (read,) = load_measured(str(path))
    assert read.status.startswith(status) and (status != "ok" or read.unit == "ms")


def test_a_column_heading_in_the_hardware_cell_says_where_its_parts_go():
    gpu, _, why = hardware_of("B200 DEP4 (FP4)")
    assert gpu is None and why.endswith(
        "it names a layout too ('DEP4'): give the GPU alone here, the layout in parallelism "
        "and 'FP4' in precision"
    )
    assert hardware_of("H200<br/>TP1")[2].endswith("the layout in parallelism")
    assert "layout" not in hardware_of("B999")[2]  # an unknown part alone: no such hint
    assert "precision" not in hardware_of("B200 TP8 (1k/1k)")[2]  # a bracket of no format


@pytest.mark.parametrize(
    "cell, notes, budget",
    [
        ("64 per GPU", "vLLM 0.10 --request-rate inf", None),  # as "512" beside these notes
        ("64 per GPU; max_num_tokens 2048", "vLLM 0.10", 2048.0),
    ],
)
def test_a_concurrency_per_gpu_reads_as_its_total_would(tmp_path, cell, notes, budget):
    row = f"a blog,Llama-3.1-8B-Instruct,BF16,H100,8,TP1 x8,{cell},1000,200,throughput,2e4,tok/s,{notes},CC"
    path = tmp_path / "rows.csv"
    path.write_text(f"{HEADER}\n{row}\n")
    (read,) = load_measured(str(path))
    assert (read.scenario, read.concurrency, read.token_budget) == ("closed_loop", 512.0, budget)


@pytest.mark.parametrize("notes", ["vLLM 0.10, chunked prefill on", "--enable-chunked-prefill"])
def test_an_input_rate_of_a_closed_loop_is_no_prefill_only_run(notes):
    row = {"batch_or_concurrency": "64", "source": "a blog", "model": "x", "notes": notes}
    assert sem.scenario_of(row, mn.Metric("input_throughput")) == "closed_loop"
    alone = {"batch_or_concurrency": "", "source": "a prefill-only benchmark", "model": "x"}
    assert sem.scenario_of(alone, mn.Metric("input_throughput")) == "prefill"


def test_a_total_and_a_per_gpu_concurrency_that_disagree_are_refused(tmp_path):
    row = "a blog post,DeepSeek-R1,FP4,B200,8,DEP8,512 (32 per GPU),1024,1024,throughput_per_gpu,5000,tok/s/gpu,,CC"
    path = tmp_path / "rows.csv"
    path.write_text(f"{HEADER}\n{row}\n")
    (read,) = load_measured(str(path))
    assert "32 per GPU on 8 GPUs is 256, not 512" in read.status
    # in an MLPerf scenario a number per GPU is the engine's batch cap, as before
    assert sem.batch_of("512 per GPU", "offline") == (None, 512.0)


@pytest.mark.parametrize(
    "cells",
    [
        # an off-word that starts the next phrase says nothing of the feature before it
        {"notes": "TRT-LLM 1.0, MTP no overlap scheduler"},
        {"parallelism": "DEP8 + MTP no EPLB"},
    ],
)
def test_a_word_starting_the_next_phrase_does_not_switch_speculation_off(cells):
    assert engine_words.unmodelled_of(cells) is not None


@pytest.mark.parametrize(
    "text, expected",
    [
        ("TP8 EP no EPLB", (8, 8, 1)),
        ("DP8 EP no EPLB", (8, 8, 8)),
        ("TP8 + EP no-overlap", (8, 8, 1)),
    ],
)
def test_experts_followed_by_other_words_stay_split(text, expected):
    lay = layouts.layout_of(text, 8, "rows.csv, row 2")
    assert (lay.tensor, lay.expert, lay.attention_ranks) == expected


@pytest.mark.parametrize(
    "parallelism",
    ["Prefill: 4 GPUs, Decode: 4 GPUs", "ctx: 4 GPUs; gen: 4 GPUs", "prefill=4, decode=4"],
)
def test_both_parts_named_without_degrees_ask_for_them(parallelism):
    with pytest.raises(SpecError, match="states no degrees"):
        layouts.disaggregation_of({"parallelism": parallelism}, "", "tok/s", 8, "rows.csv")


def test_a_disaggregated_run_whose_notes_go_on_is_still_disaggregated():
    row = {"parallelism": "TP4", "decode_gpus": "4"}
    notes = "Dynamo disaggregated no MTP"
    assert layouts.disaggregation_of(row, notes, "tok/s", 8, "rows.csv") == (True, 4, None)


@pytest.mark.parametrize(
    "unit, basis",
    [
        ("tok/s/H200 (FP8)", "gpu"),
        ("tok/s per H100 80GB", "gpu"),
        ("tok/s per MI300X accelerator", "gpu"),
        ("tok/s per NVIDIA H200 Tensor Core GPU", "gpu"),
        ("tok/s per H100 node", "node"),
    ],
)
def test_a_gpu_named_in_the_unit_with_words_after_it(unit, basis):
    assert mn.basis_of_unit(unit) == basis


@pytest.mark.parametrize(
    "name, quantity, per",
    [
        ("Throughput (per user)", "user_speed", None),
        ("Throughput (per chip)", "throughput", "gpu"),
        ("Throughput (median of 3 runs)", "throughput", None),
    ],
)
def test_bracketed_bases_and_notes(name, quantity, per):
    metric = mn.metric_of(name)
    assert (metric.quantity, metric.per) == (quantity, per)


def test_a_named_concurrency_is_no_cap_of_an_mlperf_scenario():
    assert sem.batch_of("concurrency 64", "server") == (None, None)
    assert sem.batch_of("64", "server") == (None, 64.0)


@pytest.mark.parametrize(
    "cell",
    [
        "1k-1k",
        "1024 in, 1024 out",
        # the pair under its heading's label, as a table's first column writes it
        "ISL/OSL 1024/1024",
        "Sequence Length (ISL/OSL) 1024/1024",
        "ISL/OSL: 1K/1K",
    ],
)
def test_more_ways_to_write_both_lengths(cell):
    got = lengths_of(cell, "")
    assert (got.input_mean, got.output_mean) == (1024.0, 1024.0)


def test_a_value_rounded_to_thousands(tmp_path):
    """The vLLM blog's "2.2k tok/s/H200": 2,200 output tokens/s per GPU."""
    row = f"{SOURCE},DeepSeek-R1,FP8,H200-SXM,8,DEP8,64,1024,1024,throughput,2.2k,tok/s/H200,vLLM 0.10,CC"
    path = tmp_path / "rows.csv"
    path.write_text("\n".join([HEADER, row]) + "\n")
    got = load_measured(str(path))[0]
    assert got.value == 2200.0 and got.per == "gpu"


@pytest.mark.parametrize(
    "value", ["~6430", "≈ 6430", "about 6430", "~6.43k", "approximately 6430", "approx.6430"]
)
def test_an_approximate_value_is_the_figure_it_approximates(tmp_path, value):
    row = f"{SOURCE},DeepSeek-R1,FP4,B200,4,DEP4,64,1024,1024,throughput,{value},tok/s/GPU,,CC"
    path = tmp_path / "rows.csv"
    path.write_text("\n".join([HEADER, row]) + "\n", encoding="utf-8")
    assert load_measured(str(path))[0].value == pytest.approx(6430.0)


@pytest.mark.parametrize(
    "parallelism",
    [
        "prefill/decode on TP8",
        "prefill TP4 / prefill TP4",
        "prefill TP8 cluster",
        # lengths or counts, not degrees
        "prefill 8192 / decode 1024",
        "prefill 4 GPUs, decode 4 GPUs",
    ],
)
def test_words_naming_one_part_or_none_leave_a_row_aggregated(parallelism):
    row = {"parallelism": parallelism}
    assert layouts.disaggregation_of(row, "", "tok/s", 8, "w") == (False, None, None)


def test_a_bare_c_without_its_sign_is_no_concurrency():
    assert sem.lead_number("c64") is None and sem.lead_number("C=64") == 64.0


@pytest.mark.parametrize(
    "argument, model",
    [("deepseek-ai/DeepSeek-V3", "DeepSeek-V3"), ("meta-llama/Llama-3.1-8B", "Llama 3.1 8B")],
)
def test_a_command_takes_a_repository_id_by_its_name(argument, model):
    assert ie.load_model(argument).name == model


@pytest.mark.parametrize(
    "argument, said",
    [("nvidia/DeepSeek-R1-FP4", "did you mean 'DeepSeek-R1'"), ("foo/bar", "import-hf foo/bar")],
)
def test_a_repository_id_of_another_checkpoint_is_refused_with_the_way_on(argument, said):
    with pytest.raises(SpecError) as caught:
        ie.load_model(argument)
    assert said in str(caught.value) and "a repository id, read by its name" in str(caught.value)


def test_a_bare_label_of_wider_weights_on_gpt_oss_is_its_only_release(tmp_path):
    """The overview heads its Hopper gpt-oss columns "(FP8)" for runs of openai/gpt-oss-120b's
    MXFP4 experts (its GPT-OSS options: the TRITON MoE backend, a KV cache "auto" on Hopper):
    copied so, the figure is the release's, BF16 KV cache and all, and the engine label says
    how the cell was read; the same cell in the catalog's spelling predicts the same figure.
    A cell that states its weights ("weights fp8", a self-quantized checkpoint) is another
    checkpoint and keeps its 8 bits, as does "FP8" on a model with more than one release."""
    tail = "TensorRT-LLM 1.2 (PyTorch backend),Apache-2.0"
    long_label = "FP8 " + "x" * 3000
    cells = ["MXFP4", "FP8", "BF16", "FP8 (weights fp8 per the results table)", long_label]
    lines = [
        f"{SOURCE},gpt-oss-120b,{cell},H200,1,TP1,max load,1024,1024,"
        f"throughput_per_gpu,6798,output tok/s per GPU,{tail}"
        for cell in cells
    ]
    lines.append(
        f"{SOURCE},DeepSeek-R1,FP8,H200,8,DEP8,max load,1024,1024,"
        f"throughput_per_gpu,1620,output tok/s per GPU,{tail}"
    )
    path = tmp_path / "rows.csv"
    path.write_text("\n".join([HEADER, *lines]) + "\n")
    rows = load_measured(str(path))
    assert [r.bits for r in rows] == [(4.25, 16, 16.0)] * 3 + [(8, 16, 8), (4.25, 16, 16.0)] + [
        (8, 16, 8)
    ]
    assert [r.precision_as_released for r in rows] == [None, "FP8", "BF16", None, long_label, None]
    table = compare_measured(path, preset("achievable")).table
    released, label, _, requantised, long_one, _ = table.itertuples()
    assert label.predicted == released.predicted == long_one.predicted
    assert "precision 'FP8' read as gpt-oss-120b's only released weights" in label.engine
    assert "read as" not in released.engine and "read as" not in requantised.engine
    assert requantised.predicted != released.predicted
    assert len(long_one.engine) < len(label.engine) + 100  # the cell cut short in the label


@pytest.mark.parametrize(
    "cell", ["FP8 (KV cache quantized)", "FP8 activations (weights MXFP4)", "FP8 (TRT-LLM)"]
)
def test_words_of_other_things_than_the_weights_leave_a_bare_label(tmp_path, cell):
    line = f"{SOURCE},gpt-oss-120b,{cell},H200,1,TP1,max load,1024,1024,throughput_per_gpu,6798,"
    path = tmp_path / "rows.csv"
    path.write_text("\n".join([HEADER, line + "output tok/s per GPU,TensorRT-LLM 1.2,CC"]) + "\n")
    (row,) = load_measured(str(path))
    assert row.bits == (4.25, 16, 16.0) and row.precision_as_released == cell


def test_a_precision_given_on_the_command_line_is_read_as_given(tmp_path):
    """``compare-measured --precision FP8`` fills the rows that state none: the user's own
    statement of the weights, not a label, so gpt-oss's rows run 8-bit weights."""
    line = f"{SOURCE},gpt-oss-120b,,H200,1,TP1,max load,1024,1024,throughput_per_gpu,6798,"
    path = tmp_path / "rows.csv"
    path.write_text("\n".join([HEADER, line + "output tok/s per GPU,TensorRT-LLM 1.2,CC"]) + "\n")
    (row,) = load_measured(str(path), stated={"precision": "FP8"})
    assert row.bits == (8, 16, 8) and row.precision_as_released is None


def test_released_format_only_is_a_boolean_of_the_model_file(tmp_path):
    from inference_econ.specs.architecture import load_model

    text = (Path(__file__).parent.parent / "models" / "gpt-oss-20b.yaml").read_text()
    path = tmp_path / "model.yaml"
    path.write_text(text.replace("released_format_only: true", "released_format_only: 2"))
    with pytest.raises(SpecError) as caught:
        load_model(path)
    assert "released_format_only" in str(caught.value)


@pytest.mark.parametrize(
    "parallelism, gpus",
    [("DEP8", 8), ("TP1", 1), ("TP4 x2", 8), ("TP8 (EP8, attn-DP)", 8), ("DEP2,PP2", 4)],
)
def test_a_row_without_its_gpu_count_spans_the_layout_it_states(tmp_path, parallelism, gpus):
    """A table's column "H200 DEP8 (FP8)" copied without a GPU count: the one instance its
    layout spans."""
    line = f'{SOURCE},DeepSeek-R1,FP8,H200,,"{parallelism}",max load,1024,1024,'
    path = tmp_path / "rows.csv"
    path.write_text("\n".join([HEADER, line + "throughput_per_gpu,1620,tok/s/GPU,,CC"]) + "\n")
    (row,) = load_measured(str(path))
    assert row.gpus == gpus and row.status == "ok"


@pytest.mark.parametrize(
    "parallelism",
    [
        *("", "max load", "prefill: TP4 x2; decode: TP8", "2P1D", "TP8 DP2", "DP8 TP8"),
        # nodes or GPUs counted in words: a count of their own, not replicas
        *("TP16 (2 nodes x 8)", "DEP16 (2 nodes x 8 GPUs)"),
    ],
)
def test_a_row_whose_cell_spans_no_one_instance_still_asks_for_its_gpus(tmp_path, parallelism):
    line = f'{SOURCE},DeepSeek-R1,FP8,H200,,"{parallelism}",max load,1024,1024,'
    path = tmp_path / "rows.csv"
    path.write_text("\n".join([HEADER, line + "throughput_per_gpu,1620,tok/s/GPU,,CC"]) + "\n")
    (row,) = load_measured(str(path))
    assert row.status.startswith("unresolved: n_gpus '' is not stated")


@pytest.mark.parametrize(
    "name",
    [
        "Per User Output Throughput",
        "Per User Output Throughput (tokens/sec/user)",
        "Per User Output Throughput [w/ ctx] (tps/user)",
        "per_user_output_throughput",
    ],
)
def test_trtllm_benchs_per_user_throughput_with_its_ttft_is_not_a_decode_speed(name):
    """trtllm-bench's per-user output throughput counts each request's whole latency (2.06
    tok/s beside 1/TPOT's 5.47 in the performance overview's example): refused with what it is,
    not read as 1/TPOT; its "Per User Output Speed" is."""
    assert mn.metric_of(name) is None
    assert "TTFT included" in mn.why_not_read(name)
    assert mn.metric_of("Per User Output Speed (tps/user)").quantity == "user_speed"
    assert "not one the toolkit reads" in mn.why_not_read("furlongs")


@pytest.mark.parametrize(
    "name",
    [
        "Output throughput (max)",
        "Throughput (peak)",
        "TTFT (max)",
        "TTFT (min, ms)",
        "TPOT [maximum]",
    ],
)
def test_a_peak_or_an_extreme_in_brackets_is_not_read_as_the_mean(name):
    """A bracketed extreme is part of the name (no quantity the toolkit predicts), not a note
    to drop: "Throughput (peak)" had been read as the mean rate, "TTFT (max)" as the mean."""
    assert mn.metric_of(name) is None


@pytest.mark.parametrize(
    "name, quantity", [("Throughput (max load)", "throughput"), ("TTFT (p99)", "ttft_p99")]
)
def test_a_note_about_the_run_in_brackets_is_still_a_note(name, quantity):
    assert mn.metric_of(name).quantity == quantity


@pytest.mark.parametrize(
    "name, unit, quantity",
    [
        ("Throughput", "req/s", "request_throughput"),
        ("Throughput", "QPS", "request_throughput"),
        ("Throughput (mean)", "req/s", "request_throughput"),
        ("Throughput", "samples/s", "request_throughput"),  # MLPerf's: a sample is a query
        ("Per GPU Throughput", "req/s", "request_throughput"),
        ("Throughput", "tok/s (input+output)", "total_throughput"),
        ("Throughput", "in+out tok/s per GPU", "total_throughput"),
        ("Throughput", "tok/s", "throughput"),
        ("Total Token throughput", "tok/s", "total_throughput"),
    ],
)
def test_a_bare_throughput_counts_what_its_unit_counts(name, unit, quantity):
    """A bare "Throughput" in req/s had been read as output tokens a second (1,620 requests
    a second as 1,620 tokens); in an input+output unit, as output tokens alone."""
    metric, _ = mn.row_metric(name, unit)
    assert metric.quantity == quantity


@pytest.mark.parametrize(
    "name, unit, said",
    [
        ("Output token throughput", "req/s", "counts requests but"),
        ("Request throughput", "tok/s", "counts tokens but"),
        ("Output token throughput", "tok/s (input+output)", "counts input and output tokens"),
    ],
)
def test_a_named_rate_in_a_unit_of_another_count_is_refused(tmp_path, name, unit, said):
    line = f"{SOURCE},DeepSeek-R1,FP8,H200,8,DEP8,64,1024,1024,{name},1620,{unit},,CC"
    path = tmp_path / "rows.csv"
    path.write_text("\n".join([HEADER, line]) + "\n")
    (row,) = load_measured(str(path))
    assert row.status.startswith("unresolved: unit") and said in row.status


@pytest.mark.parametrize("cell", ["8 GPUs", "16 (2 nodes)", "2x8", "eight"])
def test_a_gpu_count_that_is_no_number_is_not_replaced_by_the_layout(tmp_path, cell):
    line = f"{SOURCE},DeepSeek-R1,FP8,H200,{cell},TP4,max load,1024,1024,"
    path = tmp_path / "rows.csv"
    path.write_text("\n".join([HEADER, line + "throughput_per_gpu,1620,tok/s/GPU,,CC"]) + "\n")
    (row,) = load_measured(str(path))
    assert row.status == f"unresolved: n_gpus {cell!r} is not a number: give --gpus N"


@pytest.mark.parametrize(
    "unit, quantity",
    [
        # "t/s" is tokens a second, beside a count of requests
        ("t/s (64 reqs)", "throughput"),
        ("T/s @ 64 req", "throughput"),
        # an input+output length beside the unit is no statement of what it counts
        ("output tok/s (in+out=2048)", "throughput"),
        ("requests", "throughput"),
    ],
)
def test_a_unit_with_other_words_keeps_what_it_counts(unit, quantity):
    assert mn.row_metric("Throughput", unit)[0].quantity == quantity


@pytest.mark.parametrize(
    "name",
    [
        "Throughput (peak, tok/s)",
        "Throughput (tok/s, peak)",
        "Throughput (Max.)",
        "Throughput (max, per GPU)",
        "output_throughput_per_user_tok_s",
    ],
)
def test_more_extremes_and_trtllm_benchs_json_key_are_refused(name):
    assert mn.row_metric(name, "")[0] is None
    reason = mn.why_not_read(name)
    assert "extreme" in reason or "TTFT included" in reason


def test_a_note_about_a_peak_run_stays_a_note():
    assert mn.metric_of("Throughput (peak batch 256)").quantity == "throughput"
