"""Benchmarks whose prompts repeat: a synthetic dataset sent again and again (aiperf's 100
entries unless told), which an engine's prefix cache serves without prefilling them."""

from __future__ import annotations

import dataclasses
import gzip
import io
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from inference_econ.errors import SpecError
from inference_econ.load.arrivals import Traffic
from inference_econ.load.engine import EngineConfig, build_instance
from inference_econ.load.lengths import parse_lengths
from inference_econ.load.simulate import simulate
from inference_econ.measured.comparison import compare
from inference_econ.measured.reading import load_measured
from inference_econ.serving.setting import make_setting

DATA = Path(__file__).parent / "data"
RESULTS = DATA / "benchmark_results"


def _pool(requests: int = 300, pool: int = 100, **kw) -> Traffic:
    return Traffic(
        None,
        parse_lengths("lognormal:2000:0.3"),
        parse_lengths("100"),
        requests=requests,
        clients=64,
        prompt_pool=pool,
        **kw,
    )


def test_a_pool_sends_each_prompt_again_in_shuffled_rounds():
    """300 requests from 100 prompts: every prompt three times, once a round, with its own
    drawn length each time; each is one cacheable segment keyed by its entry."""
    a = _pool().stream()
    keys = [seg[0][0] for seg in a.sharing.segments]
    assert len(a) == 300 and len(set(keys)) == 100
    assert all(keys.count(k) == 3 for k in set(keys))
    assert len(set(keys[:100])) == 100  # a round sends every prompt once
    by_key = {}
    for k, n, seg in zip(keys, a.prompt_tokens.tolist(), a.sharing.segments):
        assert seg[0][1] == n
        assert by_key.setdefault(k, n) == n  # a repeat is the same prompt
    assert len(set(by_key.values())) > 50  # the lengths are drawn per prompt
    assert "drawn from 100 distinct ones" in _pool().describe()
    # a pool larger than the run draws only the prompts it sends, each once
    huge = _pool(pool=10**9).stream()
    assert len({seg[0][0] for seg in huge.sharing.segments}) == 300


@pytest.mark.parametrize(
    "extra, words",
    [
        (dict(pool=0.5), "is 0.5"),
        (dict(pool=-3), "is -3"),
        (dict(shared_prefix_tokens=500), "shared prefixes and sessions"),
        (dict(session_turns=3), "shared prefixes and sessions"),
    ],
)
def test_a_pool_that_cannot_be_sent_is_refused(extra, words):
    with pytest.raises(SpecError, match=f"prompt_pool.*{words}"):
        _pool(**extra)


def test_repeats_are_served_by_the_prefix_cache():
    """Llama 3.1 8B on one H200, 64 clients, 2,000-token prompts: with 100 distinct prompts
    the first round prefills them and every later one is served from the cache but its last
    block (whole 16-token blocks, never the last token); the first tokens come sooner."""
    setting = make_setting("Llama 3.1 8B", "H200", assumptions="achievable")
    inst = build_instance(setting, 1, EngineConfig(), 4000.0)
    pooled = simulate(inst, _pool(requests=400).stream(), clients=64)
    fresh = simulate(inst, _pool(requests=400, pool=10**6).stream(), clients=64)
    cached = np.nan_to_num(pooled.cached_tokens)
    prompts = pooled.arrivals.prompt_tokens
    hit = cached > 0
    assert hit.sum() == 300  # every request after the first round
    expected = np.floor((prompts[hit] - 1) / 16) * 16
    assert np.array_equal(cached[hit], expected)
    assert np.nansum(fresh.cached_tokens) == 0
    assert np.nanmean(pooled.first_token_s - pooled.arrivals.arrival_s) < np.nanmean(
        fresh.first_token_s - fresh.arrivals.arrival_s
    )


def _llama_8b_run(tmp_path, pool: str):
    """AIConfigurator's measured Llama 3.1 8B FP8 run on one H200 under vLLM 0.12.0, 64
    clients of 2,000-token prompts and 100-token outputs: mean TPOT 9.74 ms
    (tests/data/aic_silicon_runs.csv.gz), with a ``distinct_prompts`` column."""
    with gzip.open(DATA / "aic_silicon_runs.csv.gz", "rt") as f:
        runs = pd.read_csv(io.StringIO(f.read()))
    row = runs[runs["source"].str.contains("instruct_fp8_h200_sxm_vllm_agg_2000x100_c64_tp1")]
    row = row[row["metric"] == "mean_TPOT"].assign(distinct_prompts=pool)
    assert len(row) == 1 and float(row["value"].iloc[0]) == 9.74
    path = tmp_path / f"run{pool or 0}.csv"
    row.to_csv(path, index=False)
    return compare(path, "refined").table


def test_the_bound_of_a_run_whose_prompts_repeat_prefills_only_what_the_cache_misses(tmp_path):
    """The refined bound of the run above is 14.4 ms a token when every prompt is its own,
    slower than measured (the run beats it); with the prompts sent again it prefills only
    each prompt's last block, 16 tokens, and is 3.90 ms: a bound again."""
    fresh = _llama_8b_run(tmp_path, "").iloc[0]
    pooled = _llama_8b_run(tmp_path, "100").iloc[0]
    assert fresh["predicted"] == pytest.approx(14.385, rel=1e-3) and fresh["beats_bound"]
    assert pooled["predicted"] == pytest.approx(3.897, rel=1e-3)
    assert not pooled["beats_bound"]


def test_a_distinct_prompts_cell_that_is_not_a_whole_count_leaves_its_row_unread(tmp_path):
    """The row says why; the file's other rows go on."""
    path = tmp_path / "bad.csv"
    head = "model,hardware,n_gpus,precision,metric,value,unit,scenario,input_len,output_len,"
    path.write_text(
        head + "batch_or_concurrency,distinct_prompts\n"
        "Llama 3.1 8B,H200,1,FP8,mean_TPOT,9.7,ms,closed_loop,2000,100,64,2.5\n"
        "Llama 3.1 8B,H200,1,FP8,mean_TPOT,9.7,ms,closed_loop,2000,100,64,100\n"
    )
    bad, good = load_measured(path)
    assert bad.status == (
        "unresolved: distinct_prompts: is '2.5' (expected a whole number >= 1 and <= 1e+09)"
    )
    assert good.ok and good.lengths.distinct_prompts == 100


def test_an_aiperf_run_of_synthetic_prompts_says_how_many_it_sent_again(tmp_path):
    """aiperf 0.13's synthetic dataset: its ``entries`` (60 in the file), 100 where the run
    left it out (aiperf's default), and a count that is not whole leaves the rows
    unresolved with the field named."""
    folder = RESULTS / "aiperf-concurrency"
    rows = load_measured(folder / "profile_export_aiperf.json")
    assert {r.lengths.distinct_prompts for r in rows if r.ok} == {60}
    assert all("60 synthetic ones, each sent again" in r.notes for r in rows)
    data = json.loads((folder / "profile_export_aiperf.json").read_text())
    for entries, expected in ((None, 100), (2.5, "entries is 2.5 prompts")):
        run = tmp_path / str(entries) / "aiperf"
        run.mkdir(parents=True)
        shutil.copy(RESULTS / "plan.json", run.parent / "plan.json")
        changed = json.loads(json.dumps(data))
        if entries is None:
            del changed["input_config"]["datasets"][0]["entries"]
        else:
            changed["input_config"]["datasets"][0]["entries"] = entries
        (run / "profile_export_aiperf.json").write_text(json.dumps(changed))
        read = load_measured(run / "profile_export_aiperf.json")
        if isinstance(expected, int):
            assert {r.lengths.distinct_prompts for r in read} == {expected}
        else:
            assert all(expected in r.status for r in read)
    assert math.isfinite(rows[0].value)


def test_a_steady_run_prefills_each_prompt_whole_the_first_time_it_is_sent():
    """aiperf's 60 synthetic prompts over its 60 requests: each is sent once, so an engine's
    steady state prefills every prompt whole (199.95 tokens), while the bound takes the cache
    warm (a warm-up leaves it so) and prefills only the last of each prompt's 16-token blocks
    (199.95 - 12 x 16 = 7.95 tokens)."""
    from types import SimpleNamespace

    from inference_econ.measured.closed_forms import prefilled

    row = load_measured(RESULTS / "aiperf-concurrency" / "profile_export_aiperf.json")[0]
    assert (row.lengths.distinct_prompts, row.lengths.issued) == (60, 60)
    caching = SimpleNamespace(prefix_caching=True)
    engine = prefilled(row, SimpleNamespace(config=caching, profile="sglang"))
    ideal = prefilled(row, SimpleNamespace(config=caching, profile=None))
    assert engine.input_mean == pytest.approx(199.95)
    assert engine.prefill_context == pytest.approx(row.lengths.prefill_context)
    assert ideal.input_mean == pytest.approx(7.95) and ideal.prefill_context > 190.0
    twice = dataclasses.replace(row, lengths=dataclasses.replace(row.lengths, issued=120))
    half = prefilled(twice, SimpleNamespace(config=caching, profile="sglang"))
    assert half.input_mean == pytest.approx((199.95 + 7.95) / 2)
