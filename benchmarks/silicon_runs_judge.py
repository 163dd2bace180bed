"""Judge the engine step on AIConfigurator's measured aggregated runs
(tests/data/aic_silicon_runs.csv.gz): mean TPOT and mean TTFT of a fixed, seeded, stratified
sample, per group (dense; MoE attention-DP + expert parallel "DEP" on Blackwell; the same on
Hopper; MoE under TP/TEP/PP) and per model x GPU for the MoE groups.

    PYTHONPATH=. python benchmarks/silicon_runs_judge.py [--per-group 40]
        [--clock rows|engine|kernels]
        [--split all|fit|test] [--seed 0]
    PYTHONPATH=. python benchmarks/silicon_runs_judge.py --build SILICON_SAMPLE_CSV
    PYTHONPATH=. python benchmarks/silicon_runs_judge.py --per-group 100000 \
        --residuals docs/validation_residuals_silicon.csv

``--residuals`` writes every run's residuals (it needs the whole file: ``--split all`` and a
``--per-group`` above every group's runs) in ``compare_residuals.py``'s columns plus ``split``
and ``notes``: mean TPOT, mean TTFT, and a *derived* closed-loop throughput per run, output
tokens per second per GPU = concurrency x output / (TTFT + (output - 1) x TPOT) / GPUs, of the
predicted and of the measured TPOT and TTFT (what ``interval_coverage.py`` calibrates on).

``--build`` converts AIConfigurator's ``silicon_sample.csv`` (github.com/ai-dynamo/aiconfigurator
@095f58a51c4ca8e61b66ec108d86f223f8d559ce, aic-core/src/aiconfigurator_core/systems/, Apache-2.0;
read it with ``git show``) into the judging set and prints what it skipped and why. Its
``batch_size`` is the batch of one attention-DP rank (``silicon_concurrency`` in
``silicon_data_source`` = ``batch_size`` x ``attention_dp_size`` on every run that states both):
a row's ``batch_or_concurrency`` is the run's whole concurrency. The end-to-end rows judge the
model; nothing is fitted to them.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "tests" / "data" / "aic_silicon_runs.csv.gz"
COMMIT = "095f58a51c4ca8e61b66ec108d86f223f8d559ce"
#: ``--clock`` -> the preset's ``kernel_tables``: each run as ``compare-measured`` prices it
#: (``rows``: the kernel clock where it states a TensorRT-LLM version the tables time), every
#: run on the engine profile's terms, or every run at its measured kernels' times.
CLOCKS = {"rows": None, "engine": False, "kernels": True}
PATH = "aic-core/src/aiconfigurator_core/systems/silicon_sample.csv"

#: AIConfigurator's model paths -> the toolkit's model names (models/*.yaml), MoE or not.
MODELS = {
    "deepseek-ai/DeepSeek-R1": ("DeepSeek-R1", True),
    "nvidia/DeepSeek-R1-NVFP4": ("DeepSeek-R1", True),
    "deepseek-ai/DeepSeek-V3": ("DeepSeek-V3", True),
    "nvidia/DeepSeek-V3.1-NVFP4": ("DeepSeek-V3.1", True),
    "openai/gpt-oss-120b": ("gpt-oss-120b", True),
    "Qwen/Qwen3-235B-A22B-FP8": ("Qwen3-235B-A22B", True),
    "Qwen/Qwen3-32B": ("Qwen3-32B", False),
    "nvidia/Qwen3-32B-NVFP4": ("Qwen3-32B", False),
    "meta-llama/Llama-3.1-70B": ("Llama-3.1-70B", False),
    "meta-llama/Llama-3.1-8B-Instruct": ("Llama-3.1-8B", False),
    "nvidia/Llama-3.1-8B-Instruct-FP8": ("Llama-3.1-8B", False),
}
GPUS = {
    "h100_sxm": ("H100-SXM", "Hopper"),
    "h200_sxm": ("H200", "Hopper"),
    "b200_sxm": ("B200", "Blackwell"),
    "b300_sxm": ("B300", "Blackwell"),
    "gb200": ("GB200", "Blackwell"),
}
ENGINES = {"trtllm": "TensorRT-LLM", "sglang": "SGLang", "vllm": "vLLM"}
GROUPS = ("dense", "MoE DEP Blackwell", "MoE DEP Hopper", "MoE TP/PP")


def _precision(model: str, precision: str, gemm: str, moe: str) -> str | None:
    """The precision cell: gpt-oss-120b's released MoE weights are MXFP4 (AIConfigurator's
    quant label says nvfp4); FP8 block-scaled stays FP8; no precision and no quantisation
    stated is the BF16 release; INT4 weight-only is not mapped."""
    if precision == "fp4":
        return "MXFP4" if model == "gpt-oss-120b" else "NVFP4"
    if precision == "fp8":
        return "FP8 (block-scaled)" if "block" in f"{gemm} {moe}" else "FP8"
    if precision == "bf16" or (precision != precision and gemm != gemm):
        return "BF16"  # no quantisation stated: the BF16 release the model path names
    return None


def _layout(tp: int, pp: int, dp: int, moe_tp: int, moe_ep: int, moe: bool) -> str | None:
    """The parallelism cell TensorRT-LLM's words give ("DEP8", "TEP8", "TP8", "TP4 PP2");
    None for the layouts the toolkit does not state (experts split by tensor and expert degrees
    at once, attention DP beside attention TP)."""
    pipe = f" PP{pp}" if pp > 1 else ""
    if dp > 1:
        if tp != 1:
            return None
        if not moe:
            return None
        if moe_tp == 1 and moe_ep == dp:
            return f"DEP{dp}{pipe}"
        if moe_ep == 1 and moe_tp == dp:
            return f"TP{dp} attn-DP{pipe}"
        return None
    if not moe or moe_ep == 1:
        return f"TP{tp}{pipe}"
    if moe_tp == 1 and moe_ep == tp:
        return f"TEP{tp}{pipe}"
    return None


#: Tokens per KV-cache block AIConfigurator's TensorRT-LLM rule aligns the budget to.
TOKENS_PER_BLOCK = 32


def token_budget(batch: int, isl: int) -> int:
    """The step token budget AIConfigurator's benchmark generator gives an aggregated worker
    (src/aiconfigurator/generator/rule_plugin/benchmark/trtllm.rule and vllm.rule @095f58a:
    ``agg max_num_tokens = max_batch_size + isl + 1500``, TensorRT-LLM's rounded up to its
    32-token blocks; sglang.rule: ``max_prefill_tokens = isl + 1500`` beside the batch's
    decode tokens). The engines' 8,192-token default would keep an 8,192-token prompt out of
    any step that decodes."""
    need = batch + isl + 1500
    return -(-need // TOKENS_PER_BLOCK) * TOKENS_PER_BLOCK


def group_of(moe: bool, parallelism: str, family: str) -> str:
    """The judging group of a run."""
    if not moe:
        return "dense"
    if "DEP" in parallelism:
        return f"MoE DEP {family}"
    return "MoE TP/PP"


def _skip(why: dict, reason: str) -> None:
    why[reason] = why.get(reason, 0) + 1


def build(source: str, out: Path) -> int:
    """Convert ``silicon_sample.csv`` into the judging set; print the skips by reason."""
    import pandas as pd

    d = pd.read_csv(source)
    why: dict[str, int] = {}
    rows = []
    seen: set[tuple] = set()  # each run's configuration, date and figures, without its id
    for _, r in d.iterrows():
        if r["mode"] != "agg":
            _skip(why, "disaggregated (mode != agg)")
            continue
        if r["model_path"] not in MODELS:
            _skip(why, f"model not shipped: {r['model_path']}")
            continue
        model, moe = MODELS[r["model_path"]]
        if r["system"] not in GPUS:
            _skip(why, f"GPU not mapped: {r['system']}")
            continue
        gpu, family = GPUS[r["system"]]
        prec = _precision(model, r["precision"], r["gemm_quant_mode"], r["moe_quant_mode"])
        if prec is None:
            _skip(why, f"precision not mapped: {r['precision']}")
            continue
        cells = [
            r[k] for k in ("tp_size", "pp_size", "attention_dp_size", "moe_tp_size", "moe_ep_size")
        ]
        if not np.isfinite(cells[2]):
            cells[2] = 1  # the older gap-analysis files have no attention-DP column
        if not moe:
            cells[3:] = [1, 1]
        if any(not np.isfinite(c) for c in cells):
            _skip(why, "a size not given")
            continue
        sizes, experts = [int(c) for c in cells[:3]], [int(c) for c in cells[3:]]
        if min(sizes) < 1 or (moe and min(experts) < 1):
            _skip(why, "a size of 0")
            continue
        if sizes[0] > 8:
            # GB200's tp 12-72 with moe_tp = tp: DeepSeek's 128 heads do not split so; the
            # size reads as a wide deployment's world size, whose layout the row does not state
            _skip(why, "tensor degree above 8 (a world size, not the attention's split)")
            continue
        par = _layout(*sizes, *experts, moe)
        if par is None:
            _skip(why, "layout not stated in the toolkit's words (mixed MoE TP x EP, DP x TP)")
            continue
        text = str(r["silicon_data_source"])
        conc = re.search(r"silicon_concurrency=(\d+)", text)
        concurrency = int(conc.group(1)) if conc else int(r["batch_size"]) * sizes[2]
        if concurrency != int(r["batch_size"]) * sizes[2]:
            _skip(why, "silicon_concurrency != batch_size x attention_dp_size")
            continue
        measured = re.search(r"measured=(\d{4}-\d\d-\d\d)", text)
        version = str(r["backend_version"])
        numbered = re.match(r"\d+\.\d+", version) is not None
        engine = f"{ENGINES[r['backend']]} {version}" if numbered else ENGINES[r["backend"]]
        batch = int(r["batch_size"])
        notes = (
            f"tp_size {sizes[0]}, pp_size {sizes[1]}, attention_dp_size {sizes[2]}, "
            f"moe_tp_size {experts[0]}, moe_ep_size {experts[1]}, "
            f"max_batch_size {batch}, max_num_tokens {token_budget(batch, int(r['isl']))} "
            f"(each attention rank's, as AIConfigurator's benchmark generator sets them); "
            f"{r['backend']} {version}; gemm {r['gemm_quant_mode']}, moe {r['moe_quant_mode']}; "
            f"measured {measured.group(1) if measured else 'undated'}"
        )
        base = {
            "source": f"github.com/ai-dynamo/aiconfigurator @{COMMIT} {PATH}, row id {r['id']}",
            "model": model,
            "precision": prec,
            "hardware": gpu,
            "n_gpus": sizes[0] * sizes[1] * sizes[2],
            "parallelism": par,
            "batch_or_concurrency": concurrency,
            "input_len": int(r["isl"]),
            "output_len": int(r["osl"]),
            "unit": "ms",
            "scenario": "closed_loop",
            "engine": engine,
            "licence": "Apache-2.0 (AIConfigurator repository licence); figures quoted as measured",
            "notes": notes,
            "group": group_of(moe, par, family),
            "measured_date": measured.group(1) if measured else "",
        }
        # a later dump lists some runs again under a new id (same configuration, measurement
        # date and figures to the file's four decimals; the dumps' floats differ in the last
        # bits): one measurement, kept once, under its first id
        figures = tuple(round(float(r[c]), 4) for c in ("silicon_ttft_ms", "silicon_tpot_ms"))
        run = (*(v for k, v in base.items() if k != "source"), *figures)
        if run in seen:
            _skip(why, "the same run under a later dump's id (configuration, date and figures)")
            continue
        seen.add(run)
        for metric, col in (("mean_TPOT", "silicon_tpot_ms"), ("mean_TTFT", "silicon_ttft_ms")):
            if np.isfinite(r[col]) and r[col] > 0:
                rows.append({**base, "metric": metric, "value": round(float(r[col]), 4)})
    t = pd.DataFrame(rows)
    dated = np.sort(t.loc[t.measured_date != "", "measured_date"].unique())
    cut = dated[len(dated) // 2] if len(dated) else ""
    # older half of the measurement dates (undated gap-analysis runs are the older engines) fit
    t["split"] = np.where((t.measured_date == "") | (t.measured_date < cut), "fit", "test")
    cols = [
        "source", "model", "precision", "hardware", "n_gpus", "parallelism",
        "batch_or_concurrency", "input_len", "output_len", "metric", "value", "unit",
        "scenario", "engine", "group", "split", "measured_date", "licence", "notes",
    ]  # fmt: skip
    t[cols].to_csv(out, index=False, compression={"method": "gzip", "mtime": 0})
    print(f"{len(t)} rows ({len(t) // 2} runs) -> {out}; split date {cut}")
    for reason, n in sorted(why.items(), key=lambda x: -x[1]):
        print(f"  skipped {n:5d}: {reason}")
    print(t.drop_duplicates("source").groupby(["group", "split"]).size().to_string())
    return 0


def sample(table, per_group: int, seed: int):
    """A fixed, seeded sample of runs: ``per_group`` runs of each group, spread over its
    model x GPU x engine strata (round-robin), both metrics of each run."""
    runs = table.drop_duplicates("source")
    rng = np.random.default_rng(seed)
    chosen = []
    for g in GROUPS:
        part = runs[runs.group == g]
        strata = [
            list(rng.permutation(s.source.to_numpy()))
            for _, s in part.groupby(["model", "hardware", "engine"], sort=True)
        ]
        picked: list[str] = []
        while len(picked) < per_group and any(strata):
            for s in strata:
                if s and len(picked) < per_group:
                    picked.append(s.pop())
        chosen += picked
    return table[table.source.isin(set(chosen))]


def _line(label: str, errors: np.ndarray) -> str:
    if not len(errors):
        return f"  {label:34s} n   0"
    a = np.abs(errors)
    return (
        f"  {label:34s} n {len(errors):3d}  median|e| {np.median(a):6.3f}  "
        f"p90|e| {np.quantile(a, 0.9):6.3f}  median signed {np.median(errors):+7.3f}"
    )


#: The notes of a derived throughput row (of the predicted and measured TPOT and TTFT alike).
DERIVED = "derived: concurrency x output / (TTFT + (output - 1) x TPOT) / GPUs"


def derived_throughput(res, part):
    """One closed-loop throughput residual per run whose TPOT and TTFT were both predicted:
    output tokens per second per GPU of the run's mean TPOT and TTFT (``DERIVED``), on the TPOT
    row's line (its class is the run's)."""
    import pandas as pd

    out = []
    run = part.source.to_numpy()
    by_run: dict = {}
    for rec in res.to_dict("records"):
        by_run.setdefault(run[rec["row"] - 2], {})[rec["quantity"]] = rec
    for rows in by_run.values():
        if not {"tpot", "ttft"} <= set(rows):
            continue
        tpot, ttft = rows["tpot"], rows["ttft"]
        p = part.iloc[tpot["row"] - 2]
        scale = p.batch_or_concurrency * p.output_len / p.n_gpus
        predicted, measured = (
            scale / (ttft[c] + (p.output_len - 1) * tpot[c]) for c in ("predicted", "measured")
        )
        out.append({**tpot, "kind": "throughput", "quantity": "throughput",
                    "predicted": predicted, "measured": measured,
                    "log_residual": float(np.log(predicted / measured)), "notes": DERIVED})  # fmt: skip
    return pd.DataFrame(out)


def write_residuals(measured: Path, compared, part, out: Path) -> None:
    """Every predicted row's residual (``compare_residuals.residuals``) with its ``split``, and
    the derived throughput of each run, to ``out``."""
    import pandas as pd
    import yaml

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from compare_residuals import residuals

    from inference_econ.serving import interval_table as ivt

    listed = yaml.safe_load(Path(ivt.table().path).read_text())
    gpus, models = set(listed["fitted_gpus"]), set(listed["fitted_models"])
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
        compared.to_csv(f, index=False)
    res = residuals(measured, Path(f.name), gpus, models)
    Path(f.name).unlink()
    res["file"] = DEFAULT.name
    res["notes"] = ""
    res = pd.concat([res, derived_throughput(res, part)], ignore_index=True)
    res["split"] = part.split.to_numpy()[res.row.to_numpy() - 2]
    res.sort_values(["row", "kind"], kind="stable").to_csv(out, index=False, float_format="%.6g")
    print(f"wrote {out}: {len(res)} residuals", file=sys.stderr)


def judge(args) -> int:
    """Predict the sample's rows and print the table."""
    import pandas as pd

    from inference_econ.measured.comparison import compare
    from inference_econ.model.assumptions import preset

    start = time.process_time()
    table = pd.read_csv(args.file)
    if args.split != "all":
        table = table[table.split == args.split]
    part = sample(table, args.per_group, args.seed).reset_index(drop=True)
    base = preset(args.assumptions)
    if CLOCKS[args.clock] is not None:  # (an older checkout's Assumptions may lack the field)
        base = base.replace(kernel_tables=CLOCKS[args.clock])
    if args.residuals and len(part) != len(table):
        print(f"--residuals: {len(part)} of the {len(table)} rows sampled; give --split all and "
              "a --per-group above every group's runs (100000)", file=sys.stderr)  # fmt: skip
        return 2
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
        part.to_csv(f, index=False)
    c = compare(f.name, assumptions=base)
    if args.residuals:
        write_residuals(Path(f.name), c.table, part, Path(args.residuals))
    Path(f.name).unlink()
    got = c.table
    part["predicted"] = got["predicted"].to_numpy()
    part["status"] = got["status"].to_numpy()
    ok = part[(part.status == "ok") & np.isfinite(part.predicted)]
    ok = ok.assign(e=ok.predicted / ok.value - 1.0)
    print(f"{args.file}: {len(part) // 2} runs sampled, {len(ok)} rows predicted "
          f"({args.assumptions}, clock {args.clock}; "
          f"split {args.split}; per group {args.per_group}, seed {args.seed})")  # fmt: skip
    for status, n in part[part.status != "ok"].status.value_counts().items():
        print(f"  not predicted {n:3d}: {str(status)[:100]}")
    for kind in ("mean_TPOT", "mean_TTFT"):
        print(f"{kind} (predicted/measured - 1)")
        for g in GROUPS:
            print(_line(g, ok[(ok.group == g) & (ok.metric == kind)].e.to_numpy()))
    for g in GROUPS[1:]:
        print(f"{g}, per model x GPU (TPOT | TTFT median signed)")
        sub = ok[ok.group == g]
        for (m, h), s in sub.groupby(["model", "hardware"]):
            tp = s[s.metric == "mean_TPOT"].e
            tt = s[s.metric == "mean_TTFT"].e
            print(
                f"  {m:16s} {h:9s} n {len(tp):3d}  TPOT {np.median(tp) if len(tp) else np.nan:+7.3f}"
                f"  TTFT {np.median(tt) if len(tt) else np.nan:+7.3f}"
            )
    print("by engine: median |log(predicted / measured)| (TPOT | TTFT)")
    for name, sub in ok.groupby(ok.engine.str.split().str[0]):
        tp = np.log1p(sub[sub.metric == "mean_TPOT"].e.to_numpy())
        tt = np.log1p(sub[sub.metric == "mean_TTFT"].e.to_numpy())
        print(
            f"  {name:16s} n {len(tp):4d}  TPOT {np.median(abs(tp)) if len(tp) else np.nan:.3f}"
            f"  TTFT {np.median(abs(tt)) if len(tt) else np.nan:.3f}"
        )
    if args.out:
        ok.to_csv(args.out, index=False)
    if args.rows:
        cols = ["group", "model", "hardware", "precision", "parallelism", "engine",
                "batch_or_concurrency", "input_len", "output_len", "metric", "value", "predicted"]  # fmt: skip
        print(ok[cols + ["e"]].to_string())
    print(f"CPU {time.process_time() - start:.1f} s")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", default=str(DEFAULT))
    parser.add_argument("--build", metavar="SILICON_SAMPLE_CSV")
    parser.add_argument("--per-group", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--split", choices=("all", "fit", "test"), default="all")
    parser.add_argument("--assumptions", default="achievable")
    parser.add_argument("--clock", choices=tuple(CLOCKS), default="rows")
    parser.add_argument("--rows", action="store_true", help="print every predicted row")
    parser.add_argument("--out", metavar="CSV", help="write every predicted row to CSV")
    parser.add_argument("--residuals", metavar="CSV", help="write every run's residuals to CSV")
    args = parser.parse_args()
    if args.build:
        return build(args.build, Path(args.file))
    return judge(args)


if __name__ == "__main__":
    raise SystemExit(main())
