"""The grid optimiser: a setting in, its Pareto frontier out (MODEL.md A5-A7).

A ``Setting`` is the problem (model, GPU, context, precisions, demand cap, pipelining,
speculative decoding, continuous or discrete grid, assumptions); ``frontier(setting)`` is the
method; a ``frontier.Frontier`` is the result, every point carrying its layout and breakdown.

The continuous search is exact but avoids useless work: layouts without pipelining are
evaluated on the whole grid; pipelined layouts only at points where a lower bound on their
latency could still put the point on the frontier (``search.pipeline_lower_bound``). With a
demand cap, where a faster layout can disqualify a point, everything is evaluated.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import discrete as discrete_grid
from .architecture import Architecture, Precision, load_model
from .assumptions import Assumptions, preset
from .errors import SpecError
from .frontier import Frontier, pareto_indices
from .hardware import GPU, load_hardware
from .latency import ADDITIVE_PARTS, StepModel, expert_degree, prefill_step_model
from .schema import check_number
from .search import best_latency, grid_latency
from .specdec import SpecDecoding, combine, expected_tokens
from .workload import compile_workload

GRID_MAX_LOG2 = 18  # A7: up to 2^18 GPUs, batches up to 2^(18 + log2 s)


@dataclass(frozen=True)
class Setting:
    """One serving scenario to optimise: what is served, on what, under which assumptions."""

    model: Architecture
    gpu: GPU
    context_tokens: float = 0.0
    max_throughput_tokens_per_s: float = math.inf
    pipeline: bool = True
    spec: SpecDecoding | None = None
    discrete: bool = False
    assumptions: Assumptions = Assumptions()
    label: str = ""
    grid_points: int = 400
    #: Prompt length for time to first token; with ``ttft_max_s`` the frontier keeps only
    #: configurations whose TTFT (prefill of one prompt + first decode step) is within it.
    prompt_tokens: float | None = None
    ttft_max_s: float | None = None

    @property
    def precision(self) -> Precision:
        return self.model.precision

    @property
    def name(self) -> str:
        return self.label or f"{self.model.name} on {self.gpu.name}"

    def replace(self, **changes) -> Setting:
        return dataclasses.replace(self, **changes)


def make_setting(
    model,
    hardware,
    *,
    context_tokens: float = 0,
    weight_bits: float | None = None,
    activation_bits: float | None = None,
    kv_cache_bits: float | None = None,
    max_throughput_tokens_per_s: float | None = None,
    draft=None,
    acceptance: float = 0.8,
    max_draft_tokens: int = 5,
    draft_weight_bits: float | None = None,
    pipeline: bool = True,
    discrete: bool = False,
    assumptions: str | Assumptions = "paper",
    label: str = "",
    grid_points: int = 400,
    prompt_tokens: float | None = None,
    ttft_max_s: float | None = None,
) -> Setting:
    """Build a Setting from names or objects, validating every argument."""
    arch = load_model(model)
    gpu = load_hardware(hardware)
    for name, bits in (
        ("weight_bits", weight_bits),
        ("activation_bits", activation_bits),
        ("kv_cache_bits", kv_cache_bits),
    ):
        if bits is not None:
            check_number(bits, "argument", name, minimum=1, maximum=32, unit="bits")
    arch = arch.with_precision(weight_bits, activation_bits, kv_cache_bits)
    context = check_number(context_tokens, "argument", "context_tokens", minimum=0, unit="tokens")
    cap = math.inf
    if max_throughput_tokens_per_s is not None:
        cap = check_number(
            max_throughput_tokens_per_s,
            "argument",
            "max_throughput_tokens_per_s",
            minimum=0,
            exclusive_minimum=True,
            unit="tokens/s",
        )
    check_number(grid_points, "argument", "grid_points", minimum=4, maximum=4000, integer=True)
    spec = None
    if draft is not None:
        draft_arch = load_model(draft)
        if draft_weight_bits is not None:
            draft_arch = draft_arch.with_precision(weight_bits=draft_weight_bits)
        check_number(acceptance, "argument", "acceptance", minimum=0, maximum=1)
        check_number(
            max_draft_tokens, "argument", "max_draft_tokens", minimum=1, maximum=64, integer=True
        )
        spec = SpecDecoding(draft_arch, float(acceptance), int(max_draft_tokens))
    if prompt_tokens is not None:
        prompt_tokens = float(
            check_number(prompt_tokens, "argument", "prompt_tokens", minimum=1, unit="tokens")
        )
    if ttft_max_s is not None:
        ttft_max_s = float(
            check_number(
                ttft_max_s,
                "argument",
                "ttft_max_s",
                minimum=0,
                exclusive_minimum=True,
                unit="seconds",
            )
        )
        if prompt_tokens is None:
            raise SpecError(
                "argument",
                "ttft_max_s",
                "needs a prompt length",
                "give prompt_tokens (--prompt-tokens) too",
            )
    return Setting(
        model=arch,
        gpu=gpu,
        context_tokens=float(context),
        max_throughput_tokens_per_s=float(cap),
        pipeline=bool(pipeline),
        spec=spec,
        discrete=bool(discrete),
        assumptions=preset(assumptions),
        label=label,
        grid_points=int(grid_points),
        prompt_tokens=prompt_tokens,
        ttft_max_s=ttft_max_s,
    )


# --- the models of one setting ------------------------------------------------------------


class Problem:
    """A setting compiled: the target's and draft's step models and the grid."""

    def __init__(self, setting: Setting) -> None:
        self.setting = setting
        a = setting.assumptions
        self.work = compile_workload(setting.model, setting.model.precision, a)
        self.target = StepModel(self.work, setting.gpu, a, integer_layouts=setting.discrete)
        self.draft = None
        if setting.spec is not None:
            dwork = compile_workload(setting.spec.draft, setting.spec.draft.precision, a)
            self.draft = StepModel(dwork, setting.gpu, a, integer_layouts=setting.discrete)

    @property
    def min_gpus(self) -> float:
        """The fewest GPUs whose HBM holds the weights (A7's grid start)."""
        return self.target.weights_bytes / self.setting.gpu.hbm_capacity_bytes

    def continuous_axes(self, points: int | None = None):
        """A7: N log-spaced from P·wb/HBM to 2^18, B from 1 to 2^(18 + log2 s)."""
        n = points or self.setting.grid_points
        s = max(g.sparsity for g in self.work.groups)
        N = np.logspace(np.log2(self.min_gpus), GRID_MAX_LOG2, n, base=2)
        B = np.logspace(0, GRID_MAX_LOG2 + np.log2(s), n, base=2)
        if self.setting.assumptions.node_aligned_layouts:
            whole = discrete_grid.gpu_counts(self.min_gpus, self.setting.gpu.scale_up_domain_gpus)
            N = np.unique(np.concatenate([N, whole[(whole >= N[0]) & (whole <= N[-1])]]))
        # values exactly representable in float32, so the fast float32 search and the float64
        # description of the chosen points see the same grid
        return N.astype(np.float32).astype(float), B.astype(np.float32).astype(float)

    def prefill_latency(self, n_values):
        """Prefill of one prompt of ``prompt_tokens`` on each GPU count (inf where it does not
        fit), for time to first token."""
        s = self.setting
        if s.prompt_tokens is None:
            return np.zeros(np.shape(n_values))
        model = prefill_step_model(
            lambda a: compile_workload(s.model, s.model.precision, a),
            s.gpu,
            s.assumptions,
            s.discrete,
        )
        n = np.asarray(n_values, dtype=float)
        return best_latency(model, n, np.ones_like(n), s.prompt_tokens, 0.0, s.pipeline)

    def gamma_values(self) -> list[int]:
        return [1] + (list(self.setting.spec.draft_lengths) if self.setting.spec else [])

    # --- latency over the grid ----------------------------------------------------------------
    def grid_latency(self, n_values, b_values):
        """Per-token latency and draft length on the grid b_values x n_values (A5-A6).

        Every layout is searched at every point (``search.grid_latency``), for the target at
        S = 1 … γ_max and for the draft; speculation then picks the best γ per point.
        """
        s = self.setting
        ex = _executor()

        gammas = self.gamma_values()

        def run(model, S_values):
            return grid_latency(
                model,
                n_values,
                b_values,
                context=s.context_tokens,
                pipeline=s.pipeline,
                executor=ex,
                S_values=S_values,
            )

        T = dict(zip(gammas, run(self.target, gammas)))
        D = run(self.draft, [1])[0] if self.draft is not None else None
        return combine(T, D, s.spec)

    def brute_force_latency(self, n_values, b_values):
        """The same as ``grid_latency`` by the plain loop over layouts at every point (float64):
        the reference the fast search is tested against."""
        s = self.setting
        N, B = np.meshgrid(np.asarray(n_values, dtype=float), np.asarray(b_values, dtype=float))
        T = {
            g: best_latency(self.target, N, B, g, s.context_tokens, s.pipeline)
            for g in self.gamma_values()
        }
        D = best_latency(self.draft, N, B, 1, s.context_tokens, s.pipeline) if self.draft else None
        return combine(T, D, s.spec)

    # --- describing chosen configurations ---------------------------------------------------
    def describe(self, N, B, layouts=None, draft_layout=None) -> pd.DataFrame:
        """Layouts, breakdowns and economics of configurations (N, B) (1-D arrays).

        ``layouts`` ({γ: (latency, p, a, two_d)}) and ``draft_layout`` give the layouts when
        they are already known (discrete search); otherwise the search of A5 finds them.
        """
        s = self.setting
        ctx = s.context_tokens
        N = np.atleast_1d(np.asarray(N, dtype=float))
        B = np.atleast_1d(np.asarray(B, dtype=float))
        gammas = self.gamma_values()
        if layouts is None:
            layouts = {
                g: best_latency(self.target, N, B, g, ctx, s.pipeline, return_layout=True)
                for g in gammas
            }
            if self.draft:
                draft_layout = best_latency(
                    self.draft, N, B, 1, ctx, s.pipeline, return_layout=True
                )
        dlay = draft_layout
        latency, gamma = combine(
            {g: v[0] for g, v in layouts.items()}, dlay[0] if dlay else None, s.spec
        )
        parts = {
            name: np.zeros(N.shape) for name in ADDITIVE_PARTS + ("memory_time_s", "compute_time_s")
        }
        cols = {k: np.ones(N.shape) for k in ("p", "a")}
        two = np.ones(N.shape, dtype=bool)
        for g in gammas:
            sel = gamma == g
            if not np.any(sel):
                continue
            _, p, a, two_d = (x[sel] for x in layouts[g])
            bd = self._breakdown(self.target, N[sel], B[sel], g, p, a, two_d)
            scale = 1.0 if g == 1 else 1.0 / expected_tokens(s.spec.acceptance, g)
            extra = {}
            if g > 1:
                _, dp, da, dtwo = (x[sel] for x in dlay)
                extra = self._breakdown(self.draft, N[sel], B[sel], 1, dp, da, dtwo)
            for name in parts:
                parts[name][sel] = scale * (bd[name] + (g * extra[name] if extra else 0.0))
            cols["p"][sel], cols["a"][sel], two[sel] = p, a, two_d
        price = s.gpu.price_usd_per_hour
        work = self.work
        t = N / cols["p"]
        b = B / cols["p"]
        expert = np.ones(N.shape)
        moe = [g for g in work.groups if g.experts > 1]
        if moe:
            g0 = moe[0]
            ep_min = s.assumptions.expert_parallel_min_batch_per_sparsity
            expert = expert_degree(
                b, t, g0.experts, ep_min * g0.sparsity, self.target.machine.integer_layouts
            ) + np.zeros(N.shape)
        flop = work.total_flop(B, 1, ctx)
        with np.errstate(divide="ignore", invalid="ignore"):
            df = pd.DataFrame(
                {
                    "tokens_per_s": 1.0 / latency,
                    "usd_per_mtok": 1e6 * N * latency / B * price / 3600.0,
                    "latency_s": latency,
                    "gpus": N,
                    "batch": B,
                    "pipeline_degree": cols["p"],
                    "tensor_degree": t,
                    "attention_degree": t / cols["a"],
                    "expert_degree": expert,
                    "tp_dims": np.where(two, "2D", "1D"),
                    "micro_batch": b,
                    "draft_tokens": gamma,
                    "mfu": flop / (N * self.target.machine.peak_flop_per_s * latency),
                    "throughput_tokens_per_s": B / latency,
                    "tokens_per_s_per_gpu": B / latency / N,
                    **parts,
                }
            )
        df["bound"] = np.where(df["memory_time_s"] >= df["compute_time_s"], "memory", "compute")
        if s.prompt_tokens is not None:
            df["ttft_s"] = self.prefill_latency(N) + latency
        return df

    def _breakdown(self, model: StepModel, N, B, S, p, a, two_d) -> dict:
        out = {}
        for flag in (True, False):
            sel = two_d == flag
            if not np.any(sel):
                continue
            bd = model.breakdown(
                N[sel], B[sel], S, self.setting.context_tokens, p[sel], a[sel], flag
            ).as_dict()
            for k, v in bd.items():
                out.setdefault(k, np.zeros(N.shape))[sel] = v
        return out


_EXECUTOR = None


def _executor():
    """A shared pool of two threads: numpy releases the GIL, so grid blocks run in parallel."""
    global _EXECUTOR
    if _EXECUTOR is None:
        from concurrent.futures import ThreadPoolExecutor

        _EXECUTOR = ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1))
    return _EXECUTOR


def frontier(setting: Setting, exhaustive: bool = False) -> Frontier:
    """The Pareto frontier of tokens/s per request vs $ per million tokens for a setting.

    ``exhaustive`` evaluates every layout at every grid point with the plain float64 loop
    (slow; the reference the fast search is tested against). Results are cached per setting.
    """
    cached = _frontier_cached(setting, exhaustive)
    return dataclasses.replace(cached, points=cached.points.copy(), notes=list(cached.notes))


@functools.lru_cache(maxsize=64)
def _frontier_cached(setting: Setting, exhaustive: bool) -> Frontier:
    start = time.perf_counter()
    problem = Problem(setting)
    notes: list[str] = []
    if setting.discrete:
        N, B, latency, layouts = discrete_grid.evaluate(problem)
    else:
        n_values, b_values = problem.continuous_axes()
        latency, _ = (problem.grid_latency if not exhaustive else problem.brute_force_latency)(
            n_values, b_values
        )
        N, B = np.meshgrid(n_values, b_values)
    price = setting.gpu.price_usd_per_s
    with np.errstate(divide="ignore", invalid="ignore"):
        cost = N * latency / B * price
        capped = B / latency > setting.max_throughput_tokens_per_s
    cost = np.where(capped, np.inf, cost)
    if setting.ttft_max_s is not None:
        ttft = problem.prefill_latency(N[0])[None, :] + latency
        cost = np.where(ttft > setting.ttft_max_s, np.inf, cost)
    idx = pareto_indices(latency, cost)
    if idx.size == 0:
        notes.append(_why_empty(problem, N[0]))
        points = problem.describe(np.array([]), np.array([]))
    else:
        if setting.discrete:
            points = discrete_grid.describe(problem, N, B, layouts, idx)
        else:
            points = problem.describe(N.ravel()[idx], B.ravel()[idx])
        # the search ran in float32; keep what is Pareto-optimal in the float64 description
        keep = pareto_indices(points["latency_s"].to_numpy(), points["usd_per_mtok"].to_numpy())
        points = points.iloc[np.sort(keep)]
        points = points.sort_values("tokens_per_s", kind="stable").reset_index(drop=True)
    return Frontier(
        label=setting.name,
        points=points,
        grid_points=int(np.size(N)),
        elapsed_s=time.perf_counter() - start,
        notes=notes,
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
            return f"no configuration meets TTFT <= {s.ttft_max_s:g} s once the first decode step is added"
    gpu = s.gpu
    need = problem.target.weights_bytes
    if need > gpu.hbm_capacity_bytes * 2**GRID_MAX_LOG2:
        return f"the weights ({need / 1e9:.0f} GB) do not fit even on 2^{GRID_MAX_LOG2} GPUs"
    if math.isfinite(s.max_throughput_tokens_per_s):
        return f"no configuration stays under the demand cap of {s.max_throughput_tokens_per_s:g} tokens/s"
    kv = problem.work.kv_cache_bytes(s.context_tokens, 1.0)
    return (
        f"no configuration fits: weights {need / 1e9:.1f} GB plus {kv / 1e9:.1f} GB of KV cache per request "
        f"on {gpu.name} ({gpu.hbm_capacity_bytes / 1e9:.0f} GB per GPU)"
    )


def evaluate(setting: Setting, gpus, batch) -> pd.DataFrame:
    """Latency, speed, cost, MFU, layout and breakdown of given (GPUs, batch) configurations."""
    gpus = np.atleast_1d(np.asarray(gpus, dtype=float))
    batch = np.atleast_1d(np.asarray(batch, dtype=float))
    for name, arr, lo in (("gpus", gpus, 0.0), ("batch", batch, 0.0)):
        bad = ~np.isfinite(arr) | (arr <= lo)
        if np.any(bad):
            raise SpecError("argument", name, f"is {arr[bad][0]!r}", "expected a positive number")
    gpus, batch = np.broadcast_arrays(gpus, batch)
    return Problem(setting).describe(gpus, batch)
