"""The most output tokens/s a system serves under MLPerf's Server latency limits, predicted by
the load simulation (docs/model.md Part E), next to MLPerf Inference v4.1's measured Server
results for Llama 2 70B (tests/data/mlperf_v4.1_server.csv, copied from the project's data).

    python benchmarks/mlperf_server.py                       # the table of docs/validation.md
    python benchmarks/mlperf_server.py --assumptions refined # the ideal engine instead

For each GPU and GPU count the measured rows name, every split of the GPUs into instances
(1, 2, 4 or 8 GPUs each, tensor-parallel; the load balanced at random) is searched for the most
load that meets p99 TTFT <= 2 s and p99 TPOT <= 200 ms (Server) and 450 ms / 40 ms
(Interactive); the best split is reported. System names resolve through the catalog; under the
achievable preset each system runs the kernel terms of the engine profile its row names (vLLM
0.4.3 on ROCm on MI300X, else TensorRT-LLM), with this script's scheduler for every system (below):
``compare-measured`` replays the same rows with each engine's own scheduler instead.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

import inference_econ as ie  # noqa: E402
from inference_econ.load.targets import MLPERF_INTERACTIVE, MLPERF_SERVER  # noqa: E402
from inference_econ.measured.engine_words import engine_of  # noqa: E402
from inference_econ.optimise.load_search import knee_of  # noqa: E402
from inference_econ.output.render import render  # noqa: E402
from inference_econ.specs.catalog import resolve_system_name  # noqa: E402
from inference_econ.specs.engine import select_engine  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "mlperf_v4.1_server.csv"
#: OpenOrca as MLPerf samples it: prompts and answers under 1,024 tokens; answers average 294
#: tokens (the reference's tokens per sample). The prompt distribution is an assumption.
INPUT = "lognormal:300:0.8:1024"
OUTPUT = "lognormal:294:0.7:1024"
#: The engine's limits: MLPerf submissions batch far more than serving defaults (the measured
#: rows imply 2,400-3,200 concurrent sequences per 8 GPUs), so the scheduler is not what binds.
ENGINE = ie.EngineConfig(max_batch_requests=2048, step_token_budget=8192)


def _gpu(name: str) -> str | None:
    """An MLPerf system name resolved through the catalog (None: not in it)."""
    try:
        return resolve_system_name(name).name
    except ie.SpecError:
        return None


def _profile(row: dict) -> str:
    """The engine profile of a row: its engine at its version on its platform (TensorRT-LLM
    when it names none)."""
    text = engine_of(row)
    return select_engine(text.name or "trtllm", text.version, text.platform or "cuda").name


def measured(path: Path = DATA) -> pd.DataFrame:
    """Llama 2 70B Server rows: one per system, with measured output tokens/s and the engine
    the row names (vLLM on the MI300X systems, TensorRT-LLM elsewhere)."""
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    df = df[df["model"].str.contains("Llama-2-70B") & (df["metric"] == "throughput_total")]
    df = df.assign(
        gpu=df["hardware"].map(_gpu),
        n_gpus=df["n_gpus"].astype(int),
        value=df["value"].astype(float),
        engine=[_profile(r) for r in df.to_dict(orient="records")],
    )
    return df[["source", "hardware", "gpu", "n_gpus", "value", "engine"]].rename(
        columns={"value": "measured"}
    )


def best_split(
    setting, gpus: int, traffic, targets, engine=ENGINE, progress=None
) -> tuple[float, str]:
    """(most output tokens/s, the split) over the splits of ``gpus`` into equal instances."""
    best, label = 0.0, "none fits"
    for size in (n for n in (1, 2, 4, 8) if gpus % n == 0):
        try:
            knee = knee_of("deployment", setting, ie.Deployment(size, 1), traffic, targets, engine)
        except ie.InfeasibleError:
            continue  # the weights leave no room for a KV cache on this size
        at = knee.at_max
        tokens = (gpus // size) * at.output_tokens_per_s if at else 0.0
        if progress:
            progress(f"{setting.gpu.name} x{gpus}: instances of {size}: {tokens:,.0f} tok/s")
        if tokens > best:
            best, label = tokens, f"{gpus // size} x TP{size}"
    return best, label


def table(
    assumptions: str,
    requests: int,
    input_lengths: str,
    output_lengths: str,
    engine=ENGINE,
    progress=None,
) -> pd.DataFrame:
    rows = []
    data = measured()
    for (name, gpus, profile), group in data.groupby(["hardware", "n_gpus", "engine"], sort=True):
        gpu = group["gpu"].iloc[0]
        row = {
            "system GPU": name,
            "GPUs": gpus,
            "engine": profile,
            "submissions": len(group),
            "measured tok/s (median)": group["measured"].median(),
            "measured range": f"{group['measured'].min():,.0f}-{group['measured'].max():,.0f}",
        }
        if gpu is None:
            rows.append({**row, "note": "GPU not in the catalog"})
            continue
        extra = {"engine": profile} if ie.preset(assumptions).engine is not None else {}
        setting = ie.make_setting(
            "Llama 2 70B", gpu, weight_bits=8, kv_cache_bits=8, assumptions=assumptions, **extra
        )
        traffic = ie.make_traffic(1.0, input_lengths, output_lengths, requests=requests, seed=0)
        server, split = best_split(
            setting, gpus, traffic, ie.Targets(*MLPERF_SERVER), engine, progress
        )
        interactive, isplit = best_split(
            setting, gpus, traffic, ie.Targets(*MLPERF_INTERACTIVE), engine, progress
        )
        rows.append(
            {
                **row,
                "predicted Server tok/s": server,
                "split": split,
                "measured / predicted": row["measured tok/s (median)"] / server
                if server
                else float("nan"),
                "predicted Interactive tok/s": interactive,
                "Interactive split": isplit,
                "note": "",
            }
        )
    return pd.DataFrame(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--assumptions", default="achievable", help="assumption preset (default: achievable)"
    )
    parser.add_argument(
        "--requests", type=int, default=3000, help="requests simulated per instance"
    )
    parser.add_argument("--prompt-tokens", default=INPUT, help=f"prompt lengths (default {INPUT})")
    parser.add_argument(
        "--output-tokens", default=OUTPUT, help=f"output lengths (default {OUTPUT})"
    )
    parser.add_argument(
        "--max-batch",
        type=int,
        default=ENGINE.max_batch_requests,
        help="engine: most requests batched",
    )
    parser.add_argument(
        "--step-tokens", type=int, default=ENGINE.step_token_budget, help="engine: tokens per step"
    )
    parser.add_argument(
        "--format", default="markdown", choices=("table", "csv", "json", "markdown")
    )
    args = parser.parse_args()
    engine = ie.EngineConfig(args.max_batch, args.step_tokens)
    df = table(
        args.assumptions,
        args.requests,
        args.prompt_tokens,
        args.output_tokens,
        engine,
        lambda m: print(m, file=sys.stderr),
    )
    command = "python benchmarks/mlperf_server.py " + " ".join(sys.argv[1:])
    notes = [
        f"Command: `{command.strip()}`",
        f"Llama 2 70B, 8-bit weights and KV cache, `{args.assumptions}` assumptions; prompts {args.prompt_tokens}, "
        f"outputs {args.output_tokens}; {args.requests} requests simulated per instance; at most "
        f"{args.max_batch} requests and {args.step_tokens} tokens per step.",
    ]
    print(
        render(
            df,
            args.format,
            title="MLPerf Inference v4.1 Server, Llama 2 70B: measured against predicted maximum throughput",
            notes=notes,
        ),
        end="",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
