"""What a calibration reports: its result (``Calibration``: the fitted terms, errors in
sample, with the priors only and left out by source), the profile file ``calibrate -o``
writes, and the rows of a measured file it does not use, with why (warned, or one error when
no row is usable).
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass

from ..errors import SpecError, _shown, expect, plural, warn
from ..specs.engine import EngineProfile, profile_yaml
from .closed_forms import predictable
from .priors import MICRO_PRIORS, MICRO_ROWS_PER_TERM, Prior, engine_specific


@dataclass(frozen=True)
class TermFit:
    """One term after a fit: value and standard error, or why it was not fitted."""

    key: str
    value: float
    standard_error: float | None
    prior: Prior
    fitted: bool
    note: str = ""


@dataclass(frozen=True)
class Calibration:
    """The fitted terms of an engine profile, its errors in sample, with the priors only and
    left out by source, and the rows used."""

    engine: str
    terms: tuple[TermFit, ...]
    rows: int
    sources: tuple[str, ...]
    in_sample: dict
    prior_only: dict
    held_out: dict  # pooled leave-one-source-out errors
    by_source: tuple  # (source, rows, median, p90, bias) left out
    predictions: object  # DataFrame: row, source, measured, prior, fitted, held_out
    dropped_duplicates: int
    source: str
    seconds: float
    notes: tuple[str, ...] = ()
    #: Terms fitted to micro-benchmarks: {term: (value, standard error)}.
    micro: tuple = ()
    #: (column, value) the command line stated for the rows that state none (``--hardware``,
    #: ``--gpus``, ``--precision``, ``--model``), and the leave-one-out split: the fit's command
    #: repeats them.
    stated: tuple = ()
    split: str = "source"

    def profile(self, base: EngineProfile, name: str | None = None) -> EngineProfile:
        """The base profile with the fitted terms of ``self.engine`` (shared ones and its own)."""
        values = {k: v for k, (v, _) in self.micro}
        errors = dict(base.standard_errors)
        errors.update({k: e for k, (_, e) in self.micro})
        for t in self.terms:
            if not t.fitted or (t.prior.engine not in (None, self.engine)):
                continue
            if t.prior.engine is None and engine_specific(t.prior.term, self.engine, self.engine):
                continue
            values[t.prior.term] = t.value
            errors[t.prior.term] = t.standard_error
        return base.replace(
            name=name or f"{base.name} (calibrated)",
            standard_errors=errors,
            fit=self.fit_summary(),
            **values,
        )

    def fit_summary(self) -> dict:
        return {
            "data": f"{self.source}: {self.rows} end-to-end rows with status ok, "
            f"{plural_count(len(self.sources), 'source')}",
            "leave_one_source_out": _pair(self.held_out, ", ", "median |error| ", "p90 "),
            "in_sample": f"median |error| {self.in_sample['median']:.3f}, p90 {self.in_sample['p90']:.3f}",
            "command": self.command(),
        }

    def command(self) -> str:
        """The command that fits these terms again: the file, the engine, and the options that
        stated the rows' GPU, GPU count, precision or model (without them a plain result's
        rows are unresolved) and the split."""
        words = ["inference-econ", "calibrate", self.source, "--engine", self.engine]
        for column, value in self.stated:
            words += [STATED_OPTIONS[column], str(value)]
        if self.split != "source":
            words += ["--split", self.split]
        return shlex.join(words)


#: The measured column a command-line option states for the rows that state none.
STATED_OPTIONS = {
    "hardware": "--hardware",
    "n_gpus": "--gpus",
    "precision": "--precision",
    "model": "--model",
}


def plural_count(count: int, noun: str) -> str:
    """ "1 source", "3 sources"."""
    return f"{count} {plural(count, noun)}"


def _pair(errors: dict, sep: str, median: str = "", p90: str = "") -> str:
    """A median and p90 error as a profile's file states them; "not run" when no source was
    left out (one source, or --no-holdout), never "nan"."""
    if not (math.isfinite(errors["median"]) and math.isfinite(errors["p90"])):
        return "not run"
    return f"{median}{errors['median']:.3f}{sep}{p90}{errors['p90']:.3f}"


# --- the rows calibration does not use ------------------------------------------------------


#: What each quantity of micro-benchmark rows measures, as the messages name it.
MICRO_KINDS = {
    "busbw": "all-reduce bus bandwidth",
    "stream": "streaming (HBM) bandwidth",
    "gemm_flops": "GEMM throughput",
}
#: The rows left out of a file that ``nothing_usable`` quotes, at most.
QUOTED_ROWS = 3


def _reason(status: str) -> str:
    """A row's status as the reason it is left out: "value 'abc' is not a number"."""
    return status.removeprefix("unresolved: ")


def rows_not_used(rows, engine_left_out=(), collective=None):
    """The rows of a measured file calibration does not use, in two kinds: (each row it
    cannot use: (line, reason), as ``compare-measured`` states its status), and {reason: lines}
    of the rows of a kind calibration does not fit by design: rows derived from another row
    (duplicate figures, predicted but never fitted), micro-benchmarks of a quantity it does not
    fit (``MICRO_PRIORS``: GEMM TFLOPS), or too few of one to fit its terms. ``collective``:
    the terms fitted to micro-benchmarks (None: every quantity of ``MICRO_PRIORS`` was);
    ``engine_left_out``: the end-to-end rows whose engine has no profile (``fit_problem.build_problem``)."""
    unusable, kinds = [], {}
    for r in rows:
        quantity = r.metric.quantity if r.metric is not None else None
        if r.kind == "micro" and quantity not in MICRO_PRIORS:
            what = MICRO_KINDS.get(quantity, f"{r.metric_text!r}")
            kinds.setdefault(
                f"micro-benchmarks of {what}, which calibration does not fit (it fits "
                "end-to-end rows and all-reduce and streaming bandwidth micro-benchmarks)",
                [],
            ).append(r.row)
        elif r.status.startswith("derived"):
            kinds.setdefault(
                "derived from another row of the file (predicted, left out of fits)", []
            ).append(r.row)
        elif not r.ok:
            unusable.append((r.row, _reason(r.status)))
        elif r.kind == "end-to-end" and not predictable(r):
            kinds.setdefault(
                "figures the model does not predict in their scenario (an end-to-end latency, "
                "say), out of scope in compare-measured",
                [],
            ).append(r.row)
        elif r.kind == "micro" and collective is not None:
            terms = [p.term for p in MICRO_PRIORS[quantity]]
            if not all(t in collective for t in terms):
                need = MICRO_ROWS_PER_TERM * len(terms)
                kinds.setdefault(
                    f"micro-benchmarks of {MICRO_KINDS.get(quantity, quantity)}, too few to fit "
                    f"{', '.join(terms)} (needs {need})",
                    [],
                ).append(r.row)
    unusable += [(line, _reason(why)) for line, why in engine_left_out]
    return sorted(unusable), kinds


def _lines(numbers, limit: int = 12) -> str:
    """Line numbers as runs: "65-76", "4, 9, 12-14" (the first ``limit`` runs, then "...")."""
    runs: list[list[int]] = []
    for n in sorted(numbers):
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    text = [f"{a}-{b}" if b > a else f"{a}" for a, b in runs[:limit]]
    return ", ".join(text) + (", ..." if len(runs) > limit else "")


def report_left_out(source: str, rows, engine_left_out=(), collective=None) -> None:
    """Warn of every row of ``source`` calibration leaves out: one line per row it cannot use
    with its reason (``MAX_ROW_WARNINGS`` of them, then one line counting the rest with their
    lines), and one line per kind of row it does not use by design (``rows_not_used``)."""
    from ..specs.inputs import MAX_ROW_WARNINGS

    unusable, kinds = rows_not_used(rows, engine_left_out, collective)
    shown = _shown(source)
    for line, why in unusable[:MAX_ROW_WARNINGS]:
        warn(f"{shown}: line {line}: {why}; the row is left out of the calibration")
    rest = unusable[MAX_ROW_WARNINGS:]
    if rest:
        warn(
            f"{shown}: {len(rest)} more {plural(len(rest), 'row')} left out of the calibration "
            f"(lines {_lines(line for line, _ in rest)}; 'inference-econ compare-measured "
            f"{shown}' gives each row's status)"
        )
    for why, lines in kinds.items():
        warn(f"{shown}: {plural_count(len(lines), 'row')} not used (lines {_lines(lines)}): {why}")


def nothing_usable(source: str, rows, engine_left_out=(), collective=None) -> SpecError:
    """The error of a file none of whose rows calibration can use: the file, how many rows
    of each kind it has and why they are left out (the first few unreadable rows' reasons)."""
    unusable, kinds = rows_not_used(rows, engine_left_out, collective)
    parts = []
    if unusable:
        quoted = "; ".join(f"line {line}: {why}" for line, why in unusable[:QUOTED_ROWS])
        more = f"; and {len(unusable) - QUOTED_ROWS} more" if len(unusable) > QUOTED_ROWS else ""
        parts.append(f"{plural_count(len(unusable), 'row')} left out ({quoted}{more})")
    parts += [
        f"{plural_count(len(lines), 'row')} {'is' if len(lines) == 1 else 'are'} {why}"
        for why, lines in kinds.items()
    ]
    if not rows:
        parts.append("the file has no rows")
    return SpecError(
        source,
        "",
        "no row calibration can use: " + ("; ".join(parts) or "no end-to-end row with status ok"),
        "give end-to-end rows with status ok; 'inference-econ compare-measured FILE' shows "
        "each row's status",
    )


def calibrated_yaml(result: Calibration, base: EngineProfile, name: str | None = None) -> str:
    """The profile file ``calibrate -o`` writes: derives from the base, fitted terms with
    their standard errors, how it was fitted."""
    expect(result, Calibration, "result", "a Calibration", "the result of ie.calibrate(path)")
    expect(base, EngineProfile, "base", "an engine profile", "e.g. ie.load_engine('trtllm')")
    prof = result.profile(base, name)
    fitted = dict(result.micro)
    fitted |= {
        t.prior.term: (t.value, t.standard_error)
        for t in result.terms
        if t.fitted
        and t.prior.engine in (None, result.engine)
        and not (
            t.prior.engine is None and engine_specific(t.prior.term, result.engine, result.engine)
        )
    }
    header = [
        f"Calibrated by 'inference-econ calibrate' on {result.source}: {result.rows} rows,",
        f"{plural_count(len(result.sources), 'source')}; median / p90 |predicted / measured - 1|: "
        f"in sample {result.in_sample['median']:.3f} / {result.in_sample['p90']:.3f}, left out by "
        f"source {_pair(result.held_out, ' / ')}.",
    ]
    return profile_yaml(prof, base.name, header, fitted)
