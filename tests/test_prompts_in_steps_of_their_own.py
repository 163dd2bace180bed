"""Prompts in steps of their own, chunked (``chunked_separate``: SGLang's scheduler runs a
waiting prompt's prefill batch before any decoding step, up to its chunk size, and mixes the
decoding requests in only with ``--enable-mixed-chunk``), against the other prompt policies,
by hand and against AIConfigurator's measured SGLang runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from inference_econ.load.arrivals import Arrivals
from inference_econ.load.engine import EngineConfig, build_instance
from inference_econ.load.simulate import simulate
from inference_econ.measured.comparison import compare
from inference_econ.serving.setting import make_setting
from inference_econ.specs.engine import load_engine

DATA = Path(__file__).parent / "data"


def _instance(prefill: str):
    setting = make_setting("Llama 3.1 8B", "H100-SXM", weight_bits=8, kv_cache_bits=8)
    return build_instance(setting, 1, EngineConfig(64, 2560, prefill=prefill))


def _wave(prefill: str):
    """16 prompts of 1,024 tokens queued at once, 2 output tokens each, 2,560 tokens a step."""
    return simulate(_instance(prefill), Arrivals(np.zeros(16), np.full(16, 1024), np.full(16, 2)))


def test_chunks_fill_steps_of_their_own_and_decoding_waits():
    """16 x 1,024 prompt tokens in steps of 2,560: request k's prompt ends with token 1,024 k,
    in step ceil(1,024 k / 2,560), so the first tokens come at the ends of 7 steps (whole
    prompts, 2 a step: 8); decoding waits for the last prompt, so every request's second token
    comes in the one decoding step after it. Chunks beside the decoding requests let the first
    requests finish while later prompts are still prefilled. The first step holds prompts 1
    and 2 whole and 512 tokens of the third, and nothing else: the first two first tokens come
    at the end of that step of prompt tokens alone."""
    expected_steps = len({int(np.ceil(1024 * k / 2560)) for k in range(1, 17)})
    assert expected_steps == 7
    first = _wave("chunked_separate")
    assert len(np.unique(first.first_token_s)) == 7
    inst = _instance("chunked_separate")
    layers = float(sum(g.layers for g in inst.work.groups))
    attended = 2 * 1024 * (layers * 1023 / 2) + 512 * (layers * 511 / 2)
    step = inst.table.time_s(2560, 0.0, attended, 3, 1024)
    assert np.sort(first.first_token_s)[:2] == pytest.approx([step, step], rel=1e-12)
    assert len(np.unique(first.finish_s)) == 1
    assert first.finish_s.min() > first.first_token_s.max()
    assert len(np.unique(_wave("separate").first_token_s)) == 8
    mixed = _wave("chunked")
    assert mixed.finish_s.min() < mixed.first_token_s.max()


def test_sglang_runs_its_prompts_first():
    """SGLang's profile schedules prompts as its scheduler does (``Scheduler.
    get_next_batch_to_run``: "Run prefill first if possible"; ``enable_mixed_chunk`` False)."""
    assert load_engine("sglang").prefill == "chunked_separate"


def test_sglang_closed_loop_runs_in_waves_as_measured(tmp_path):
    """AIConfigurator's SGLang 0.5.1.post1 runs of Qwen3-32B (BF16) on 2 H100 at 16 clients,
    1,024-token prompts (github.com/ai-dynamo/aiconfigurator @095f58a, silicon_sample.csv, row
    ids ..._1024x128_c16_tp2_epnone_1 and the 256- and 512-token outputs): 806-844 ms mean
    TTFT whatever the output length, about the prefill of all 16 prompts, and 15.8-16.5 ms mean
    TPOT, a decoding step alone. The 16 clients' requests start together, are prefilled
    together while decoding waits, and finish together. With the prompts mixed into the
    decoding steps (``chunked``) the model gives 156 ms TTFT and 21.7-26.1 ms TPOT."""
    runs = pd.read_csv(DATA / "aic_silicon_runs.csv.gz")
    rows = runs[
        runs.source.str.contains("qwen3_32b_h100_sxm_sglang_agg_1024x")
        & runs.source.str.contains("_c16_tp2_")
    ]
    assert len(rows) == 6
    path = tmp_path / "sglang_qwen3_32b.csv"
    rows.to_csv(path, index=False)
    table = compare(path, assumptions="achievable").table
    assert (table["status"] == "ok").all()
    ratio = table["predicted"] / table["measured"]
    ttft = ratio[table["metric"] == "mean_TTFT"]
    tpot = ratio[table["metric"] == "mean_TPOT"]
    assert ttft.between(0.6, 1.4).all(), table
    assert tpot.between(1.0, 1.5).all(), table
