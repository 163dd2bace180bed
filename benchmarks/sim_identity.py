"""Whether this tree's load simulator gives the same records, bit for bit, as a baseline's
(a faster simulator must not change a single number).

    python benchmarks/sim_identity.py [--baseline main]

Each tree (the baseline exported with ``git archive`` to a temporary folder; this working tree
as it is, uncommitted changes included) runs ``simulate`` (and ``simulate_group``) on the same
cases in a new process: chunked, whole and separate prefill, recompute and no-evict admission,
a small KV cache that preempts, runs stopped at latency limits, closed-loop clients, prefilled
requests (a disaggregated decode pool), speculation with draft heads and with a draft model,
sliding-window models (gpt-oss-120b with contexts about its window, attention DP and shared
prefixes; Gemma 3 27B with a small cache and with EAGLE heads, whose fractional steps take
the prefix sums), SGLang's attention ranks with prompts first (plain and windowed, a small
cache, closed-loop clients), a pipeline with bubbles (refined preset), engine profiles
(achievable: TensorRT-LLM and vLLM), a prefix cache with shared prefixes and with sessions, and
routers over a group of instances. Every array of every ``RunRecord`` is compared with
``np.array_equal`` (NaN equal to NaN) and every other field with ``==``. It prints each
case's CPU seconds in each tree (the simulations only, after the instances are built) and exits
1 if any record differs. It is a check of the code, not a test: the suite does not run it.

Each tree runs with ``PYTHONPATH`` set to it: ``python benchmarks/<script>.py`` alone imports
the installed package (the script's folder, not the working directory, leads ``sys.path``),
so a benchmark of a worktree's code needs ``PYTHONPATH=.`` too.
"""

from __future__ import annotations

import argparse
import dataclasses
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_cli import extract

ROOT = Path(__file__).resolve().parents[1]


def load_names(module: str, *names: str) -> tuple:
    """``names`` of the load engine's ``module``, where the tree keeps it: ``inference_econ.load``
    (``serving.load`` in trees older than the package's present layout), so that a baseline of
    either layout can be compared."""
    import importlib

    try:
        mod = importlib.import_module(f"inference_econ.load.{module}")
    except ModuleNotFoundError:
        mod = importlib.import_module(f"inference_econ.serving.load.{module}")
    return tuple(getattr(mod, name) for name in names)


def cases():
    """(name, thunk) of each case; each thunk builds what it needs and returns a RunRecord."""
    from inference_econ.model.mixed_step import EngineLayout
    from inference_econ.serving.setting import make_setting

    Arrivals, make_traffic = load_names("arrivals", "Arrivals", "make_traffic")
    EngineConfig, build_instance = load_names("engine", "EngineConfig", "build_instance")
    (Router,) = load_names("routing", "Router")
    simulate, simulate_group = load_names("simulate", "simulate", "simulate_group")

    ideal = make_setting("Llama 3 8B", "H100")
    ach = make_setting("Llama 3 8B", "H100", assumptions="achievable")
    vllm = make_setting("Llama 3 8B", "H100", assumptions="achievable", engine="vllm")
    lengths = ("lognormal:1000:0.8:4000", "lognormal:250:0.6:1000")
    busy = make_traffic(30, *lengths, requests=2000, seed=3).stream()
    heavy = make_traffic(60, *lengths, requests=2000, seed=5).stream()
    light = make_traffic(10, *lengths, requests=2000, seed=4).stream()
    out: list = []

    def add(name, setting, arrivals, config=None, gpus=1, layout=None, cap=None, **kw):
        def run():
            inst = build_instance(setting, gpus, config or EngineConfig(), layout=layout)
            if cap is not None:  # a small KV cache: admission waits, requests are preempted
                inst = dataclasses.replace(inst, kv_capacity=cap * inst.kv_capacity)
            return inst, lambda: simulate(inst, arrivals, **kw)

        out.append((name, run))

    for prefill in ("chunked", "whole", "separate"):
        for admission in ("recompute", "no_evict"):
            cfg = EngineConfig(admission=admission, prefill=prefill)
            add(f"ideal {prefill} {admission}", ideal, busy, cfg)
            add(f"ideal {prefill} {admission}, small cache", ideal, heavy, cfg, cap=0.04)
        add(f"achievable {prefill}", ach, busy, EngineConfig(prefill=prefill))
    add("achievable vllm", vllm, heavy)
    add("ideal batch limit 16", ideal, busy, EngineConfig(max_batch_requests=16))
    add("ideal budget 512", ideal, heavy, EngineConfig(step_token_budget=512))
    for limits in ({"ttft": 0.5, "tpot": 0.03}, {"ttft": 2.0, "e2e": 30.0}, {"tpot": 0.02}):
        for arrivals, load in ((light, "10 req/s"), (busy, "30 req/s")):
            add(f"achievable stop {limits}, {load}", ach, arrivals, stop=limits)
        add(f"achievable stop {limits}, small cache", ach, busy, cap=0.05, stop=limits)
    add("ideal 16 clients", ideal, busy, clients=16)
    add("ideal 64 clients, small cache", ideal, busy, cap=0.05, clients=64)
    add("ideal prefilled (decode pool)", ideal, heavy, prefilled=True)
    mixed = np.arange(len(heavy)) % 3 == 0
    add("ideal prefilled one in three", ideal, heavy, prefilled=mixed)
    eagle = make_setting("Llama 3 8B", "H100", draft_heads="eagle", acceptance=0.7)
    add("eagle heads", eagle, busy)
    add("eagle heads, whole, small cache", eagle, heavy, EngineConfig(prefill="whole"), cap=0.05)
    add("eagle heads separate", eagle, busy, EngineConfig(prefill="separate"))
    add(
        "eagle heads up to batch 8, by_batch",
        eagle,
        heavy,
        EngineConfig(speculation_max_batch=8, speculation_schedule="by_batch"),
    )
    draft = make_setting("Llama 3 70B", "H100", draft="Llama 3 8B", max_draft_tokens=4)
    add("70B with an 8B draft", draft, make_traffic(4, *lengths, requests=300).stream(), gpus=4)
    oss = make_setting("gpt-oss-120b", "H100", assumptions="refined")
    add("gpt-oss-120b windowed", oss, make_traffic(8, "2000", "200", requests=400).stream(), gpus=2)
    add(
        "gpt-oss-120b windowed, small cache, whole",
        oss,
        make_traffic(12, *lengths, requests=400, seed=1).stream(),
        EngineConfig(prefill="whole"),
        gpus=2,
        cap=0.03,
    )
    # windowed models priced from whole-number contexts, and from fractional ones (speculation)
    oss_ach = make_setting("gpt-oss-120b", "H100", assumptions="achievable")
    short = ("lognormal:120:0.9:600", "lognormal:300:0.7:1500")  # contexts about the window
    add(
        "gpt-oss-120b achievable, contexts about the window",
        oss_ach,
        make_traffic(40, *short, requests=1500, seed=2).stream(),
        gpus=2,
    )
    add(
        "gpt-oss-120b achievable, attention DP over 4",
        oss_ach,
        make_traffic(60, *lengths, requests=1500, seed=6).stream(),
        gpus=4,
        layout=EngineLayout(4, 1, 4.0, False),
    )
    add(
        "gpt-oss-120b, shared prefixes",
        oss,
        make_traffic(6, "200", "150", requests=400, seed=0, shared_prefix_tokens=800).stream(),
        gpus=2,
    )
    # SGLang's attention ranks, prompts first: the ranks that prefill wait (the batch moved
    # from either side), with a plain and a windowed model, a small cache and closed-loop clients
    sgl = {m: make_setting(m, "H100", assumptions="achievable", engine="sglang") for m in
           ("Qwen3-30B-A3B", "gpt-oss-120b")}  # fmt: skip
    seven = make_traffic(80, *lengths, requests=1500, seed=7).stream()
    for name, model, arrivals, kw in (
        ("Qwen3-30B-A3B", "Qwen3-30B-A3B", seven, {}),
        ("gpt-oss-120b", "gpt-oss-120b", seven, {}),
        ("Qwen3-30B-A3B, small cache", "Qwen3-30B-A3B", heavy, {"cap": 0.05}),
        ("Qwen3-30B-A3B, 64 clients", "Qwen3-30B-A3B", busy, {"clients": 64}),
    ):
        add(
            f"{name} sglang, attention DP over 4, prompts first",
            sgl[model],
            arrivals,
            EngineConfig(prefill="chunked_separate"),
            gpus=4,
            layout=EngineLayout(4, 1, 4.0, False),
            **kw,
        )
    gemma = make_setting("Gemma 3 27B", "H100", assumptions="achievable")
    add(
        "Gemma 3 27B windowed, small cache",
        gemma,
        make_traffic(20, *short, requests=1500, seed=3).stream(),
        gpus=2,
        cap=0.05,
    )
    gemma_eagle = make_setting(
        "Gemma 3 27B", "H100", assumptions="refined", draft_heads="eagle", acceptance=0.7
    )
    add(
        "Gemma 3 27B windowed, eagle heads",
        gemma_eagle,
        make_traffic(10, *short, requests=800, seed=4).stream(),
        gpus=2,
    )
    big = make_setting("Llama 3 70B", "H100", assumptions="refined")
    add(
        "70B pipeline bubbles",
        big,
        make_traffic(6, *lengths, requests=400).stream(),
        gpus=8,
        layout=EngineLayout(8, 2, 2.0, True),
    )
    big_ach = make_setting("Llama 3.3 70B", "H100", assumptions="achievable", weight_bits=8)
    for prefill in ("whole", "chunked"):
        for rate in (3, 12):
            add(
                f"70B achievable, 4 pipeline stages, {prefill}, {rate} req/s, stop",
                big_ach,
                make_traffic(rate, *lengths, requests=600, seed=rate).stream(),
                EngineConfig(prefill=prefill, admission="no_evict"),
                gpus=8,
                layout=EngineLayout(8, 4, 1.0, False),
                stop={"ttft": 2.0, "tpot": 0.05},
            )
    shared = make_traffic(10, "200", "50", requests=600, seed=0, shared_prefix_tokens=1000)
    add("prefix cache, shared prefixes", ideal, shared.stream())
    add("prefix cache, shared prefixes, small cache", ideal, shared.stream(), cap=0.01)
    sessions = make_traffic(
        2, "300", "80", requests=200, seed=0, session_turns=4, think_time_s=1.0
    ).stream()
    add("prefix cache, sessions", ideal, sessions)
    add("no prefix caching, sessions", ideal, sessions, EngineConfig(prefix_caching=False))
    add("arrivals at once", ideal, Arrivals(np.zeros(50), np.full(50, 700), np.full(50, 90)))

    for policy in ("round_robin", "least_outstanding"):
        stream = make_traffic(60, *lengths, requests=600, seed=9).stream(4, 4)

        def group(policy=policy, stream=stream):
            insts = [build_instance(ideal, 1) for _ in range(4)]
            router = Router(policy, 4, seed=1)
            return insts, lambda: simulate_group(insts, stream, router)

        out.append((f"group of 4, {policy}", group))
    return out


def record_fields(rec) -> dict:
    """Every field of a RunRecord as plain values (the arrivals' arrays by name, and their
    sharing's fields one by one: a field one tree has and the baseline lacks is not
    compared, so a new field left at its default changes no case)."""
    got = {}
    for f in dataclasses.fields(rec):
        value = getattr(rec, f.name)
        if f.name == "arrivals":
            for g in dataclasses.fields(value):
                part = getattr(value, g.name)
                if not dataclasses.is_dataclass(part):
                    got[f"arrivals.{g.name}"] = np.asarray(part)
                    continue
                for h in dataclasses.fields(part):
                    got[f"arrivals.{g.name}.{h.name}"] = getattr(part, h.name)
        else:
            got[f.name] = value
    return got


def produce(path: str) -> None:
    """Run every case in this process and pickle {name: (fields, CPU seconds)} to ``path``."""
    results = {}
    for name, build in cases():
        _, go = build()
        start = time.process_time()
        rec = go()
        results[name] = (record_fields(rec), time.process_time() - start)
    with open(path, "wb") as fh:
        pickle.dump(results, fh)


def same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
    return type(a) is type(b) and a == b


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="main", help="git ref of the code compared")
    parser.add_argument("--produce", help=argparse.SUPPRESS)  # internal: one tree's records
    args = parser.parse_args()
    if args.produce:
        produce(args.produce)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "baseline"
        base.mkdir()
        extract(args.baseline, base)  # the committed tree (bench_cli's: git archive)
        got = {}
        for label, tree in ((f"baseline ({args.baseline})", base), ("this tree", ROOT)):
            out = Path(tmp) / f"{len(got)}.pkl"
            subprocess.run(
                [sys.executable, str(Path(__file__).resolve()), "--produce", str(out)],
                check=True,
                cwd=tree,
                env={**__import__("os").environ, "PYTHONPATH": str(tree)},
            )
            with open(out, "rb") as fh:
                got[label] = pickle.load(fh)
    (la, a), (lb, b) = got.items()
    print("PYTHONDONTWRITEBYTECODE=1 on this machine: timings without compiled bytecode")
    print(f"{'case':52s} {'same':>5s} {'CPU s, ' + la:>24s} {'this tree':>10s}")
    differ = 0
    for name in a:
        fa, ta = a[name]
        fb, tb = b[name]
        bad = [k for k in fa if not same(fa[k], fb.get(k))]
        differ += bool(bad)
        print(f"{name:52s} {'yes' if not bad else 'NO':>5s} {ta:24.2f} {tb:10.2f}")
        if bad:
            print(f"    differ: {', '.join(bad)}")
    ta = sum(t for _, t in a.values())
    tb = sum(t for _, t in b.values())
    print(f"{'all ' + str(len(a)) + ' cases':52s} {'':5s} {ta:24.2f} {tb:10.2f}")
    print("every record bit-identical" if not differ else f"{differ} cases differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
