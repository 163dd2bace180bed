"""Context-parallel prefill of one long prompt over P devices (docs/model.md §B9, KV-Runahead).

The prompt is cut into P contiguous chunks, one per device. Device i computes its chunk's
tokens, which attend to every earlier token, so its work is linear in its length plus the
causal attention 2·x·H·L·(e_i² − s_i²) (in a sliding-window layer each token attends to at most
its window). Two ways to give it the earlier tokens' keys and values:

* **all-gather** (sequence parallelism): equal chunks; after each layer every device gathers
  all KV, synchronously, so the time is the slowest chunk plus L all-gathers of the whole KV;
* **KV-Runahead**: a point-to-point chain; device i receives the accumulated KV of tokens
  [0, s_i) from device i − 1 and sends [0, e_i) on. Its time is its compute plus receiving its
  prefix (one link latency and the prefix's bytes); the time to first token is the slowest
  device's time (docs/model.md §B9).
  Balanced chunks make all devices equally slow: later chunks are shorter because each later
  token attends to more.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import settings as table
from ..model.economics import flop_rates
from ..model.efficiency import best_gemm_efficiency, is_power_limited_card
from ..model.workload import compile_workload
from ..specs.schema import check_number
from .setting import Setting, check_context


def _attended(start: float, end: float, window: float) -> float:
    """Query-key pairs of tokens [start, end) when token i attends to min(i, window) earlier
    positions (the causal sum, as a continuous integral)."""
    if end <= window:
        return (end * end - start * start) / 2.0
    if start >= window:
        return window * (end - start)
    return (window * window - start * start) / 2.0 + window * (end - window)


@dataclass(frozen=True)
class ChainCosts:
    """What one device's chunk costs: FLOP per token and per attention pair, the rates they run
    at, a fixed time per pass, KV bytes per position, and the attention window of each layer
    group (inf: full attention)."""

    flop_per_token: float  # 2·P_act
    attention_flop_per_pair_per_layer: float  # 4·x·H per (query, key) pair and layer
    kv_bytes_per_position_per_layer: float
    #: (layers, window) of each layer group; windows are inf unless sliding_windows is on.
    layer_windows: tuple[tuple[int, float], ...]
    flop_per_s: float  # of one device (a GPU or a tensor-parallel group), for 2·P_act per token
    link_bytes_per_s: float
    link_latency_s: float
    #: The rate of attention arithmetic (None: ``flop_per_s``, the ideal presets).
    attention_flop_per_s: float | None = None
    #: Seconds every pass of a device that computes pays besides its FLOP (engine overheads).
    pass_overhead_s: float = 0.0
    #: More seconds for a pass of more tokens than the engine's CUDA graphs hold (§F5).
    eager_overhead_s: float = 0.0
    graph_max_tokens: float = math.inf

    @property
    def layers(self) -> int:
        return sum(n for n, _ in self.layer_windows)

    @property
    def kv_bytes_per_token(self) -> float:
        """KV-cache bytes of one token of context, all layers (full attention)."""
        return self.kv_bytes_per_position_per_layer * self.layers

    @property
    def _seconds_per_token(self) -> float:
        return self.flop_per_token / self.flop_per_s

    @property
    def _seconds_per_pair(self) -> float:
        rate = self.attention_flop_per_s or self.flop_per_s
        return self.attention_flop_per_pair_per_layer / rate

    def compute_s(self, start: float, end: float) -> float:
        """Seconds for tokens [start, end) attending to everything before them (to the last
        ``window`` positions in a sliding-window layer); 0 for no tokens."""
        if end <= start:
            return 0.0
        return self._overhead_s(end - start) + self._flop_s(start, end)

    def _overhead_s(self, tokens: float) -> float:
        eager = self.eager_overhead_s if tokens > self.graph_max_tokens else 0.0
        return self.pass_overhead_s + eager

    def _flop_s(self, start: float, end: float) -> float:
        pairs = sum(n * _attended(start, end, w) for n, w in self.layer_windows)
        return self._seconds_per_token * (end - start) + self._seconds_per_pair * pairs

    def prefix_bytes(self, start: float) -> float:
        """KV-cache bytes of the prefix [0, start) that later tokens attend to: all of it in
        full-attention layers, its last ``window`` positions in sliding-window layers."""
        positions = sum(n * min(start, w) for n, w in self.layer_windows)
        return positions * self.kv_bytes_per_position_per_layer

    def reach(self, start: float, seconds: float) -> float:
        """The end ``e`` for which tokens [start, e) take ``seconds`` (``start`` if the pass's
        fixed time alone exceeds them). A pass longer than the CUDA graphs pays the eager
        overhead: if that leaves it shorter than the graphs hold, it stops at their size."""
        end = self._reach_flop(start, seconds - self.pass_overhead_s)
        if end - start <= self.graph_max_tokens:
            return end
        eager = self._reach_flop(start, seconds - self._overhead_s(math.inf))
        return max(eager, start + self.graph_max_tokens)

    def _reach_flop(self, start: float, target: float) -> float:
        """The end ``e`` whose FLOP from ``start`` take ``target`` seconds.

        ``_flop_s(start, e)`` is quadratic in ``e`` between the windows it crosses (a layer
        whose window lies ahead attends to a growing prefix; one whose window is behind, to a
        fixed one), so each stretch is solved in closed form (cancellation-free root)."""
        if target <= 0.0:
            return start
        spp, spt = self._seconds_per_pair, self._seconds_per_token
        cuts = sorted({w for _, w in self.layer_windows if start < w < math.inf})
        lo = start
        for hi in [*cuts, math.inf]:
            if hi < math.inf and self._flop_s(start, hi) < target:
                lo = hi
                continue
            alpha = beta = gamma = 0.0
            for n, w in self.layer_windows:
                if w >= hi:  # growing prefix: (e^2 - s^2)/2
                    alpha, gamma = alpha + n / 2.0, gamma - n * start * start / 2.0
                elif w > start:  # window reached at w: (w^2 - s^2)/2 + w(e - w)
                    beta, gamma = beta + n * w, gamma + n * ((w * w - start * start) / 2.0 - w * w)
                else:  # window behind: w(e - s)
                    beta, gamma = beta + n * w, gamma - n * w * start
            a, b = spp * alpha, spt + spp * beta
            c = spp * gamma - spt * start - target
            if a == 0.0:
                return -c / b
            return -2.0 * c / (b + math.sqrt(b * b - 4.0 * a * c))
        return lo  # pragma: no cover - the last stretch always holds the root

    def receive_s(self, start: float) -> float:
        """Seconds to receive the keys and values of tokens [0, start) over the link."""
        return (
            0.0
            if start <= 0
            else self.link_latency_s + self.prefix_bytes(start) / self.link_bytes_per_s
        )


def chain_costs(
    setting: Setting,
    devices_gpus: float = 1.0,
    link_bytes_per_s: float | None = None,
    link_latency_s: float = 10e-6,
) -> ChainCosts:
    """Costs for a setting: each device is ``devices_gpus`` GPUs, at the sustained FLOP/s
    under an ideal preset or at the engine's efficiencies under ``achievable``
    (``engine_rates``); the link defaults to the GPU's scale-out NIC (one direction)."""
    work = compile_workload(setting.model, setting.assumptions)
    gpu = setting.gpu
    link = link_bytes_per_s if link_bytes_per_s is not None else gpu.nic_bandwidth_bytes_per_s
    check_number(link, "argument", "link_bytes_per_s", minimum=1e3, maximum=1e18, unit="bytes/s")
    rate = flop_rates(gpu, work.weight_bits, setting.assumptions)[1]
    attention_rate, overhead, eager, graphs = None, 0.0, 0.0, math.inf
    profile = setting.assumptions.profile()
    if profile is not None:
        rate, attention_rate, overhead = engine_rates(work, gpu, setting.assumptions, profile)
        eager = profile.step_time_scale * work.layers * profile.eager_layer_overhead_s
        graphs = profile.cuda_graph_max_batch or math.inf
    return ChainCosts(
        flop_per_token=2.0 * work.active_params,
        attention_flop_per_pair_per_layer=work.context_flop_per_position_per_layer,
        kv_bytes_per_position_per_layer=work.kv_bytes_per_position_per_layer,
        layer_windows=tuple((g.layers, g.window) for g in work.groups),
        flop_per_s=devices_gpus * rate,
        link_bytes_per_s=float(link),
        link_latency_s=float(link_latency_s),
        attention_flop_per_s=None if attention_rate is None else devices_gpus * attention_rate,
        pass_overhead_s=overhead,
        eager_overhead_s=eager,
        graph_max_tokens=float(graphs),
    )


def engine_rates(work, gpu, assumptions, profile) -> tuple[float, float, float]:
    """(FLOP/s of 2·P_act per token, FLOP/s of attention, seconds per pass) of one GPU at an
    engine's efficiencies (docs/model.md §B9 with Part F). A device's chunk is thousands of
    tokens, so its GEMMs are at the large-shape limit of §F2 (the size factor taken as 1,
    routed experts evenly loaded, at ``moe_gemm_efficiency``); attention runs at
    ``attention_efficiency`` of the 16-bit peak (§F3); a pass pays the per-layer, per-step and
    per-sequence overheads of §F5; ``step_time_scale`` divides every rate."""
    peak = gpu.peak_flop_per_s(work.weight_bits, assumptions.native_fp4)
    eta = best_gemm_efficiency(gpu, work.weight_bits) * profile.gemm_efficiency_scale
    if work.weight_bits <= 4 and peak > gpu.peak_flop_per_s(8) * (1 + 1e-9):
        eta *= profile.fp4_gemm_efficiency
    if is_power_limited_card(gpu):
        eta *= profile.pcie_card_gemm_efficiency
    routed = sum(
        g.layers * g.experts * work.ff_params_per_expert(g) / g.sparsity
        for g in work.groups
        if g.experts > 1
    )
    share = routed / work.active_params  # of the FLOP per token, in routed experts
    scale = profile.step_time_scale
    gemm = peak * eta / ((1.0 - share) + share / profile.moe_gemm_efficiency) / scale
    attention = gpu.peak_flop_per_s(16) * profile.attention_efficiency / scale
    overhead = scale * (
        work.layers * profile.layer_overhead_s
        + profile.step_overhead_s
        + profile.sequence_overhead_s
    )
    return gemm, attention, overhead


def equal_chunks(tokens: float, devices: int) -> list[float]:
    """Chunk boundaries [0, …, tokens] with equal lengths."""
    return list(np.linspace(0.0, float(tokens), devices + 1))


def device_times(costs: ChainCosts, boundaries) -> np.ndarray:
    """KV-Runahead: per-device seconds = its compute + receiving its prefix (0 for a device
    left without tokens, which drops out of the chain)."""
    b = list(boundaries)
    return np.array(
        [
            costs.compute_s(s, e) + costs.receive_s(s) if e > s else 0.0
            for s, e in zip(b[:-1], b[1:])
        ]
    )


def balanced_chunks(costs: ChainCosts, tokens: float, devices: int) -> list[float]:
    """Boundaries that make every device's time (compute + prefix transfer) equal.

    Bisection on the common time T: each device in turn takes the longest chunk it can finish
    within T (the root of a quadratic, ``ChainCosts.reach``); T is feasible when the devices
    cover the prompt. On a slow link the last devices
    may get nothing: receiving the long prefix would cost more than they save.
    """

    def cover(target: float) -> list[float]:
        bounds = [0.0]
        for _ in range(devices):
            s = bounds[-1]
            budget = target - costs.receive_s(s)
            if budget <= 0:
                bounds.append(s)
                continue
            bounds.append(min(max(costs.reach(s, budget), s), float(tokens)))
        return bounds

    hi = costs.compute_s(0.0, tokens) + costs.receive_s(tokens)
    lo = 0.0
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if cover(mid)[-1] >= tokens * (1 - 1e-12):
            hi = mid
        else:
            lo = mid
    # snap the boundary that (numerically) reaches the end, so no device gets a sliver
    return [b if b < tokens * (1 - 1e-9) else float(tokens) for b in cover(hi)]


def kv_runahead_ttft_s(
    costs: ChainCosts, tokens: float, devices: int, balanced: bool = True
) -> tuple[float, list[float], np.ndarray]:
    """(time to first token, boundaries, per-device times) of the KV-Runahead chain."""
    bounds = balanced_chunks(costs, tokens, devices) if balanced else equal_chunks(tokens, devices)
    times = device_times(costs, bounds)
    return float(times.max()), bounds, times


def allgather_ttft_s(costs: ChainCosts, tokens: float, devices: int) -> float:
    """Sequence parallelism with a synchronous all-gather of the KV after every layer."""
    bounds = equal_chunks(tokens, devices)
    slowest = max(costs.compute_s(s, e) for s, e in zip(bounds[:-1], bounds[1:]))
    if devices == 1:
        return slowest
    # every layer gathers the KV its tokens attend to: the whole prompt's, or the last
    # ``window`` positions before each chunk in a sliding-window layer
    gathered = costs.prefix_bytes(tokens) / costs.link_bytes_per_s
    latency = costs.layers * costs.link_latency_s * math.log2(devices)
    return slowest + latency + (devices - 1) / devices * gathered


def compare(
    setting: Setting,
    prompt_tokens,
    devices: int,
    link_bytes_per_s: float | None = None,
    devices_gpus: float = 1.0,
):
    """Single device vs all-gather vs KV-Runahead (equal and balanced chunks), per prompt length."""
    import pandas as pd

    devices = table.option("devices").check(devices)
    lengths = table.option("prompt_lengths").check(prompt_tokens, "argument", "prompt_tokens")
    check_number(devices_gpus, "argument", "devices_gpus", minimum=0, exclusive_minimum=True)
    check_context(setting.model, float(max(lengths)))
    costs = chain_costs(setting, devices_gpus, link_bytes_per_s)
    rows = []
    for tokens in lengths:
        single = costs.compute_s(0.0, float(tokens))
        equal, _, equal_times = kv_runahead_ttft_s(costs, tokens, int(devices), balanced=False)
        balanced, bounds, times = kv_runahead_ttft_s(costs, tokens, int(devices), balanced=True)
        gather = allgather_ttft_s(costs, tokens, int(devices))
        rows.append(
            {
                "prompt_tokens": float(tokens),
                "devices": int(devices),
                "link_gb_per_s": costs.link_bytes_per_s / 1e9,
                "single_device_s": single,
                "allgather_s": gather,
                "kv_runahead_equal_s": equal,
                "kv_runahead_balanced_s": balanced,
                "speedup_allgather": single / gather,
                "speedup_kv_runahead": single / balanced,
                "chunk_tokens": ", ".join(f"{e - s:.0f}" for s, e in zip(bounds[:-1], bounds[1:])),
                "devices_used": int((times > 0).sum()),
                "equal_chunks_spread": float(equal_times.max() / equal_times.min()),
            }
        )
    return pd.DataFrame(rows)
