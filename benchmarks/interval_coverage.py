"""Prediction intervals of expected figures: the shipped class table, the earlier stratum
table, and their measured coverage (docs/model.md §F12, docs/validation.md).

**Calibration classes** (``intervals/classes.yaml``, what every expected figure is sized on):
each residual's class (kind / dense or MoE / layout class / GPU generation / engine / scenario,
``measured.intervals.row_class`` of its row in tests/data); a class whose residuals come from
``CLASS_MIN_ROWS`` configurations (``configuration``: a concurrency sweep is one) takes its own
conformal band for a figure of one of its residuals' models, or of any model where they are of
``CLASS_MIN_MODELS`` models or more; another model's figure, or a thinner or empty class's, the
widest of the nearest classes in support, widened by its kind's factor per dimension away and
centred on the expected figure (``serving/support.py``; docs/model.md §F12). The factors are
fitted on the table's own calibration residuals, each class left out in turn
(``class_widening.py``), in every table this script writes or measures. The shipped table is
calibrated on every residual file given: the MLPerf rounds, AIConfigurator's measured runs
(``silicon_runs_judge.py --residuals``) and TensorRT-LLM 1.2's performance-overview tables
(``compare_residuals.py`` of their ``compare-measured`` outputs). Its coverage is measured by
**rolling origin**: each MLPerf round predicted from the class table of the MLPerf rounds before
it, never from itself (v5.1 from v5.0, v6.0 from v5.0-v5.1, v6.1 from v5.0-v6.0), the silicon
runs of ``split`` test from every MLPerf round and the silicon fit runs, each model's
engine-table figures from every other residual (one page has no order in time: its other
models stand in for the older), with one round of drift, beside the stratum table's coverage of
the same rows; then the MLPerf rounds with the silicon fit runs in their tables, and each
source from the others' table alone (leave one source out).

    python benchmarks/interval_coverage.py docs/validation_residuals.csv \
        docs/validation_residuals_silicon.csv docs/validation_residuals_tables.csv --write-classes

**The stratum table** (``intervals/achievable.yaml``, the earlier rule and the baseline): a
nested time split, fixed before any coverage was looked at:

* the engine profiles are fitted to the training file (``benchmarks/fit_engines.py``);
* the interval widths are **calibrated** on the residuals of the next round, which the fit never
  saw (MLPerf Inference v5.0, ``tests/data/benchmarks_train_mlperf_v50.csv``);
* their **coverage is measured** on the rounds after it, which neither the fit nor the
  calibration saw (MLPerf Inference v5.1, v6.0, v6.1,
  ``tests/data/benchmarks_test_mlperf_newer.csv``).

The residuals come from ``benchmarks/measured_validation.py --residuals FILE`` (one row per
predicted figure: file, kind, regime, GPU, model, predicted, measured). Per stratum (kind of
figure; dense/MoE; memory/compute-bound; one node/many; GPU and model family seen in the fit or
not) a split-conformal predictive system (``crepes``, Mondrian by stratum, no smoothing) gives
the 5th, 10th, 90th and 95th percentiles of log(measured/predicted); strata with fewer than
``MIN_ROWS`` calibration residuals pool upward (serving/interval_table.py: ``POOLING``).

    pip install -e ".[fit]"          # crepes: used here only; the runtime reads the table
    python benchmarks/measured_validation.py --no-loso --residuals residuals.csv
    python benchmarks/interval_coverage.py residuals.csv --write --figure docs/img/interval-reliability.png

(``benchmarks/compare_residuals.py`` writes the same residuals from ``compare-measured`` outputs
of the shipped profiles, which are the time split's fit: minutes where the first line takes
about 5,800 s of CPU.)

**Software drift** (fixed before the v5.1+ coverage of this rule was looked at): engines keep
getting faster after the rounds a fit and a calibration saw (the same GPU and benchmark run
faster a round later), so throughput's high end is raised by ``DRIFT`` per publication round
after the calibration round: the median, over (GPU, model, scenario) results in both, of
log(v5.0 / v4.1 measured throughput per GPU) - the two rounds before the coverage rounds,
from ``tests/data/benchmarks_train.csv`` and ``benchmarks_train_mlperf_v50.csv`` only. A test
row of round k after the calibration takes k rounds of drift (what the table would have said
then); the shipped table takes the rounds up to the newest one in the data (``as_of_round``).

``--write`` rewrites ``intervals/achievable.yaml`` from the calibration rows; without it the
shipped table is read and only the coverage is printed.
"""

from __future__ import annotations

import argparse
import datetime
import math
import re
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package
sys.path.insert(0, str(Path(__file__).resolve().parent))  # class_widening, beside this script

import class_widening as cw  # noqa: E402

import inference_econ as ie  # noqa: E402
from inference_econ.output.render import render  # noqa: E402
from inference_econ.serving import interval_table as ivt  # noqa: E402
from inference_econ.serving import intervals as iv  # noqa: E402
from inference_econ.serving import support as sp  # noqa: E402
from inference_econ.specs.architecture import load_model  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "intervals" / "achievable.yaml"
CALIBRATION = "benchmarks_train_mlperf_v50.csv"
TEST = "benchmarks_test_mlperf_newer.csv"
#: Fewest calibration residuals a stratum needs (the 5th percentile of a conformal set is
#: finite from 19 rows; 30 leaves a margin).
MIN_ROWS = 30
#: Outside coverage (a GPU or model family the fit never saw), each log-quantile of the seen
#: interval is multiplied by this (fixed before coverage was measured).
UNSEEN_WIDENING = 1.5
#: Quantities stated as rates (the others are times); each kind is stated in one orientation:
#: throughput as a rate, TPOT and TTFT as times (serving/intervals.py).
RATES = {
    "throughput",
    "request_throughput",
    "input_throughput",
    "total_throughput",
    "streams",
    "user_speed",
}
PERCENTILES = (5, 10, 90, 95)
#: The publication round of a test row, from its source ("inference_results_v5.1/...").
ROUND = re.compile(r"v(\d+\.\d+)")
#: MLPerf Inference rounds, oldest first (about six months apart): drift is counted in rounds.
ROUNDS = ("v4.1", "v5.0", "v5.1", "v6.0", "v6.1")
CALIBRATION_ROUND = "v5.0"
#: Kinds whose figures drift with software, and the rounds the drift is measured between.
DRIFT_KINDS = ("throughput",)
DRIFT_FROM = ("benchmarks_train.csv", "inference_results_v4.1")
#: Nominal levels of the reliability curve, percent.
CURVE = (10, 20, 30, 40, 50, 60, 70, 80, 90)
CLASS_TABLE = ROOT / "intervals" / "classes.yaml"
#: AIConfigurator's measured runs (tests/data/README.md): their residuals
#: (``silicon_runs_judge.py --residuals``) carry a ``split`` (fit: measured before 2026-01-14).
SILICON = "aic_silicon_runs.csv.gz"
#: TensorRT-LLM 1.2's performance-overview tables (tests/data/README.md): residuals of the kind
#: of result a user brings from an engine's published tables (``compare_residuals.py`` of
#: ``compare-measured`` outputs), their dataset ``engine tables``.
TABLES = "trtllm_perf_overview_"
ENGINE_TABLES = "engine tables"
#: Where each source's residuals come from, and their licence (the class table's provenance).
SOURCES = {
    "MLPerf": "MLCommons' inference_results_v5.0 to v6.1 repositories (Apache License 2.0), "
    "read into tests/data (tests/data/README.md)",
    "silicon": "AIConfigurator's measured aggregated runs (github.com/ai-dynamo/aiconfigurator "
    "@095f58a, aic-core/src/aiconfigurator_core/systems/silicon_sample.csv, Apache License 2.0), "
    "read into tests/data/aic_silicon_runs.csv.gz (each run's throughput derived from its mean "
    "TPOT and TTFT: benchmarks/silicon_runs_judge.py --residuals)",
    ENGINE_TABLES: "TensorRT-LLM 1.2's performance overview (github.com/NVIDIA/TensorRT-LLM "
    "docs/source/developer-guide/perf-overview.md at 03e27c7, Apache License 2.0), read into "
    "tests/data/trtllm_perf_overview_{moe,moe_rest,dense}.csv (benchmarks/compare_residuals.py "
    "of compare-measured FILE --assumptions achievable)",
}
#: Fewest configurations (``configuration``) whose residuals a calibration class needs to take
#: its own conformal band (in support): the 5th and 95th percentiles of a conformal set of n
#: draws are finite from n = 19 ((n + 1) x 0.95 <= n), so 20 is the least count whose own 90 %
#: interval is finite; one configuration's concurrency sweep is one draw, not tens.
CLASS_MIN_ROWS = 20
#: Fewest models those configurations must be of for the class's band to size a figure of
#: another model: a band sized on one or two models' residuals measures how far the model misses
#: those (DeepSeek-R1's MLPerf runs are every MoE attention-DP residual on Blackwell), not a
#: model it has not been held against, whose figure takes the neighbours' band, widened, as a
#: thin class's does. Three: the fewest with a model on either side of a middle one.
CLASS_MIN_MODELS = 3


def oriented(res: pd.DataFrame) -> np.ndarray:
    """log(measured/predicted) of each residual row, in its kind's orientation."""
    rate = res.quantity.isin(RATES).to_numpy()
    want_rate = (res.kind == "throughput").to_numpy()
    sign = np.where(rate == want_rate, 1.0, -1.0)
    return -res.log_residual.to_numpy() * sign


def with_strata(res: pd.DataFrame, gpus: set, families: set) -> pd.DataFrame:
    """The residual rows with ``seen`` (GPU and model family in the fit) and ``r``."""
    cache: dict = {}

    def fam(name):
        if name not in cache:
            try:
                cache[name] = ivt.family(load_model(name))
            except ie.SpecError:  # a model the catalog lacks: no family, never seen
                cache[name] = None
        return cache[name]

    out = res.copy()
    out["seen"] = res.gpu.isin(gpus) & res.model.map(fam).isin(families)
    out["r"] = oriented(res)
    return out


def percentiles(r: np.ndarray, lows, highs) -> np.ndarray:
    """Conformal percentiles (crepes' predictive system on residuals r, at a prediction of 0)."""
    import warnings

    from crepes import ConformalPredictiveSystem

    cps = ConformalPredictiveSystem().fit(r)
    # a level beyond what the rows resolve is infinite: crepes warns and says so in the value
    warnings.filterwarnings("ignore", "the no. of calibration examples", UserWarning)
    return cps.predict(
        np.zeros(1), lower_percentiles=list(lows), higher_percentiles=list(highs), smoothing=False
    )[0]


def software_drift() -> tuple[float, int]:
    """(log ratio per round, matched results): the median over (GPU, model, scenario) of
    log(median v5.0 / median v4.1 measured throughput per GPU) - the calibration round against
    the round before it, MLPerf only."""
    from inference_econ.measured.comparison import _unit_scale
    from inference_econ.measured.reading import load_measured

    def per_gpu(path, keep) -> dict:
        out: dict = {}
        for r in load_measured(path):
            if not (r.ok and r.kind == "end-to-end" and keep(r)):
                continue
            if r.metric is None or r.metric.quantity != "throughput":
                continue
            value = r.value * _unit_scale(r) / (1 if r.metric.per == "gpu" else r.gpus)
            out.setdefault((r.gpu.name, r.arch.name, r.scenario), []).append(value)
        return {k: float(np.median(v)) for k, v in out.items()}

    data = ROOT / "tests" / "data"
    old = per_gpu(data / DRIFT_FROM[0], lambda r: DRIFT_FROM[1] in (r.source or ""))
    new = per_gpu(data / CALIBRATION, lambda r: True)
    logs = [math.log(new[k] / old[k]) for k in sorted(set(old) & set(new))]
    return (float(np.median(logs)) if logs else 0.0), len(logs)


def rounds_after_calibration(name: str) -> int:
    """Publication rounds from the calibration round to ``name`` (v5.1: 1)."""
    return ROUNDS.index(name) - ROUNDS.index(CALIBRATION_ROUND) if name in ROUNDS else 0


def strata_entries(cal: pd.DataFrame, lows=(5, 10), highs=(90, 95)) -> list[dict]:
    """Every stratum, at every pooling level, with at least MIN_ROWS calibration residuals."""
    entries = []
    for dropped in range(len(ivt.POOLING) + 1):
        kept = list(ivt.POOLING[dropped:])
        for key, part in cal.groupby(["kind", *kept], sort=True):
            if len(part) < MIN_ROWS:
                continue
            key = key if isinstance(key, tuple) else (key,)
            entry = {"kind": key[0]}
            for dim, value in zip(kept, key[1:]):
                entry[dim] = bool(value) if dim == "seen" else str(value)
            q = percentiles(part.r.to_numpy(), lows, highs)
            names = [f"q{p:02d}" for p in PERCENTILES]
            entry.update({n: round(float(v), 4) for n, v in zip(names, q)})
            entry["rows"] = len(part)
            entries.append(entry)
    return entries


def table_mapping(
    cal, gpus, models, n_cal, residuals_file, drift, as_of, lows=(5, 10), highs=(90, 95)
):
    per_round, matched = drift
    return {
        "provenance": {
            "fit": "engine profiles fitted to tests/data/benchmarks_train.csv "
            "(benchmarks/fit_engines.py)",
            "calibration": f"out-of-sample residuals of tests/data/{CALIBRATION} (MLPerf "
            f"Inference v5.0): {n_cal} figures",
            "coverage": f"measured on tests/data/{TEST} (MLPerf Inference v5.1, v6.0, v6.1): "
            "docs/validation.md",
            "method": "split-conformal predictive system (crepes), Mondrian by stratum, "
            "no smoothing; quantiles of log(measured / predicted)",
            "command": "python benchmarks/measured_validation.py --no-loso --residuals "
            f"{residuals_file} (or benchmarks/compare_residuals.py from compare-measured outputs "
            "of the shipped profiles: the same predictions) && python "
            f"benchmarks/interval_coverage.py {residuals_file} --write",
            "date": datetime.date.today().isoformat(),
        },
        "min_rows": MIN_ROWS,
        "unseen_widening": UNSEEN_WIDENING,
        "drift": {
            kind: {
                "log_per_round": round(per_round, 4),
                "rounds": rounds_after_calibration(as_of),
                "calibration_round": CALIBRATION_ROUND,
                "as_of_round": as_of,
                "source": f"median over {matched} (GPU, model, scenario) MLPerf results of "
                "log(v5.0 / v4.1 measured throughput per GPU)",
            }
            for kind in DRIFT_KINDS
        },
        "fitted_gpus": sorted(gpus),
        "fitted_models": sorted(models),
        "strata": strata_entries(cal, lows, highs),
    }


HEADER = """\
# Prediction intervals of the achievable preset's expected figures (docs/model.md §F12).
# Quantiles q05..q95 of log(measured / predicted), a rate for throughput and a time for TPOT
# and TTFT (units: natural log of a ratio), by stratum; a missing dimension is pooled.
# Written by benchmarks/interval_coverage.py --write (everything below is rewritten).
"""


CLASS_HEADER = """\
# Calibration classes of the achievable preset's expected figures (docs/model.md §F12, Support).
# Per class (kind / dense or MoE / layout class / GPU generation / engine / scenario): its counts
# of out-of-sample residuals and of the configurations they are of, the models they are of, and
# where those are min_rows configurations or more, the conformal quantiles q05..q95 of
# log(measured / predicted) (a rate for throughput, a time for TPOT and TTFT), which size a
# figure of one of those models, or of any where they are min_models or more. A figure of a
# thinner or empty class, or of another model, takes the widest of the nearest classes with
# quantiles, its kind's widening x per dimension, centred on the expected figure; where no class
# of its kind has quantiles, its kind's pooled band x its widening. Each factor is fitted on these
# residuals, each class left out in turn (benchmarks/class_widening.py).
# Written by benchmarks/interval_coverage.py --write-classes (everything below is rewritten).
"""


def fitted_sets(res: pd.DataFrame) -> tuple[set, set]:
    """GPUs and models of the fitting data, from the table (or, with --write, the fit)."""
    from inference_econ.measured import calibration as cal

    notes: list = []
    problem, _ = cal.prepare(
        ROOT / "tests" / "data" / "benchmarks_train.csv",
        "trtllm",
        lambda m: print(m, file=sys.stderr),
        notes,
    )
    return {r.gpu.name for r in problem.all_rows}, {r.arch.name for r in problem.all_rows}


def coverage(test: pd.DataFrame, table: ivt.IntervalTable, shipped: bool = False) -> pd.DataFrame:
    """Each test row with its interval's ends (in the row's orientation) and whether it holds:
    with the drift of the rounds from the calibration to the row's own (``shipped``: the
    table's, as of its newest round)."""
    rows = []
    for t in test.itertuples():
        found = ROUND.search(str(t.source))
        name = f"v{found.group(1)}" if found else "?"
        stratum = ivt.Stratum(t.kind, t.architecture, t.bound, t.nodes, bool(t.seen))
        band = table.band(stratum, None if shipped else rounds_after_calibration(name))
        out = {
            "kind": t.kind,
            "seen": t.seen,
            "stratum": band.source.split(", drift")[0],
            "round": name,
        }
        for level in iv.LEVELS:
            lo_q, hi_q = (getattr(band, q) for q in ivt.QUANTILES[level])
            out[f"in{level}"] = lo_q <= t.r <= hi_q
            out[f"below{level}"] = t.r < lo_q
            out[f"above{level}"] = t.r > hi_q
            out[f"width{level}"] = np.exp(hi_q) - np.exp(lo_q)
        rows.append(out)
    return pd.DataFrame(rows)


def summary(cov: pd.DataFrame) -> pd.DataFrame:
    parts = [("all", cov)]
    parts += [(f"kind {k}", g) for k, g in cov.groupby("kind")]
    parts += [(f"round {k}", g) for k, g in cov.groupby("round")]
    parts += [(f"round {r}, {k}", g) for (r, k), g in cov.groupby(["round", "kind"])]
    parts += [
        ("GPU and model family seen in the fit", cov[cov.seen]),
        ("outside coverage (widened)", cov[~cov.seen]),
    ]
    rows = []
    for name, g in parts:
        if not len(g):
            continue
        rows.append(
            {
                "figures": name,
                "rows": len(g),
                "in 80 % interval": f"{g.in80.mean():.1%}",
                "in 90 % interval": f"{g.in90.mean():.1%}",
                "below its low end": f"{g.below90.mean():.1%}",
                "above its high end": f"{g.above90.mean():.1%}",
                "median width 80 %": f"{g.width80.median():.2f}",
                "median width 90 %": f"{g.width90.median():.2f}",
            }
        )
    return pd.DataFrame(rows)


def reliability(cal, test, gpus, models, n_cal, drift, as_of) -> pd.DataFrame:
    """Observed coverage on the test rows at each nominal level of ``CURVE``, by kind, each
    level's table built by the same rule from the calibration rows."""
    rows = []
    for level in CURVE:
        lo, hi = (100 - level) / 2, (100 + level) / 2
        mapping = table_mapping(
            cal, gpus, models, n_cal, "", drift, as_of, lows=(lo, lo), highs=(hi, hi)
        )
        tab = ivt.parse_table(mapping, "reliability")
        cov = coverage(test, tab)  # q05..q95 all hold this level's ends
        for kind, g in [("all", cov), *cov.groupby("kind")]:
            rows.append({"nominal": level, "kind": kind, "observed": g.in90.mean()})
    return pd.DataFrame(rows)


def draw(curve: pd.DataFrame, path: str, n_test: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 5.4), layout="constrained")
    ax.plot([0, 100], [0, 100], color="grey", ls="--", lw=1, label="perfect calibration")
    for kind, g in curve.groupby("kind", sort=False):
        lw = 2.4 if kind == "all" else 1.4
        ax.plot(g.nominal, 100 * g.observed, marker="o", lw=lw, label=kind)
    ax.axhspan(85, 95, xmin=0.85, xmax=0.95, color="tab:green", alpha=0.25, label="goal at 90 %")
    ax.set_xlabel("nominal interval level, %")
    ax.set_ylabel("measured results inside the interval, %")
    ax.set_xlim(0, 100)
    ax.set_ylim(0, 100)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", fontsize=9)
    ax.set_title(
        f"Interval reliability on {n_test} newer MLPerf figures\n"
        "(calibrated on v5.0, measured on v5.1-v6.1)",
        fontsize=10,
    )
    fig.savefig(path, dpi=120)
    print(f"wrote {path}", file=sys.stderr)


def _measured(name: str) -> dict:
    """The resolved rows of tests/data/``name`` by row number (a ``.gz`` file read through a
    decompressed copy: ``load_measured`` reads text)."""
    import gzip
    import tempfile

    from inference_econ.measured.reading import load_measured

    path = ROOT / "tests" / "data" / name
    if name.endswith(".gz"):
        with tempfile.NamedTemporaryFile("wb", suffix=".csv", delete=False) as f:
            f.write(gzip.decompress(path.read_bytes()))
        try:
            return {r.row: r for r in load_measured(f.name)}
        finally:
            Path(f.name).unlink()
    return {r.row: r for r in load_measured(path)}


#: An MLPerf result's system: the folder its submitter's results are under.
SYSTEM = re.compile(r"/results/([^/]+)/")


def configuration(file: str, row) -> str:
    """The configuration a measured row's figure is of: its source's model, GPU and count,
    precision, layout, engine and version, lengths and scenario, and an MLPerf result's system
    (two systems of one submitter are two configurations; not its load, nor its metric: a
    concurrency sweep, and a run's mean and p99, are one configuration's figures)."""
    lengths = (row.lengths.input_mean, row.lengths.output_mean) if row.lengths else None
    system = SYSTEM.search(str(row.source or ""))
    parts = (file, row.group, system[1] if system else "", row.model_text, row.gpu.name)
    parts += (row.gpus, row.bits, row.layout)
    return repr((*parts, row.engine, row.engine_version, lengths, row.scenario))


def with_classes(res: pd.DataFrame) -> pd.DataFrame:
    """The residual rows with their calibration class (``layout``, ``generation``,
    ``engine`` beside ``architecture`` and ``scenario``: ``measured.intervals.row_class``,
    from each row of its measured file), their ``configuration``, their ``dataset`` (MLPerf, silicon or engine
    tables) and their ``round`` (an MLPerf publication round; ``silicon fit`` or ``silicon test``;
    ``engine tables``)."""
    from inference_econ.measured.intervals import row_class

    out = res.copy()
    cols: dict[str, list] = {"layout": [], "generation": [], "engine": []}
    rows = {f: _measured(f) for f in res.file.unique()}
    configurations = []
    for t in res.itertuples():
        row = rows[t.file][t.row]
        c = row_class(row, t.kind)
        for name in cols:
            cols[name].append(getattr(c, name))
        configurations.append(configuration(t.file, row))
    for name, values in cols.items():
        out[name] = values
    out["configuration"] = configurations
    silicon = (out.file == SILICON).to_numpy()
    tables = out.file.astype(str).str.startswith(TABLES).to_numpy()
    out["dataset"] = np.where(silicon, "silicon", np.where(tables, ENGINE_TABLES, "MLPerf"))
    found = out.source.astype(str).str.extract(ROUND.pattern, expand=False)
    out["round"] = "v" + found.fillna("?")
    if silicon.any():
        out.loc[silicon, "round"] = "silicon " + out.loc[silicon, "split"].astype(str)
    out.loc[tables, "round"] = ENGINE_TABLES
    return out


CLASS_KEYS = ["kind", *sp.DIMENSIONS]


def class_mapping(cal: pd.DataFrame, drift, rounds: int, residuals_files=()) -> dict:
    """The class table of calibration residuals ``cal``: every class's counts of residuals and
    configurations, and the conformal band of each with residuals of at least
    ``CLASS_MIN_ROWS`` configurations, and the models of each; the drift counted ``rounds``
    after the newest calibration round."""
    entries = []
    for key, part in cal.groupby(CLASS_KEYS, sort=True):
        entry = dict(zip(CLASS_KEYS, key))
        configurations = part.configuration.nunique()
        if configurations >= CLASS_MIN_ROWS:
            q = percentiles(part.r.to_numpy(), (5, 10), (90, 95))
            entry.update({f"q{p:02d}": round(float(v), 4) for p, v in zip(PERCENTILES, q)})
        entry["rows"] = len(part)
        entry["configurations"] = configurations
        entry["models"] = sorted(str(m) for m in part.model.unique())
        entries.append(entry)
    newest = max(cal["round"], key=lambda r: ROUNDS.index(r) if r in ROUNDS else -1)
    files = " ".join(residuals_files) or "docs/validation_residuals.csv"
    counts = cal.groupby("dataset")["round"]
    residuals = "; ".join(
        f"{n}: {len(g)} out-of-sample figures ({', '.join(sorted(g.unique()))})" for n, g in counts
    )
    mapping = {
        "provenance": {
            "residuals": f"{files}: {residuals}",
            "classes": "measured.intervals.row_class of each residual's row in tests/data",
            "licence": "derived from " + "; ".join(SOURCES[n] for n, _ in counts),
            "method": "split-conformal predictive system (crepes), Mondrian by class, no "
            "smoothing; quantiles of log(measured / predicted)",
            "command": f"python benchmarks/interval_coverage.py {files} --write-classes",
            "date": datetime.date.today().isoformat(),
        },
        "min_rows": CLASS_MIN_ROWS,
        "min_models": CLASS_MIN_MODELS,
        "widening": 1.0,  # fitted below (``widened``)
        "drift": {
            kind: {
                "log_per_round": round(drift[0], 4),
                "rounds": rounds,
                "calibration_round": newest,
                "source": "as intervals/achievable.yaml's",
            }
            for kind in DRIFT_KINDS
        },
        "pooled": {
            kind: {
                **{
                    f"q{p:02d}": round(float(v), 4)
                    for p, v in zip(PERCENTILES, percentiles(g.r.to_numpy(), (5, 10), (90, 95)))
                },
                "rows": len(g),
            }
            for kind, g in cal.groupby("kind", sort=True)
        },
        "classes": entries,
    }
    return widened(mapping, cal)


def widened(mapping: dict, cal: pd.DataFrame) -> dict:
    """The class table ``mapping`` with its widening factors fitted on its own calibration
    residuals ``cal``, each class left out in turn (``class_widening``): per kind, the nearest
    classes' factor per dimension and the pooled band's."""
    table = sp.parse_classes(mapping, "the table being written")
    mapping["widening"] = cw.nearest_widening(table, cal, CLASS_KEYS)
    pooled = cw.pooled_widening(cal, CLASS_KEYS, percentiles, CLASS_MIN_ROWS)
    for kind, factor in pooled.items():
        mapping["pooled"][kind]["widening"] = factor
    return mapping


def class_coverage(test: pd.DataFrame, table: sp.ClassTable, rounds: int | None) -> pd.DataFrame:
    """Each test row with its class's support, whether its interval holds it, and widths."""
    rows = []
    for t in test.itertuples():
        cls = sp.CalibrationClass(*(getattr(t, k) for k in CLASS_KEYS), str(t.model))
        support = table.support(cls)
        per_round, as_of = table.drift.get(t.kind, (0.0, 0.0))
        band = support.band.drifted(per_round * (as_of if rounds is None else rounds))
        out = {"kind": t.kind, "class": cls.label(), "status": support.status, "round": t.round}
        out["dataset"] = t.dataset
        for level in iv.LEVELS:
            lo_q, hi_q = (getattr(band, q) for q in ivt.QUANTILES[level])
            out[f"in{level}"] = lo_q <= t.r <= hi_q
            out[f"width{level}"] = np.exp(hi_q) - np.exp(lo_q)
        rows.append(out)
    return pd.DataFrame(rows, index=test.index)


def rolling_origin(
    res: pd.DataFrame, drift, silicon_fit: bool = False, tables: bool = True
) -> pd.DataFrame:
    """Every MLPerf residual of a round after the first predicted from the class table of the
    MLPerf rounds before it (``silicon_fit``: and the silicon fit rows), every silicon test
    residual from the table of every MLPerf round and the silicon fit rows, every engine-table
    residual from the table of every other residual but its model's tables (one page: no
    order in time within it, and no round of drift): never from itself, the others with one
    round of drift. ``tables`` False: not the engine tables."""
    mlperf, fit = res[res.dataset == "MLPerf"], res[res["round"] == "silicon fit"]
    parts = []
    order = [r for r in ROUNDS if r in set(mlperf["round"])]
    for k, name in enumerate(order[1:], start=1):
        cal = mlperf[mlperf["round"].isin(order[:k])]
        cal = pd.concat([cal, fit]) if silicon_fit else cal
        table = sp.parse_classes(class_mapping(cal, drift, 1), f"rounds before {name}")
        parts.append(class_coverage(mlperf[mlperf["round"] == name], table, None))
    test = res[res["round"] == "silicon test"]
    if len(test) and len(mlperf):
        cal = pd.concat([mlperf, fit])
        table = sp.parse_classes(class_mapping(cal, drift, 1), "MLPerf and silicon fit")
        parts.append(class_coverage(test, table, None))
    table_rows = res.dataset == (ENGINE_TABLES if tables else None)
    for model in sorted(res.loc[table_rows, "model"].unique()):
        own = table_rows & (res.model == model)
        table = sp.parse_classes(class_mapping(res[~own], drift, 0), f"all but {model}'s tables")
        parts.append(class_coverage(res[own], table, None))
    return pd.concat(parts)


def leave_one_source_out(res: pd.DataFrame, drift) -> pd.DataFrame:
    """Every residual of one source predicted from the class table of the other sources alone
    (silicon from MLPerf and the engine tables, and so on), with one round of drift: figures of
    a kind of configuration the table's sources never measured."""
    parts = []
    for held in ("silicon", "MLPerf", ENGINE_TABLES):
        cal, test = res[res.dataset != held], res[res.dataset == held]
        if len(cal) and len(test):
            table = sp.parse_classes(class_mapping(cal, drift, 1), f"all but {held}")
            parts.append(class_coverage(test, table, None))
    return pd.concat(parts) if parts else pd.DataFrame()


def coverage_table(groups) -> pd.DataFrame:
    """Coverage at 80 and 90 %, median widths and count of each (name, rows) group."""
    return pd.DataFrame(
        [
            {
                "figures": name,
                "n": len(g),
                "in 80 %": f"{g.in80.mean():.1%}",
                "in 90 %": f"{g.in90.mean():.1%}",
                "median width 80 %": f"{g.width80.median():.2f}",
                "median width 90 %": f"{g.width90.median():.2f}",
            }
            for name, g in groups
            if len(g)
        ]
    )


def print_rolling_origin(res, table, drift, fmt) -> None:
    """The rolling-origin coverage of the class rule by kind, status, round, layout and source,
    against the stratum table's (each row with the drift from v5.0 to its round) on the same
    rows; then by class, and each source predicted from the other's table alone."""
    roll = rolling_origin(res, drift)
    before = coverage(res.loc[roll.index], table).set_index(roll.index)
    groups = []
    splits = [
        ("dataset", roll["dataset"]),
        ("kind", roll["dataset"] + " " + roll["kind"]),
        ("status", roll["dataset"] + " " + roll["status"]),
        ("round", roll["round"]),
        ("layout", roll["class"].str.split(" / ").str[1]),
    ]
    for _, by in splits:
        for name, g in roll.groupby(by):
            groups += [(f"{name}: stratum table", before.loc[g.index]), (f"{name}: classes", g)]
    groups += [("all: stratum table", before), ("all: classes", roll)]
    title = (
        "Rolling origin: each MLPerf round predicted from the MLPerf rounds before it (v5.1 from "
        "v5.0, v6.0 from v5.0-v5.1, v6.1 from v5.0-v6.0), the silicon test runs from every MLPerf "
        "round and the silicon fit runs, each model's engine-table figures from every other "
        "residual; the class rule against the stratum table"
    )
    print(render(coverage_table(groups), fmt, title=title))
    cols = ["dataset", "kind", "class", "status"]
    by = [(f"{d} {k}: {c} ({s})", g) for (d, k, c, s), g in roll.groupby(cols)]
    print(render(coverage_table(by), fmt, title="Rolling origin by class (source kind: class)"))
    both = rolling_origin(
        res[res["round"] != "silicon test"], drift, silicon_fit=True, tables=False
    )
    groups = [(f"MLPerf {k}", g) for k, g in both.groupby("kind")]
    groups += [(f"MLPerf {s}", g) for s, g in both.groupby("status")] + [("MLPerf all", both)]
    print(render(coverage_table(groups), fmt, title="MLPerf rounds from the MLPerf rounds "
                 "before them and the silicon fit runs (what the shipped table adds)"))  # fmt: skip
    loso = leave_one_source_out(res, drift)
    if len(loso):
        groups = [
            (f"{d} {k} ({s})", g) for (d, k, s), g in loso.groupby(["dataset", "kind", "status"])
        ]
        groups += [(f"{d} {k}", g) for (d, k), g in loso.groupby(["dataset", "kind"])]
        groups += [(f"{d} all", g) for d, g in loso.groupby("dataset")]
        print(render(coverage_table(groups), fmt, title="Leave one source out: each source "
                     "predicted from the other sources' class table alone"))  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "residuals",
        nargs="+",
        help="residual CSVs: measured_validation.py --residuals or compare_residuals.py output "
        "(MLPerf; the engine tables), silicon_runs_judge.py --residuals (AIConfigurator's runs)",
    )
    parser.add_argument("--write", action="store_true", help=f"rewrite {TABLE.relative_to(ROOT)}")
    parser.add_argument(
        "--write-classes",
        action="store_true",
        help=f"rewrite {CLASS_TABLE.relative_to(ROOT)} only (from every round's residuals)",
    )
    parser.add_argument("--figure", help="draw the reliability curve here")
    parser.add_argument("--format", default="markdown", choices=("table", "markdown"))
    args = parser.parse_args()
    t0 = time.process_time()
    res = pd.concat([pd.read_csv(f) for f in args.residuals], ignore_index=True)
    res = res[np.isfinite(res.log_residual)]
    if args.write:
        gpus, models = fitted_sets(res)
    else:
        data = yaml.safe_load(TABLE.read_text())
        gpus, models = set(data["fitted_gpus"]), set(data["fitted_models"])
    families = {ivt.family(load_model(m)) for m in models}
    res = with_classes(with_strata(res, gpus, families))
    cal, test = res[res.file == CALIBRATION], res[res.file == TEST]
    seen_rounds = {f"v{m.group(1)}" for m in map(ROUND.search, test.source.astype(str)) if m}
    as_of = max((r for r in seen_rounds if r in ROUNDS), key=ROUNDS.index, default="v5.0")
    drift = software_drift()
    if args.write:
        mapping = table_mapping(cal, gpus, models, len(cal), args.residuals[0], drift, as_of)
        text = yaml.safe_dump(mapping, sort_keys=False, width=100, allow_unicode=True)
        TABLE.parent.mkdir(exist_ok=True)
        TABLE.write_text(HEADER + text)
        print(f"wrote {TABLE.relative_to(ROOT)}", file=sys.stderr)
        table = ivt.parse_table(mapping, str(TABLE))
    else:
        table = ivt.parse_table(yaml.safe_load(TABLE.read_text()), str(TABLE))
    print(f"Command: python benchmarks/interval_coverage.py {' '.join(sys.argv[1:])}\n")
    print(
        f"Calibration: {len(cal)} figures of {CALIBRATION}; test: {len(test)} figures of {TEST} "
        f"({int((~test.seen).sum())} outside coverage); table {table.path}\n"
    )
    print(
        f"Software drift: {drift[0]:+.4f} log per round on throughput's high end, from {drift[1]} "
        f"(GPU, model, scenario) results in MLPerf v4.1 and v5.0, to {as_of}; the table read "
        f"{'carries' if table.drift else 'does not carry'} it\n"
    )
    cov = coverage(test, table)
    print(
        render(
            summary(cov),
            args.format,
            title="Coverage on results neither the fit nor the calibration saw (each row with "
            "the drift up to its own round)",
        )
    )
    print(
        render(
            summary(coverage(test, table.__class__(**{**table.__dict__, "drift": {}}))),
            args.format,
            title="The same without the drift term",
        )
    )
    by = cov.groupby("stratum").agg(
        rows=("in90", "size"), in80=("in80", "mean"), in90=("in90", "mean")
    )
    by = by.reset_index().assign(
        in80=lambda d: d.in80.map("{:.1%}".format), in90=lambda d: d.in90.map("{:.1%}".format)
    )
    print(render(by, args.format, title="By the table entry each figure took"))
    shipped = pd.DataFrame(
        [
            {
                "stratum": b.source,
                "calibration rows": b.rows,
                "80 %": f"x{np.exp(b.q10):.2f} .. x{np.exp(b.q90):.2f}",
                "90 %": f"x{np.exp(b.q05):.2f} .. x{np.exp(b.q95):.2f}",
            }
            for b in table.strata.values()
        ]
    )
    print(render(shipped, args.format, title="The table: measured / predicted at each level"))
    print_rolling_origin(res, table, drift, args.format)
    mapping = class_mapping(res, drift, 0, args.residuals)  # the shipped table's
    title = (
        "Borrowed bands on the calibration residuals (a thin class's by the table, an in-support "
        "class's with it left out; each configuration weighing one): the fitted multipliers by "
        "distance, centred, against bands kept where their class puts them"
    )
    shares = cw.nearest_shares(sp.parse_classes(mapping, "every residual"), res, CLASS_KEYS)
    print(render(shares, args.format, title=title))
    if args.write or args.write_classes:
        text = yaml.safe_dump(mapping, sort_keys=False, width=100, allow_unicode=True)
        CLASS_TABLE.write_text(CLASS_HEADER + text)
        print(f"wrote {CLASS_TABLE.relative_to(ROOT)}", file=sys.stderr)
    if args.figure:
        curve = reliability(cal, test, gpus, models, len(cal), drift, as_of)
        draw(curve, args.figure, len(test))
    print(
        f"CPU: {time.process_time() - t0:.0f} s (PYTHONDONTWRITEBYTECODE=1: no compiled bytecode)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
