"""Context-parallel prefill of one long prompt over D devices (docs/model.md §B9, KV-Runahead).

The prompt is cut into D contiguous chunks, one per device. Device i prefills its chunk
[s_i, e_i) with the keys and values of [0, s_i) already in its memory: the same step model as
``prefill`` (docs/model.md §B8) with s_i tokens cached, so each chunk pays the weight reads, the
prefix's KV reads, the per-pass overheads and the roofline of memory against arithmetic, and
does not fit where the weights plus its KV cache exceed the device's HBM. Two ways to give a
device the earlier tokens' keys and values:

* **ring attention** (load-balanced context parallelism): the prompt is cut into 2D pieces and
  device i takes pieces i and 2D − 1 − i, so every device prefills n/D tokens with the same
  causal attention work; each layer the devices pass their keys and values round the ring,
  behind their attention arithmetic, and only what the arithmetic does not hide is added;
* **KV-Runahead**: a point-to-point chain; device i receives the accumulated KV of tokens
  [0, s_i) from device i − 1 and sends [0, e_i) on. Its time is its chunk plus receiving its
  prefix (one link latency and the prefix's bytes); the time to first token is the slowest
  device's time. Balanced chunks make all devices equally slow: later chunks are shorter
  because each later token attends to more.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import settings as table
from ..errors import InfeasibleError
from ..model.latency import StepModel
from ..specs.schema import check_number
from .prefill import chunk_time_s, prefill_model
from .setting import Setting, check_context


@dataclass(frozen=True)
class ChainCosts:
    """What one device's chunk costs: the prefill step model on ``gpus`` GPUs (its layouts,
    pipelining allowed or not), KV bytes per position per layer with each layer group's
    attention window (inf: full attention), and the link between devices."""

    model: StepModel
    gpus: float
    pipeline: bool
    link_bytes_per_s: float
    link_latency_s: float

    @property
    def layers(self) -> int:
        return self.model.work.layers

    @property
    def kv_bytes_per_position_per_layer(self) -> float:
        return self.model.work.kv_bytes_per_position_per_layer

    def compute_s(self, start, end):
        """Seconds for one device to prefill tokens [start, end) with [0, start) cached (the
        step model of ``prefill``; inf where it does not fit, 0 for no tokens). Vectorised."""
        start, end = np.broadcast_arrays(np.asarray(start, float), np.asarray(end, float))
        out = np.zeros(start.shape)
        some = end > start
        if np.any(some):
            out[some] = chunk_time_s(self.model, self.gpus, self.pipeline, start[some], end[some])
        return out if out.ndim else float(out)

    def prefix_bytes(self, start):
        """KV-cache bytes of the prefix [0, start) that later tokens attend to: all of it in
        full-attention layers, its last ``window`` positions in sliding-window layers."""
        return self.model.work.layer_positions(start) * self.kv_bytes_per_position_per_layer

    def receive_s(self, start):
        """Seconds to receive the keys and values of tokens [0, start) over the link."""
        start = np.asarray(start, float)
        out = np.where(
            start > 0, self.link_latency_s + self.prefix_bytes(start) / self.link_bytes_per_s, 0.0
        )
        return out if out.ndim else float(out)


def chain_costs(
    setting: Setting,
    devices_gpus: float = 1.0,
    link_bytes_per_s: float | None = None,
    link_latency_s: float = 10e-6,
) -> ChainCosts:
    """Costs for a setting: each device is ``devices_gpus`` GPUs running the prefill step model
    of the setting's preset; the link defaults to the scale-out NICs of a device's GPUs (one
    direction; each GPU sends its shard of the keys and values over its own NIC, §B9)."""
    gpu = setting.gpu
    link = (
        link_bytes_per_s
        if link_bytes_per_s is not None
        else float(devices_gpus) * gpu.nic_bandwidth_bytes_per_s
    )
    check_number(link, "argument", "link_bytes_per_s", minimum=1e3, maximum=1e18, unit="bytes/s")
    return ChainCosts(
        model=prefill_model(setting),
        gpus=float(devices_gpus),
        pipeline=setting.pipeline,
        link_bytes_per_s=float(link),
        link_latency_s=float(link_latency_s),
    )


def equal_chunks(tokens: float, devices: int) -> list[float]:
    """Chunk boundaries [0, …, tokens] with equal lengths, in whole tokens (a prompt shorter
    than the chain leaves the last devices without tokens)."""
    return [float(b) for b in np.round(np.linspace(0.0, float(tokens), devices + 1))]


def device_times(costs: ChainCosts, boundaries) -> np.ndarray:
    """KV-Runahead: per-device seconds = its chunk + receiving its prefix (0 for a device
    left without tokens, which drops out of the chain)."""
    b = np.asarray(boundaries, float)
    s, e = b[:-1], b[1:]
    return np.where(e > s, costs.compute_s(s, e) + costs.receive_s(s), 0.0)


class _ChunkTable:
    """Chunk times on a grid of (start, share of the rest of the prompt), one vectorised call
    of the step model, for the balancing search: a device at ``start`` finds the chunk it can
    finish in a budget by interpolating between grid rows (the final times are exact)."""

    def __init__(self, costs: ChainCosts, tokens: float, rows: int = 64, cols: int = 96):
        self.tokens = float(tokens)
        top = max(tokens - 1.0, 1.0)
        self.starts = np.unique(np.concatenate([[0.0], np.geomspace(1.0, top, rows - 1)]))
        self.shares = np.geomspace(min(1.0 / max(tokens, 1.0), 1.0), 1.0, cols)
        s, q = np.meshgrid(self.starts, self.shares, indexing="ij")
        end = np.minimum(s + np.maximum(q * (tokens - s), 1.0), tokens)
        times = costs.compute_s(s, np.maximum(end, s + 1.0))
        self.times = np.maximum.accumulate(times, axis=1)  # nondecreasing along a row

    def reach(self, start: float, budget: float) -> float:
        """The end e whose chunk [start, e) takes ``budget`` seconds (``start`` when not even
        one token fits in it)."""
        j = int(np.clip(np.searchsorted(self.starts, start, side="right") - 1, 0, None))
        k = min(j + 1, self.starts.size - 1)
        w = 0.0 if k == j else (start - self.starts[j]) / (self.starts[k] - self.starts[j])
        row = (1.0 - w) * self.times[j] + w * self.times[k]
        if not budget >= row[0]:
            return start
        share = float(np.interp(budget, row, self.shares))
        return min(start + max(share * (self.tokens - start), 1.0), self.tokens)


def balanced_chunks(costs: ChainCosts, tokens: float, devices: int) -> list[float]:
    """Boundaries, in whole tokens, that make every device's time (chunk + prefix transfer)
    as equal as whole tokens allow.

    Bisection on the common time T: each device in turn takes the longest chunk it can
    finish within T (read off a table of the step model's chunk times); T is feasible when the
    devices cover the prompt. A device that cannot finish even one token within T takes none
    and leaves the rest of the chain idle (on a slow link receiving the long prefix costs
    more than it saves)."""
    grid = _ChunkTable(costs, tokens)

    def cover(target: float) -> list[float]:
        bounds = [0.0]
        for _ in range(devices):
            s = bounds[-1]
            e = grid.reach(s, target - costs.receive_s(s)) if s < tokens else s
            bounds.append(e)
            if e <= s:
                break
        return bounds + [bounds[-1]] * (devices + 1 - len(bounds))

    hi = float(costs.compute_s(0.0, tokens))
    lo = 0.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if cover(mid)[-1] >= tokens * (1 - 1e-12):
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-9 * hi:
            break
    return _whole_tokens(cover(hi), tokens)


def _whole_tokens(bounds, tokens: float) -> list[float]:
    """Boundaries rounded to whole tokens, the last at the prompt's end, never decreasing."""
    out = np.maximum.accumulate(np.round(np.asarray(bounds, float)))
    out[-1] = float(tokens)
    return [float(b) for b in np.minimum(out, float(tokens))]


def kv_runahead_ttft_s(
    costs: ChainCosts, tokens: float, devices: int, balanced: bool = True
) -> tuple[float, list[float], np.ndarray]:
    """(time to first token, boundaries, per-device times) of the KV-Runahead chain."""
    bounds = equal_chunks(tokens, devices)
    times = device_times(costs, bounds)
    if balanced:  # the search reads interpolated times: keep equal chunks if they are faster
        tuned = balanced_chunks(costs, tokens, devices)
        tuned_times = device_times(costs, tuned)
        if tuned_times.max() <= times.max():
            bounds, times = tuned, tuned_times
    return float(times.max()), bounds, times


def ring_attention_ttft_s(costs: ChainCosts, tokens: float, devices: int) -> float:
    """Load-balanced ring attention (context parallelism with keys and values passed round a
    ring, as Llama 3 and "Context Parallelism for Scalable Million-Token Inference" (Yang et
    al., 2024) run it; docs/model.md §B9): every device prefills n/D tokens whose attention is
    1/D of the prompt's causal attention (pieces i and 2D − 1 − i of 2D), i.e. a pass of n/D
    tokens at mean context n/2; each layer it receives the other D − 1 shards of keys and
    values, (D − 1)/D of the prompt's, while it computes attention, so only the transfer its
    attention arithmetic does not hide is added, plus one link latency per ring step."""
    n, D = float(tokens), int(devices)
    if D <= 1 or n <= D:
        return float(costs.compute_s(0.0, n))
    S = math.ceil(n / D)
    start = max(n / 2.0 - S / 2.0, 0.0)  # a pass [start, start + S) has mean context n/2
    compute = float(costs.compute_s(start, start + S))
    w, m = costs.model.work, costs.model.machine
    attention = float(w.flop(1.0, S, start)[1]) / (costs.gpus * m.attention_flop_per_s)
    transfer = (D - 1) / D * float(costs.prefix_bytes(n)) / costs.link_bytes_per_s
    latency = costs.layers * (D - 1) * costs.link_latency_s
    return compute + max(transfer + latency - attention, 0.0)


def compare(
    setting: Setting,
    prompt_tokens,
    devices: int,
    link_bytes_per_s: float | None = None,
    devices_gpus: float = 1.0,
):
    """Single device vs ring attention vs KV-Runahead (equal and balanced chunks), per prompt
    length. Raises ``InfeasibleError`` when the weights and a prompt's KV cache do not fit on
    one device."""
    import pandas as pd

    devices = int(table.option("devices").check(devices))
    lengths = table.option("prompt_lengths").check(prompt_tokens, "argument", "prompt_tokens")
    devices_gpus = table.option("device_gpus").check(devices_gpus)
    check_context(setting.model, float(max(lengths)))
    costs = chain_costs(setting, devices_gpus, link_bytes_per_s)
    rows = []
    for tokens in (float(round(t)) for t in lengths):
        single = float(costs.compute_s(0.0, tokens))
        if not math.isfinite(single):
            raise InfeasibleError(
                f"{setting.model.name} with a {tokens:,.0f}-token prompt does not fit on one "
                f"device of {devices_gpus:g} x {setting.gpu.name}: its weights plus KV cache "
                "exceed the device's HBM (give each device more GPUs: --device-gpus)"
            )
        equal, _, equal_times = kv_runahead_ttft_s(costs, tokens, devices, balanced=False)
        balanced, bounds, times = kv_runahead_ttft_s(costs, tokens, devices, balanced=True)
        ring = ring_attention_ttft_s(costs, tokens, devices)
        chunks = np.diff(bounds)
        busy = equal_times[equal_times > 0]
        rows.append(
            {
                "prompt_tokens": tokens,
                "devices": devices,
                "device_gpus": devices_gpus,
                "link_gb_per_s": costs.link_bytes_per_s / 1e9,
                "single_device_s": single,
                "ring_attention_s": ring,
                "kv_runahead_equal_s": equal,
                "kv_runahead_balanced_s": balanced,
                "speedup_ring_attention": single / ring,
                "speedup_kv_runahead": single / balanced,
                "chunk_tokens": ", ".join(f"{c:.0f}" for c in chunks[chunks > 0]),
                "devices_used": int(np.sum(chunks > 0)),
                "equal_chunks_spread": float(busy.max() / busy.min()),
            }
        )
    return pd.DataFrame(rows)
