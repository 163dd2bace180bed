"""The optimiser: a setting and a method in, its Pareto frontier out (docs/model.md §A5-§A7).

Like ``scipy.optimize``, the problem (``serving.setting.Setting``), the method
(``method.Method``: the paper's grid, discrete layouts, or the exhaustive reference) and the
result (``frontier.Frontier``) are separate. ``frontier(setting, method)`` evaluates the best
layout at every grid point, prices it, applies the demand cap and the TTFT limit, extracts the
exact Pareto frontier and describes its points in full (layout, economics, breakdown).
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import math
import os
import threading
import time

import numpy as np

from ..errors import SpecError
from ..model.economics import priced_grid
from ..model.latency import model_inputs
from ..model.layouts import Layout, best_latency
from ..serving.decode import Decoder
from ..serving.setting import Setting, whole_batch_kv_note
from ..serving.speculative import combine
from .frontier import Frontier, FrontierColumns, near_pareto_indices, pareto_indices
from .grid import SEARCH_MARGIN, grid_latency
from .method import GRID, GRID_MAX_LOG2, SPEED_RANGE, Method

#: HBM per GPU that sets the step of the GPU-count axis: the paper's H100 (80 GB), so the paper's
#: grids are reproduced on 80 GB parts and the axis does not move with a GPU's memory.
GRID_REFERENCE_HBM_BYTES = 80e9


def gpu_lattice(weights_bytes: float, min_gpus: float, points: int) -> np.ndarray:
    """The GPU counts of the continuous grid (§A7), ``min_gpus`` first.

    ``points`` values log-spaced from ``weights_bytes / 80 GB`` up to 2^18 (the paper's grid
    on an 80 GB GPU), continued below with the same step down to ``min_gpus``. The step depends
    on the model, not on the GPU's memory: a GPU with more memory searches every count a
    smaller one does, so more HBM never makes the fastest point slower.
    """
    span = max(GRID_MAX_LOG2 - math.log2(weights_bytes / GRID_REFERENCE_HBM_BYTES), 1.0)
    step = span / (points - 1)
    k = np.arange(math.floor((GRID_MAX_LOG2 - math.log2(min_gpus)) / step + 1e-9) + 1)
    lattice = 2.0 ** (GRID_MAX_LOG2 - k[::-1] * step)
    return np.concatenate([[min_gpus], lattice[lattice > min_gpus * (1 + 1e-9)]])


#: Peak bytes per grid point of the fast search, and per extra pass (measured with tracemalloc
#: on a 1000 x 1000 grid: ~340 B, ~10 B per draft length; rounded up).
GRID_BYTES_PER_POINT = 400.0
GRID_BYTES_PER_POINT_PER_PASS = 16.0
#: Seconds per grid point and per pass on the 2-core machine the benchmarks ran on.
GRID_SECONDS_PER_POINT = 3e-6
#: Share of the available memory a search may take.
GRID_MEMORY_SHARE = 0.5
#: Longest estimated search accepted (a module setting: raise it for a deliberate huge study).
GRID_MAX_SECONDS = 600.0


def available_memory_bytes() -> float:
    """Memory available to a new computation (MemAvailable on Linux; else physical memory)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024.0
    except OSError:
        pass
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return math.inf


#: Layouts searched per point by the paper's assumptions (10 pipeline degrees x 6 divisors).
PAPER_LAYOUTS = 60


def grid_cost(points: int, passes: int, layouts: float = 1.0) -> tuple[float, float]:
    """(peak bytes, seconds) the fast search needs for ``points`` grid points, ``passes``
    target passes (1 + the draft lengths) and ``layouts`` times the paper's layouts per point."""
    per_point = GRID_BYTES_PER_POINT + GRID_BYTES_PER_POINT_PER_PASS * passes
    return points * per_point, points * GRID_SECONDS_PER_POINT * (1 + passes) * layouts


def check_budget(points: int, passes: int, layouts: float = 1.0) -> None:
    """Refuse, before it starts, a search that would take more than half the memory
    available or more than ``GRID_MAX_SECONDS`` (its estimated memory and time in the
    message, and the largest grid that would do)."""
    need, seconds = grid_cost(points, passes, layouts)
    allowed = GRID_MEMORY_SHARE * available_memory_bytes()
    if need <= allowed and seconds <= GRID_MAX_SECONDS:
        return
    per_point_bytes, per_point_s = grid_cost(1, passes, layouts)
    fits = int(math.sqrt(min(allowed / per_point_bytes, GRID_MAX_SECONDS / per_point_s)))
    side = int(math.sqrt(points))
    raise SpecError(
        "argument",
        "grid_points",
        f"a grid of about {side} x {side} points with {passes} pass(es) needs about "
        f"{need / 1e9:.1f} GB of memory and {seconds:.0f} s; this machine has "
        f"{allowed / GRID_MEMORY_SHARE / 1e9:.1f} GB available and the limit is "
        f"{GRID_MAX_SECONDS:.0f} s",
        f"use grid_points <= {max(fits, 4)}, fewer draft tokens or fewer layouts per point",
    )


class Problem:
    """A setting compiled for one method: its decoder (step models) and its grid."""

    def __init__(self, setting: Setting, method: Method = GRID) -> None:
        a = setting.assumptions
        if a.engine is not None and a.kernel_tables and not method.discrete:
            # Llama 3.3 70B on H100, 400 x 400, on a 2-core machine: 619 s against 2.2 s (2.5 s
            # for the whole layouts)
            raise SpecError(
                "argument",
                "clock",
                "the kernel clock prices the kernels of whole layouts; on the continuous "
                "grid's fractional GPU counts a search takes some 300 times as long",
                "search whole layouts (--discrete, discrete=True), or price the grid by the "
                "engine profile's terms (--clock engine)",
            )
        self.setting = setting
        self.method = method
        self.decoder = Decoder(setting, integer_layouts=method.discrete)

    @property
    def min_gpus(self) -> float:
        return self.decoder.min_gpus

    def continuous_axes(self):
        """§A7: N log-spaced from P·wb/HBM to 2^18, B from 1 to 2^(18 + log2 s).

        The N axis is ``gpu_lattice``: its step does not depend on the GPU's memory.
        """
        n = self.method.grid_points
        s = max(g.sparsity for g in self.decoder.work.groups)
        N = gpu_lattice(self.decoder.target.weights_total_bytes, self.min_gpus, n)
        B = np.logspace(0, GRID_MAX_LOG2 + np.log2(s), n, base=2)
        if self.setting.assumptions.node_aligned_layouts:
            from . import discrete as discrete_grid

            whole = discrete_grid.gpu_counts(self.min_gpus, self.setting.gpu.scale_up_domain_gpus)
            N = np.unique(np.concatenate([N, whole[(whole >= N[0]) & (whole <= N[-1])]]))
        cap = self.setting.max_gpus
        if cap is not None and N[0] < cap < N[-1]:  # the cap itself is a point of the axis
            N = np.unique(np.concatenate([N, [float(cap)]]))
        N = self.within_cap(N)
        # values exactly representable in float32, so the fast float32 search and the float64
        # description of the chosen points see the same grid; GPU counts are rounded down, so
        # rounding never turns a count whose weights exactly fill HBM (the first) into one with
        # room to spare
        return _float32_at_most(N), B.astype(np.float32).astype(float)

    def within_cap(self, counts: np.ndarray) -> np.ndarray:
        """The GPU counts of an axis within the setting's ``max_gpus`` (at least the first, so
        the grid is never empty: the frontier masks it, and says why it is empty)."""
        cap = self.setting.max_gpus
        if cap is None:
            return counts
        keep = counts <= cap
        keep[:1] = True
        return counts[keep]

    @property
    def single_precision(self) -> bool:
        """Whether the grid's latencies come from the single-precision search (``grid``)."""
        return not self.method.discrete and self.method.kind != "exhaustive"

    @property
    def ttft_limited(self) -> bool:
        return self.setting.ttft_max_s is not None and self.decoder.first is not None

    def pass_latencies(self, n_values, b_values):
        """Pass latencies on the grid b_values x n_values before speculation combines them
        (§A5-§A6, §C3): ``({S: target pass at S tokens}, {S: draft pass} or None)``, every
        layout searched at every point; with a TTFT limit only the layouts within it (§B8).
        They do not depend on the acceptance rate or the demand cap: settings that differ only
        there share them (the last ``PASS_CACHE_SIZE`` grids are kept, read-only)."""
        d = self.decoder
        key = (
            _pass_setting(self.setting),
            self.method.discrete,
            tuple(d.gamma_values()),
            tuple(d.draft_values()),
            np.asarray(n_values).tobytes(),
            np.asarray(b_values).tobytes(),
        )
        with _PASS_LOCK:
            if key in _PASSES:
                _PASSES.move_to_end(key)
                return _PASSES[key]
        passes = self._pass_latencies(n_values, b_values, True)  # kept: ``model_passes``
        for part in passes:
            for arr in (part or {}).values():
                if isinstance(arr, np.ndarray):
                    arr.flags.writeable = False
        with _PASS_LOCK:
            _PASSES[key] = passes
            _trim_passes()
        return passes

    def _pass_latencies(self, n_values, b_values, kept: bool = False):
        """``pass_latencies`` computed; with ``kept``, each pass of a step model without a
        TTFT limit is read from the passes kept (``model_passes``) where it is there."""
        s, d = self.setting, self.decoder
        gammas = d.gamma_values()
        limited = self.ttft_limited

        def run(model, S_values, per_layout=None, budgets=None):
            if kept and per_layout is None:
                axes = (n_values, b_values, s.context_tokens, s.pipeline)
                return model_passes(model, axes, S_values)
            return grid_latency(
                model,
                n_values,
                b_values,
                S_values,
                s.context_tokens,
                s.pipeline,
                _executor(),
                per_layout=per_layout,
                budgets=budgets,
            )

        D = draft = None
        if d.draft is not None:
            drafts = d.draft_values()
            if limited:
                lats, prefills = run(d.draft, drafts, d.draft_terms)
                D = dict(zip(drafts, lats))
                draft = {x: Layout(D[x], None, None, None, v) for x, v in zip(drafts, prefills)}
            else:
                D = dict(zip(drafts, run(d.draft, drafts)))
        if limited:
            budgets = {g: d.budget(g, draft) for g in gammas}
            lats, _ = run(d.target, gammas, d.target_terms, budgets)
        else:
            lats = run(d.target, gammas)
        return dict(zip(gammas, lats)), D

    def grid_latency(self, n_values, b_values):
        """Per-token latency and verified tokens on the grid b_values x n_values: speculation
        picks the best cycle per point from ``pass_latencies`` (§A6, §C3)."""
        T, D = self.pass_latencies(n_values, b_values)
        return combine(T, D, self.setting.spec)

    def brute_force_latency(self, n_values, b_values):
        """The same as ``grid_latency`` by the plain loop over layouts at every point (float64):
        the reference the fast search is tested against."""
        s, d = self.setting, self.decoder
        N, B = np.meshgrid(np.asarray(n_values, dtype=float), np.asarray(b_values, dtype=float))
        if self.ttft_limited:  # the layouts within the TTFT limit, as describe finds them
            target, draft = d.layouts(N, B)
            return combine(
                {g: lay.latency_s for g, lay in target.items()},
                {x: lay.latency_s for x, lay in draft.items()} if draft else None,
                s.spec,
            )
        ctx, pipe = s.context_tokens, s.pipeline
        T = {g: best_latency(d.target, N, B, g, ctx, pipe) for g in d.gamma_values()}
        D = None
        if d.draft is not None:
            D = {x: best_latency(d.draft, N, B, x, ctx, pipe) for x in d.draft_values()}
        return combine(T, D, s.spec)

    def evaluate_grid(self):
        """(N, B, latency, known layouts or None) on the method's grid (rows = batches)."""
        if self.method.discrete:  # whole layouts: optimise/discrete.py, loaded only then
            from . import discrete as discrete_grid

            return discrete_grid.evaluate(self)
        n_values, b_values = self.continuous_axes()
        a, t = self.setting.assumptions, self.decoder.target
        degrees = a.pipeline_degree_count + len(t.extra_pipeline_degrees)
        divisors = a.attention_divisor_count + len(t.extra_attention_degrees)
        layouts = degrees * divisors / PAPER_LAYOUTS
        check_budget(len(b_values) * len(n_values), len(self.decoder.gamma_values()), layouts)
        search = self.brute_force_latency if self.method.kind == "exhaustive" else self.grid_latency
        latency, _ = search(n_values, b_values)
        N, B = np.meshgrid(n_values, b_values)
        return N, B, latency, None

    def prefill_latency(self, n_values):
        """Prefill of one prompt on each GPU count, for the time to first token."""
        from ..serving.prefill import prefill_latency_s  # only with a prompt length

        return prefill_latency_s(self.setting, n_values, self.method.discrete)


#: Pass latencies of the last few grids (a 400-point grid with a draft holds ~5 MB), keyed by
#: ``_pass_setting``, the passes and the axes; ``clear_caches`` empties them.
PASS_CACHE_SIZE = 4
_PASSES: collections.OrderedDict = collections.OrderedDict()
_PASS_LOCK = threading.Lock()


#: Passes of one step model kept at most (``model_passes``; a 400 x 400 pass is 640 kB), besides
#: the ``PASS_CACHE_SIZE`` settings' passes.
MODEL_PASS_CACHE_SIZE = 64


def model_passes(model, axes: tuple, S_values) -> list:
    """``grid_latency`` of a step model at each tokens per pass of ``S_values`` on ``axes``
    (GPU counts, batches, context, pipeline), each pass kept in ``_PASSES`` by the model's
    inputs (``model_inputs``): a pass depends on the model and the grid alone, so settings
    that share a model share it (a target with and without a draft, or with one draft and
    another: ``reproduce all`` searches a model's plain frontier and its speculative ones).
    The passes not kept are computed together; each is the same bit for bit as computed with
    any other tokens per pass (tests/test_search_exact.py)."""
    n_values, b_values, context, pipeline = axes
    grid = (np.asarray(n_values).tobytes(), np.asarray(b_values).tobytes(), context, pipeline)
    keys = {S: ("model", model_inputs(model), grid, S) for S in S_values}
    with _PASS_LOCK:
        found = {S: _PASSES[k] for S, k in keys.items() if k in _PASSES}
        for S in found:
            _PASSES.move_to_end(keys[S])
    missing = [S for S in S_values if S not in found]
    if missing:
        lats = grid_latency(model, n_values, b_values, missing, context, pipeline, _executor())
        with _PASS_LOCK:
            for S, lat in zip(missing, lats):
                lat.flags.writeable = False
                found[S] = _PASSES[keys[S]] = lat
            _trim_passes()
    return [found[S] for S in S_values]


def _trim_passes() -> None:
    """Forget the oldest passes kept past ``PASS_CACHE_SIZE`` settings' and
    ``MODEL_PASS_CACHE_SIZE`` step models' (with ``_PASS_LOCK`` held)."""
    for kind, size in ((False, PASS_CACHE_SIZE), (True, MODEL_PASS_CACHE_SIZE)):
        keys = [k for k in _PASSES if (k[0] == "model") == kind]
        for k in keys[: max(len(keys) - size, 0)]:
            del _PASSES[k]


def _pass_setting(setting: Setting) -> Setting:
    """The setting as far as its pass latencies go: without its label, demand cap and
    acceptance rate (they enter only in pricing and in ``combine``)."""
    spec = setting.spec.with_acceptance(1.0) if setting.spec is not None else None
    return setting.replace(label="", max_throughput_tokens_per_s=math.inf, spec=spec)


def clear_caches() -> None:
    """Forget every cached frontier and pass latency (benchmarks time the search itself)."""
    _frontier_cached.cache_clear()
    _columns_cached.cache_clear()
    with _PASS_LOCK:
        _PASSES.clear()


def _float32_at_most(values):
    """The largest float32 values not above ``values`` (as float64)."""
    f32 = np.asarray(values).astype(np.float32)
    above = f32.astype(float) > values
    f32[above] = np.nextafter(f32[above], np.float32(-np.inf))
    return f32.astype(float)


_POOL = None  # (threads, ThreadPoolExecutor), made on first use
#: Threads of the grid search; the environment variable overrides the default (min(4, cores)).
THREADS_VARIABLE = "INFERENCE_ECON_THREADS"


def search_threads() -> int:
    """Threads the grid search runs on: ``INFERENCE_ECON_THREADS`` if set, else min(4, cores).
    One thread costs the least CPU (two cut a frontier's wall time by ~1/6 for ~1/3 more CPU)."""
    text = os.environ.get(THREADS_VARIABLE, "").strip()
    if not text:
        return min(4, os.cpu_count() or 1)
    if not text.isdigit() or not 1 <= int(text) <= 256:
        raise SpecError(
            f"environment variable {THREADS_VARIABLE}",
            "",
            f"is {text[:20]!r}",
            "give a whole number of threads from 1 to 256, or unset it",
        )
    return int(text)


def _executor():
    """A shared pool of ``search_threads()`` threads (numpy releases the GIL, so grid blocks
    run in parallel), or None for one thread: the blocks then run in this thread."""
    global _POOL
    threads = search_threads()
    if threads == 1:
        return None
    if _POOL is None or _POOL[0] != threads:
        from concurrent.futures import ThreadPoolExecutor

        _POOL = (threads, ThreadPoolExecutor(max_workers=threads))
    return _POOL[1]


def frontier(setting: Setting, method: Method = GRID) -> Frontier:
    """The Pareto frontier of tokens/s per request vs $ per million tokens for a setting.

    Results are cached per (setting, method), whatever the setting's label: the label only
    names the result (``reproduce all`` computes one setting under several labels); the
    returned frontier is a copy, named by ``setting.name``.
    """
    cached = _frontier_cached(setting.replace(label=""), method)
    return dataclasses.replace(
        cached,
        label=setting.name,
        points=cached.points.copy(),
        notes=list(cached.notes),
        metadata=dict(cached.metadata),
    )


def frontier_columns(setting: Setting, method: Method = GRID) -> FrontierColumns:
    """``frontier`` with its points as arrays, without pandas (the ``frontier`` command's
    text table); cached alike, named by ``setting.name``."""
    return dataclasses.replace(
        _columns_cached(setting.replace(label=""), method), label=setting.name
    )


@functools.lru_cache(maxsize=256)
def _frontier_cached(setting: Setting, method: Method) -> Frontier:
    """The frontier of ``_columns_cached``'s search in a DataFrame: a setting asked for both
    (a text table and a CSV, a figure and its table) is searched once."""
    return _columns_cached(setting, method).to_frontier()


@functools.lru_cache(maxsize=256)
def _columns_cached(setting: Setting, method: Method) -> FrontierColumns:
    return _search(setting, method)


def _rows(columns: dict, index) -> dict:
    """The rows ``index`` (positions, or a mask) of a table of columns."""
    return {name: values[index] for name, values in columns.items()}


def _search(setting: Setting, method: Method) -> FrontierColumns:
    """The frontier of ``setting`` (its pass latencies from ``Problem.pass_latencies``'s
    cache when it has them)."""
    start = time.perf_counter()
    problem = Problem(setting, method)
    N, B, latency, layouts = problem.evaluate_grid()
    price, cap = setting.gpu.price_usd_per_hour, setting.max_throughput_tokens_per_s
    single = problem.single_precision
    margin = 1.0 + SEARCH_MARGIN
    # the single-precision search's latencies are within its error of the exact ones: a point
    # within the margin of the demand cap may be under it
    cost = priced_grid(N, latency, B, price, cap * margin if single else cap)
    if setting.max_gpus is not None:  # the first GPU count is kept on every axis: mask it
        cost = np.where(setting.max_gpus < N, np.inf, cost)
    if single:  # every point the exact values may leave on the frontier (``SEARCH_MARGIN``)
        with np.errstate(divide="ignore"):
            surely_under_cap = B / latency <= cap / margin
        idx = near_pareto_indices(latency, cost, SEARCH_MARGIN, surely_under_cap)
    else:
        idx = pareto_indices(latency, cost)
    notes: list[str] = []
    if idx.size == 0:
        notes.append(_why_empty(problem, N[0]))
        points = problem.decoder.describe_columns(np.array([]), np.array([]))
    else:
        if layouts is not None:
            from . import discrete as discrete_grid

            points = discrete_grid.describe_columns(problem, N, B, layouts, idx)
        else:
            points = problem.decoder.describe_columns(N.ravel()[idx], B.ravel()[idx])
        # the search ran in float32; keep what is Pareto-optimal in the float64 description
        # (under the demand cap there, and with a TTFT limit within it there too)
        described_cost = np.where(
            points["batch"] / points["latency_s"] > cap, np.inf, points["usd_per_mtok"]
        )
        if setting.ttft_max_s is not None:
            described_cost = np.where(
                points["ttft_s"] <= setting.ttft_max_s, described_cost, np.inf
            )
        keep = pareto_indices(points["latency_s"], described_cost)
        points = _rows(points, np.sort(keep))
        if not method.all_points:  # the paper's range: down to 1/100 of the fastest speed
            speed = points["tokens_per_s"]
            points = _rows(points, speed >= speed.max() / SPEED_RANGE * (1 - 1e-12))
        points = _rows(points, np.argsort(points["tokens_per_s"], kind="stable"))
        kv = whole_batch_kv_note(
            setting, points["gpus"], points["batch"], setting.context_tokens, "frontier points"
        )
        notes += [kv] if kv else []
        if setting.prompt_tokens:  # the prompts set the TTFT limit and its layouts, no price
            notes.append(
                f"$/Mtok is decode-only (docs/glossary.md): the prefill of each request's "
                f"{setting.prompt_tokens:,.0f} prompt tokens is not charged; 'request' and "
                "'prices' price input and output tokens together"
            )
    for values in points.values():  # shared by every caller of the cache: read-only
        values.flags.writeable = False
    return FrontierColumns(
        label=setting.name,
        columns=points,
        grid_points=int(np.size(N)),
        elapsed_s=time.perf_counter() - start,
        notes=tuple(notes),
        metadata={**setting.metadata(), "method": method.label},
    )


def _why_empty(problem: Problem, n_values=None) -> str:
    s = problem.setting
    if s.ttft_max_s is not None and n_values is not None:
        pre = problem.prefill_latency(n_values)
        if np.isfinite(pre).any():
            best = int(np.nanargmin(pre))
            if pre[best] >= s.ttft_max_s:
                return (
                    f"no configuration has a time to first token within {s.ttft_max_s:g} s for a "
                    f"{s.prompt_tokens:g}-token prompt: the fastest prefill alone takes {pre[best]:.3g} s "
                    f"(on {n_values[best]:.3g} GPUs)"
                )
            return (
                f"no configuration meets TTFT <= {s.ttft_max_s:g} s on its own layout (the prefill "
                "of one prompt plus the first decode step at the prompt's length)"
            )
    gpu = s.gpu
    need = problem.decoder.target.weights_total_bytes
    if s.max_gpus is not None and (n_values is None or np.min(n_values) > s.max_gpus):
        return (
            f"the weights ({need / 1e9:.0f} GB) need at least {problem.min_gpus:.3g} GPUs of "
            f"{gpu.name}, more than the cap of {s.max_gpus} (max_gpus, --max-gpus)"
        )
    if need > gpu.hbm_capacity_bytes * 2**GRID_MAX_LOG2:
        return f"the weights ({need / 1e9:.0f} GB) do not fit even on 2^{GRID_MAX_LOG2} GPUs"
    if math.isfinite(s.max_throughput_tokens_per_s):
        return f"no configuration stays under the demand cap of {s.max_throughput_tokens_per_s:g} tokens/s"
    kv = problem.decoder.work.kv_held_bytes(s.context_tokens, 1.0)
    return (
        f"no configuration fits: weights {need / 1e9:,.1f} GB plus {kv / 1e9:,.1f} GB of KV cache per request "
        f"on {gpu.name} ({gpu.hbm_capacity_bytes / 1e9:.0f} GB per GPU)"
    )
