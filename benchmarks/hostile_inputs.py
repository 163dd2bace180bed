"""Hostile inputs to the newer paths: export, the benchmark tools' result files and measured
CSVs, capacity --demand, calibrate, study YAML and the public API, each case classed by what
came back (docs/errors.md).

    PYTHONPATH=. python benchmarks/hostile_inputs.py [--seed 0] [--timeout 60] [--quick]

Every case runs in this process (the command line through click's CliRunner), under a
per-case timer. Its class:

* ``traceback``: an exception that is not the toolkit's own (``InferenceEconError``; a
  Python ``TypeError`` of the call itself, a missing argument, counts as the call's error);
* ``hang``: the case ran past ``--timeout`` seconds of CPU (a whole ``calibrate`` of 80 rows
  takes about 30);
* ``garbage``: the output holds inf, nan or a number of 1e+100 or more;
* ``silently wrong``: an export whose checkpoint is no repository id (or not the one given),
  whose tensor degree is more than its GPUs, or that states 0.0 GB of weights; a measured CSV
  row that vanished (its line neither read nor named in an unresolved row's line span);
* ``ok``: a result, or one error line (exit 2, or 1 for nothing feasible).

The script prints the counts by class and area, and the first cases of each bad class.
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import math
import random
import re
import signal
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from click.testing import CliRunner  # noqa: E402

import inference_econ as ie  # noqa: E402
from inference_econ.cli import main  # noqa: E402
from inference_econ.errors import InferenceEconError  # noqa: E402
from inference_econ.specs import catalog  # noqa: E402
from inference_econ.specs.architecture import REPO_ID  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
RESULTS = ROOT / "tests" / "data" / "benchmark_results"
SAMPLE = ROOT / "tests" / "data" / "measured_public_sample.csv"
CLASSES = ("traceback", "hang", "garbage", "silently wrong", "ok")

#: Values a hostile caller gives a number (as text on the command line, or as JSON / Python).
TEXT_NUMBERS = ["0", "-1", "1.5", "nan", "inf", "-inf", "1e400", "1" * 400, "", "abc", "0x10",
                "1e-310", "--x", "1,5", " 8", "8\n", "\u0661", "2**20", "1e9", "-0"]  # fmt: skip
JSON_VALUES = [10**400, -(10**400), None, "x", "", [], {}, True, 1e308, -1, 0, 0.5, "1e999",
               "nan", [1, 2], {"a": 1}, 2**63, -1e-320]  # fmt: skip
PY_VALUES = [None, "", "nonsense", -1, 0, 1.5, math.nan, math.inf, 10**400, True, [], {},
             object(), b"x", ("a",), -(10**400), 2**64, "--x"]  # fmt: skip

GARBAGE = re.compile(r"(?<![\w.-])-?(inf|nan|NaN|Infinity)(?![\w-])|\d(\.\d+)?e\+?[1-9]\d\d\b")


class Hang(Exception):
    """The per-case timer (of CPU time) went off."""


def _alarm(*_):
    raise Hang()


class Tally:
    """The counts by area and class, and the first examples of each bad class."""

    def __init__(self) -> None:
        self.counts: Counter = Counter()
        self.examples: dict[str, list[str]] = {c: [] for c in CLASSES}

    def add(self, area: str, cls: str, label: str) -> None:
        self.counts[(area, cls)] += 1
        if cls != "ok" and len(self.examples[cls]) < 8:
            self.examples[cls].append(f"{area}: {label}"[:300])

    def report(self) -> str:
        areas = sorted({a for a, _ in self.counts})
        lines = [f"{'area':<16}" + "".join(f"{c:>16}" for c in CLASSES)]
        for a in areas:
            lines.append(f"{a:<16}" + "".join(f"{self.counts[(a, c)]:>16}" for c in CLASSES))
        total = {c: sum(n for (_, k), n in self.counts.items() if k == c) for c in CLASSES}
        lines.append(f"{'all':<16}" + "".join(f"{total[c]:>16}" for c in CLASSES))
        lines.append(f"{sum(total.values())} inputs")
        for c in CLASSES[:-1]:
            for e in self.examples[c]:
                lines.append(f"  {c}: {e}")
        return "\n".join(lines)


def run_case(tally: Tally, area: str, label: str, fn, timeout: float) -> None:
    """Run ``fn`` (returning its class, or "ok") under the timer, and count its class."""
    signal.setitimer(signal.ITIMER_PROF, timeout)  # CPU seconds: the machine may be shared
    try:
        cls = fn() or "ok"
    except Hang:
        cls = "hang"
    except InferenceEconError:
        cls = "ok"
    except TypeError as exc:  # the call's own TypeError (a missing argument) names it
        cls = "ok" if len(traceback.extract_tb(exc.__traceback__)) <= 2 else "traceback"
        label += f" -> {type(exc).__name__}: {exc}"
    except Exception as exc:
        cls = "traceback"
        label += f" -> {type(exc).__name__}: {exc}"
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
    tally.add(area, cls, label)


def cli(args: list[str], check=None):
    """A command line's class: a traceback, garbage in its output, what ``check`` says of a
    run that succeeded, or ok (one error line, exit 1 or 2)."""
    result = CliRunner().invoke(main, args)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    text = result.stdout + result.stderr
    if "Traceback" in text:
        return "traceback"
    if result.exit_code not in (0, 1, 2):
        return "traceback"
    if result.exit_code != 0:
        errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        return "ok" if len(errors) == 1 else "silently wrong"
    if GARBAGE.search(text.replace("--request-rate inf", "")):
        return "garbage"
    return check(result) if check else "ok"


# --- export -----------------------------------------------------------------------------------

EXPORT = ["--engine", "sglang", "--gpus", "8", "--batch", "8", "--prompt-tokens", "512",
          "--output-tokens", "64", "--assumptions", "paper", "--format", "json"]  # fmt: skip


def _launch_check(given_checkpoint: str | None):
    """What an export's table of workers (``--format json``) must hold: a checkpoint that is
    a repository id (or the one given), a tensor degree within its GPUs, weights of more than
    0.0 GB per GPU."""

    def check(result):
        text = result.stdout
        ckpt = re.search(r'"checkpoint":\s*("(?:[^"\\]|\\.)*")', text)  # a JSON string
        if ckpt is None:
            return "ok"
        name = json.loads(ckpt.group(1))
        if given_checkpoint is not None:
            if name != given_checkpoint:
                return "silently wrong"
        elif not REPO_ID.match(name):
            return "silently wrong"
        if re.search(r'"weights_gb_per_gpu":\s*0\.0\b', text):
            return "silently wrong"
        tp = re.search(r'"parallelism":\s*"TP(\d+)', text)
        gpus = re.search(r'"gpus":\s*(\d+)', text)
        if tp and gpus and int(tp.group(1)) > int(gpus.group(1)):
            return "silently wrong"
        return "ok"

    return check


def export_cases(rng: random.Random, quick: bool):
    """(label, function) of the export cases: every shipped model; each option of a point,
    frontier, disagg and capacity plan given hostile text; GPU counts up to 2^20; hostile
    checkpoints (on one node and on two); options of other plans; an export over another into
    one folder."""
    models = [e.name for e in catalog.entries("models")]
    for m in models:
        yield (
            f"model {m}",
            lambda m=m: cli(["export", m, "-H", "H200", *EXPORT], _launch_check(None)),
        )
    options = ["--gpus", "--batch", "--prompt-tokens", "--output-tokens", "--max-model-len",
               "--weight-bits", "--kv-bits", "--prefill-gpus", "--speed", "--max-gpus",
               "--rate", "--requests", "--max-batch", "--step-tokens", "--slo-ttft-p99"]  # fmt: skip
    plans = {"point": [], "frontier": ["--pick", "fastest"], "disagg": [], "capacity": []}
    for flag in options:
        for value in TEXT_NUMBERS:
            for plan, extra in plans.items():
                if quick and rng.random() < 0.7:
                    continue
                base = [a for a in EXPORT]
                if plan in ("frontier", "capacity"):
                    base = [
                        a
                        for i, a in enumerate(base)
                        if not (
                            base[i - 1 : i] in (["--gpus"], ["--batch"])
                            or a in ("--gpus", "--batch")
                        )
                    ]
                args = ["export", "Llama 3 8B", "-H", "H100", *base, "--plan", plan, *extra]
                args += [flag, value]
                yield f"{' '.join(args[1:])}", lambda a=args: cli(a, _launch_check(None))
    for k in range(0, 21):
        args = ["export", "Llama 3 70B", "-H", "H100", *EXPORT]
        args[args.index("--gpus") + 1] = str(2**k)
        yield f"--gpus {2**k}", lambda a=args: cli(a, _launch_check(None))
    for ckpt in [
        "--help",
        "-x",
        "",
        " ",
        "org/model",
        "./local",
        "a\nb",
        "x" * 400,
        "--dtype=auto",
    ]:
        args = ["export", "Llama 3 8B", "-H", "H100", *EXPORT, "--checkpoint", ckpt]
        yield f"--checkpoint {ckpt!r}", lambda a=args, c=ckpt: cli(a, _launch_check(c))
    for ckpt in ['a/${NODE0}"; touch PWNED', "$(touch PWNED)", "`touch PWNED`", "a'b"]:
        # a plan over two nodes, whose launch script fills in the nodes' addresses
        args = ["export", "Llama 3 70B", "-H", "H100", *EXPORT, "--checkpoint", ckpt]
        args[args.index("--gpus") + 1] = "16"
        yield f"--gpus 16 --checkpoint {ckpt!r}", lambda a=args, c=ckpt: cli(a, _launch_check(c))
    yield "two exports into one folder", _two_exports


def _two_exports():
    """An export over another engine's into the same folder leaves none of the first's files."""
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "out")
        for engine in ("trtllm", "vllm"):
            args = ["export", "Llama 3 8B", "-H", "H100", *EXPORT, "--engine", engine, "--out", out]
            cls = cli(args)
            if cls != "ok":
                return cls
        return "silently wrong" if any(Path(out).glob("trtllm-*.yaml")) else "ok"


# --- result files -----------------------------------------------------------------------------


def _leaves(data, path=()):
    """(path, value) of every number of a JSON tree."""
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _leaves(v, (*path, i))
    elif isinstance(data, (int, float)) and not isinstance(data, bool):
        yield path, data


def _set(data, path, value):
    node = data
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value


def _read_rows(folder: Path, name: str):
    """Read a result file the way compare-measured does; garbage is a row of inf/nan."""
    from inference_econ.measured.reading import load_measured

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = load_measured(folder / name)
    for r in rows:
        if r.value is not None and not math.isfinite(r.value):
            return "garbage"
    return "ok"


def result_cases(rng: random.Random, quick: bool):
    """A vllm bench serve result, an aiperf result and the plan.json beside them, each number
    of each file set to each hostile JSON value in turn (and a null worker); InferenceX's
    collected summaries, each of their fields (numbers and names) likewise."""
    summaries = json.loads((RESULTS / "inferencex" / "agg_bmk.json").read_text())
    for path in [p for p, _ in _leaves(summaries)] + [
        (i, k) for i, run in enumerate(summaries) for k, v in run.items() if isinstance(v, str)
    ]:
        for value in JSON_VALUES:
            if quick and rng.random() < 0.9:
                continue
            yield (f"agg_bmk.json {path} = {value!r:.40}",
                   lambda p=path, v=value: _one_file("agg_bmk.json", summaries, {}, "result", p, v))  # fmt: skip
    plan = json.loads((RESULTS / "plan.json").read_text())
    files = {
        "vllm-bench-rate.json": json.loads((RESULTS / "vllm-bench-rate.json").read_text()),
        "profile_export_aiperf.json": json.loads(
            (RESULTS / "aiperf-rate" / "profile_export_aiperf.json").read_text()
        ),
    }
    for name, data in files.items():
        for target in ("result", "plan"):
            source = data if target == "result" else plan
            for path, _ in list(_leaves(source)):
                for value in JSON_VALUES:
                    if quick and rng.random() < 0.9:
                        continue
                    yield (f"{name} {target} {path} = {value!r:.40}",
                           lambda n=name, d=data, t=target, p=path, v=value: _one_file(n, d, plan, t, p, v))  # fmt: skip
        for bad in (None, 1, "x", []):
            yield (
                f"{name} plan workers[0] = {bad!r}",
                lambda n=name, d=data, b=bad: _one_file(n, d, plan, "plan", ("workers", 0), b),
            )


def _one_file(name, data, plan, target, path, value):
    data, plan = copy.deepcopy(data), copy.deepcopy(plan)
    _set(data if target == "result" else plan, path, value)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "plan.json").write_text(json.dumps(plan))
        (folder / name).write_text(json.dumps(data))
        return _read_rows(folder, name)


def csv_cases(rng: random.Random, quick: bool):
    """A measured CSV with a quote left open on a line (every line in turn, several seeds):
    no row may vanish without a word."""
    lines = SAMPLE.read_text().splitlines()
    for k in range(1, len(lines)):
        for where in ("notes", "source", "model"):
            yield (
                f"open quote on line {k + 1} ({where})",
                lambda k=k, w=where: _open_quote(lines, k, w),
            )
    packed = gzip.compress(SAMPLE.read_bytes())
    for _ in range(40 if not quick else 10):  # gzip-compressed, cut short or a byte flipped
        cut, flip = rng.randrange(1, len(packed)), rng.randrange(len(packed))
        flipped = packed[:flip] + bytes([packed[flip] ^ 0xFF]) + packed[flip + 1 :]
        yield f"gzip cut at byte {cut}", lambda c=cut: _gzip_rows(packed[:c])
        yield f"gzip byte {flip} flipped", lambda f=flipped: _gzip_rows(f)
    for n in range(300 if not quick else 60):
        big = [lines[0]] + [lines[1 + (i % (len(lines) - 1))] for i in range(60)]
        k = rng.randrange(1, len(big))
        yield (
            f"log of 60 rows, open quote on line {k + 1} (seed {n})",
            lambda b=big, k=k: _open_quote(b, k, "notes"),
        )


def _gzip_rows(data: bytes):
    """A measured CSV given gzip-compressed as ``data`` (cut short or with a byte flipped): one
    error, or every row the intact file reads, the same."""
    from inference_econ.measured.reading import load_measured

    def statuses(path):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return [(r.row, r.status) for r in load_measured(path)]

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.csv.gz"
        path.write_bytes(data)
        got = statuses(path)  # an InferenceEconError is the case's "ok"
        return "ok" if got == statuses(SAMPLE) else "silently wrong"


def _open_quote(lines, k, where):
    """The line ``k`` of a CSV with its cell ``where`` opened by a quote never closed."""
    import csv

    from inference_econ.measured.reading import load_measured

    header = next(csv.reader([lines[0]]))
    cells = next(csv.reader([lines[k]]))
    i = header.index(where)
    # the cell opened with a quote that is never closed on its line
    cells[i] = '"' + cells[i].replace('"', "")
    broken = ",".join(c if c.startswith('"') else (f'"{c}"' if "," in c else c) for c in cells)
    body = lines[:k] + [broken] + lines[k + 1 :]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.csv"
        path.write_text("\n".join(body) + "\n")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rows = load_measured(path)
    named = set()
    for r in rows:
        span = re.search(r"runs over lines (\d+)-(\d+)", r.status)
        named |= set(range(int(span[1]), int(span[2]) + 1)) if span else {r.row}
    data_lines = set(range(2, len(body) + 1))
    return "ok" if data_lines <= named else "silently wrong"


# --- demand, calibrate, study ----------------------------------------------------------------


def demand_cases(rng: random.Random, quick: bool):
    """Demand curves (a CSV of hours) with hostile peaks and rates, read; the reserved-count
    search over peaks of up to 10^9 instances; a few whole ``capacity --demand`` runs."""
    from inference_econ.load.demand import load_demand
    from inference_econ.optimise.demand import Prices, hourly_plan

    rates = ["1e8", "1e9", "1e10", "-1", "nan", "inf", "x", "", "1" * 400, "1e-320", "0", "5"]
    for hours in (1, 24, 168):
        for rate in rates:
            for at in ("first", "last", "all"):
                yield (
                    f"demand {hours} hours, {at} = {rate}",
                    lambda h=hours, r=rate, a=at: _demand_file(load_demand, h, r, a),
                )
    prices = Prices(2.0, 4.0, 1.0, "owned", "on-demand")
    for peak in [10**k for k in range(0, 10)]:
        for spot in (None, 0.1):
            needed = [1] * 23 + [peak]
            yield (
                f"reserved search, peak {peak:g} instances, spot {spot}",
                lambda n=needed, s=spot: _plan_check(hourly_plan, n, prices, s),
            )
    for peak in ("1e8", "1e9") if not quick else ("1e9",):
        yield f"capacity --demand peak {peak}", lambda p=peak: _capacity_demand(p)


def _demand_file(load_demand, hours, rate, at):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "d.csv"
        rows = ["hour,requests_per_s"]
        for h in range(hours):
            chosen = at == "all" or (at == "first" and h == 0) or (at == "last" and h == hours - 1)
            rows.append(f"{h},{rate if chosen else 10}")
        path.write_text("\n".join(rows) + "\n")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            curve = load_demand(path)
        peak = float(curve.requests_per_s.max())
        return "garbage" if not math.isfinite(peak) else "ok"


def _plan_check(hourly_plan, needed, prices, spot):
    """The breakpoint search finds the cost of the exhaustive one where that is cheap."""
    import numpy as np

    best = hourly_plan(np.array(needed), 1, prices, spot)
    if not math.isfinite(best["total_usd"]):
        return "garbage"
    return "ok"


def _capacity_demand(peak):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "d.csv"
        path.write_text(
            "hour,requests_per_s\n"
            + "".join(f"{h},{peak if h == 12 else 100}\n" for h in range(24))
        )
        return cli(["capacity", "Llama 3 8B", "-H", "H100", "--demand", str(path), "--prompt-tokens", "500",
                    "--output-tokens", "100", "--slo-tpot-p99", "0.1", "--requests", "300", "-q"])  # fmt: skip


def calibrate_cases(rng: random.Random, quick: bool):
    """calibrate on the first 0 to 3 rows of a measured CSV, on one with an open quote, and
    on 80 training rows with one column set to a hostile value in every row."""
    import csv
    import io

    lines = SAMPLE.read_text().splitlines()
    for n in (0, 1, 2, 3) if not quick else (1, 2):
        yield f"calibrate on {n} rows", lambda n=n: _calibrate("\n".join(lines[: n + 1]) + "\n")
    yield (
        "calibrate on an open quote",
        lambda: _calibrate("\n".join(lines[:2] + [lines[2][:-1]] + lines[3:]) + "\n"),
    )
    train = (ROOT / "tests" / "data" / "benchmarks_train.csv").read_text()
    header, *rows = list(csv.reader(io.StringIO(train)))[:81]
    hostile = {"value": ["1e300", "1e-300", "nan", "-5"], "input_len": ["1e12", "1e9", "0"],
               "output_len": ["1e12", "1"], "batch_or_concurrency": ["1e9", "0.5"],
               "n_gpus": ["1048576", "3"], "hardware": ["", "H100"], "model": ["Llama 3 8B"]}  # fmt: skip
    for column, values in hostile.items():
        for value in values:
            if quick and rng.random() < 0.8:
                continue
            edited = [[value if h == column else c for h, c in zip(header, r)] for r in rows]
            buf = io.StringIO()
            csv.writer(buf).writerows([header, *edited])
            text = buf.getvalue()
            yield f"calibrate, every {column} = {value}", lambda t=text: _calibrate(t)


def _calibrate(text):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "c.csv"
        path.write_text(text)
        return cli(["calibrate", str(path), "--no-holdout"])


def study_cases(rng: random.Random, quick: bool):
    """Study mappings with hostile axes: long (up to 100,000 values), nested, of the wrong
    type, repeated values, unknown fields; and --dask addresses with nothing to compute (a
    study's, and compare-measured's, whose rows are never read)."""
    from inference_econ.studies.study import study_from_dict

    base = {"title": "t", "axes": {"model": ["Llama 3 8B"], "hardware": ["H100"]}}
    axes = [("context_tokens", v) for v in PY_VALUES + [list(range(1, 101)), list(range(100_000)),
            [[1, 2]], [{"a": 1}], [1, 1], [1, 1.0], [None], ["1e400"], [10**400]]]  # fmt: skip
    axes += [("weight_bits", [v]) for v in PY_VALUES] + [("mine", [v]) for v in PY_VALUES]
    axes += [(k, [1] * 10) for k in ("model", "hardware", "draft")]
    for name, value in axes:
        data = copy.deepcopy(base)
        data["axes"][name] = value
        yield (
            f"study axis {name} = {value!r:.40}",
            lambda d=data: (study_from_dict(d, "s.yaml"), "ok")[1],
        )
    for top in ("axes", "defaults", "exclude", "summary", "at_speeds", "title"):
        for value in PY_VALUES:
            data = copy.deepcopy(base)
            data[top] = value
            yield (
                f"study {top} = {value!r:.40}",
                lambda d=data: (study_from_dict(d, "s.yaml"), "ok")[1],
            )
    for address in ("nonsense", "tcp://", "host:99999999", "", "local x", "--x"):
        yield f"study --dask {address!r}", lambda a=address: _dask(a)
    for address in ("nonsense", "tcp://", "", "local x", 8786, "tcp://host:8786"):
        yield f"compare-measured --dask {address!r} --jobs 2", lambda a=address: _dask(a, True)


def _dask(address, measured: bool = False):
    """``ie.study`` (``measured``: ``compare_measured`` of a small file, with two processes a
    running scheduler would ignore) with a --dask address that cannot name a scheduler is
    refused."""
    try:
        if measured:
            ie.compare_measured(DATA / "measured_public_sample.csv", jobs=2, dask=address)
        else:
            study = {"title": "t", "axes": {"model": ["Llama 3 8B"], "hardware": ["H100"]}}
            ie.study(study, dask=address)
    except InferenceEconError:
        return "ok"
    return "silently wrong"


# --- fleet files and CSV read-back -----------------------------------------------------------

FLEET = {
    "hardware": "H100",
    "defaults": {"engine": "vllm", "weight_bits": 8, "requests": 100, "input_lengths": "300",
                 "output_lengths": "20", "slo_ttft_p99_s": 1, "slo_tpot_p99_s": 0.05},
    "models": [{"name": "a", "model": "Qwama 0.5B", "arrival_rate_per_s": 2}],
}  # fmt: skip
#: Names a user may give that are CSV syntax: a comment, a section opening, quotes and commas
#: (a leading "=" is written with a quote before it on purpose: output/render.safe_cell).
CSV_NAMES = ["chat#2", "Table gpus: x", 'a,"b', "# x", "Table x", " lead", "Table x:"]


def fleet_cases(rng: random.Random, quick: bool):
    """A fleet file's top and per-model ``hardware`` (and the API's ``hardware``) given each
    hostile value; tables whose names are CSV syntax written and read back."""
    values = [v for v in JSON_VALUES if not quick or rng.random() < 0.5]
    for where in ("top", "model"):
        for value in values:
            yield f"fleet {where} hardware = {value!r:.30}", lambda w=where, v=value: _fleet(w, v)
    for value in PY_VALUES[:8]:
        yield f"ie.fleet_plan(hardware={value!r:.30})", lambda v=value: _fleet_api(v)
    for name in CSV_NAMES:
        yield f"CSV read-back of {name!r}", lambda n=name: _csv_read_back(n)


def _fleet(where: str, value):
    data = copy.deepcopy(FLEET)
    (data if where == "top" else data["models"][0])["hardware"] = value
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fleet.yaml"
        path.write_text(json.dumps(data))  # JSON is YAML
        return cli(["capacity", "--fleet", str(path), "-q"])


def _fleet_api(value):
    try:
        ie.fleet_plan(copy.deepcopy(FLEET), hardware=value)
    except InferenceEconError:
        return "ok"
    return "ok" if not value else "silently wrong"


def _csv_read_back(name: str):
    """A table, a further table and a note naming ``name``: pandas (comment="#") reads the
    main table back as written, ``csv_tables`` the further one."""
    import io

    import pandas as pd

    from inference_econ.output.render import csv_tables, render

    main_ = pd.DataFrame({"model": [name, "b"], "gpus": [1, 2]})
    text = render(main_, "csv", notes=[f"{name}: a note"], tables={"t": ("T", main_)})
    back = pd.read_csv(io.StringIO(text), comment="#", keep_default_na=False)
    tables = csv_tables(text)
    same = back.to_dict("list") == main_.to_dict("list")
    return "ok" if same and list(tables) == ["t"] and len(tables["t"]) == 2 else "silently wrong"


# --- the public API --------------------------------------------------------------------------

#: Valid arguments of the public functions whose work is cheap once an argument is refused;
#: each case replaces one of them with a hostile value.
API_CALLS = {
    "mtp_heads": dict(model="DeepSeek-V3", acceptance=0.8, max_depth=2, branching=1),
    "eagle_head": dict(model="Llama 3 8B", acceptance=0.7, max_depth=2, branching=1, layers=1),
    "make_traffic": dict(rate_per_s=2.0, input_lengths="100", output_lengths="10", requests=200),
    "Targets": dict(ttft_p99_s=1.0, tpot_p99_s=0.1, e2e_p99_s=None),
    "point": dict(model="Llama 3 8B", hardware="H100", gpus=1, batch=1),
    "model_summary": dict(model="Llama 3 8B", hardware="H100"),
    "hardware_summary": dict(hardware="H100"),
    "load_model": dict(name_or_path="Llama 3 8B"),
    "load_hardware": dict(name_or_path="H100"),
    "load_inputs": dict(settings={}, traffic=None, targets=None, config=None),
    "load_demand": dict(path=str(ROOT / "scenarios" / "demand" / "chat-day.csv")),
    "load_observations": dict(name_or_path="paper-2025"),
    "list_specs": dict(kind="models"),
    "spec_kind": dict(name_or_path="Llama 3 8B"),
    "export": dict(
        model="Llama 3 8B",
        hardware="H100",
        engine="vllm",
        gpus=1,
        batch=1,
        prompt_tokens=64,
        output_tokens=8,
        assumptions="paper",
    ),  # fmt: skip
    "max_load": dict(
        model="Llama 3 8B",
        hardware="H100",
        gpus=1,
        input_lengths="64",
        output_lengths="8",
        slo_tpot_p99_s=0.05,
        requests=300,
        curve_points=0,
    ),  # fmt: skip
}


def api_cases(rng: random.Random, quick: bool):
    """Each argument of each call above given each hostile Python value; then every public
    function called with each hostile value as its first argument alone."""
    from inference_econ import api

    for name, kwargs in API_CALLS.items():
        fn = getattr(ie, name) if name in ie.__all__ else getattr(api, name)
        for arg in kwargs:
            for value in PY_VALUES:
                call = {**kwargs, arg: value}
                yield f"ie.{name}({arg}={value!r:.30})", lambda f=fn, c=call: (f(**c), "ok")[1]
    for name in sorted(ie.__all__):
        fn = getattr(ie, name)
        if not callable(fn) or isinstance(fn, type) and issubclass(fn, BaseException):
            continue
        if name in (
            "import_hf_repo",
            "study",
            "frontier_plot",
            "demand_figure",
            "latency_load_figure",
        ):
            continue  # the network, or work that runs before the first check of a figure
        for value in PY_VALUES:
            yield f"ie.{name}({value!r:.30})", lambda f=fn, v=value: (f(v), "ok")[1]


AREAS = {
    "export": export_cases,
    "result files": result_cases,
    "measured csv": csv_cases,
    "demand": demand_cases,
    "calibrate": calibrate_cases,
    "study": study_cases,
    "fleet": fleet_cases,
    "api": api_cases,
}


def main_(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=60.0, help="CPU seconds per case")
    parser.add_argument("--quick", action="store_true", help="a sample of each area")
    parser.add_argument("--area", action="append", choices=sorted(AREAS))
    args = parser.parse_args(argv)
    signal.signal(signal.SIGPROF, _alarm)
    warnings.simplefilter("ignore")
    tally = Tally()
    start = time.perf_counter()
    for area in args.area or AREAS:
        rng = random.Random(f"{args.seed}:{area}")
        for label, fn in AREAS[area](rng, args.quick):
            run_case(tally, area, label, fn, args.timeout)
    print(tally.report())
    print(f"{time.perf_counter() - start:.0f} s")
    bad = sum(n for (_, c), n in tally.counts.items() if c != "ok")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main_())
