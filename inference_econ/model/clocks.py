"""The two clocks that price a step's operations (docs/model.md "A step as operations").

A clock turns a ``StepOperations`` list into seconds per operation, by the additive
parts of ``Breakdown`` (``ADDITIVE_PARTS``: host work, kernel launches, GEMM fixed cost,
collective latency and bandwidth, weight, KV and activation reads, arithmetic), so that the step's total, and every aggregate
the breakdown has always shown, are sums over the operations:

* ``RooflineClock`` (the ideal presets, §A5): kernel launches and collectives add; each
  operation's memory seconds (its bytes over the sustained bandwidth) and compute seconds
  (its FLOP per GPU over the rate it runs at) are summed over the step, and the step's
  max(memory, compute) is attributed to the operations by the binding side: each takes its
  own memory seconds where memory binds, its compute seconds where compute does. The total is
  ``StepModel.latency`` exactly.
* ``EngineClock`` (an engine profile, Part F): the engine step's per-class charges
  (``efficiency.combine``'s ``StepTimes``) attributed to the operations of each class, in
  proportion to each one's share of the class's work. The total is ``StepModel.latency``
  under ``achievable``. Each operation carries the shape a measured kernel table needs, so a
  clock that prices the operations from such tables can replace this one.
"""

from __future__ import annotations

import numpy as np

from .breakdown import ADDITIVE_PARTS
from .efficiency import StepTimes, StepWork, combine, gemm_compute_s
from .operations import StepOperations
from .step_calls import EXCHANGE_OPERATIONS, exchange_terms_s

#: The columns of a clock's parts (``ADDITIVE_PARTS``), by name.
_COLUMN = {name: i for i, name in enumerate(ADDITIVE_PARTS)}

#: The GEMM classes of ``StepWork`` (``efficiency.gemm_compute_s``): each one's seconds and
#: kernel-count fields, zeroed to charge one class alone.
GEMM_CLASSES = {
    "dense": ("dense_gemm_s", "dense_kernels"),
    "projection": ("projection_gemm_s", "projection_kernels"),
    "head": ("head_gemm_s",),
    "expert": ("expert_gemm_s",),
}


class Clock:
    """Prices a step's operations: ``parts`` (seconds by operation and additive part),
    ``price`` (seconds per operation), ``total`` (the step; inf where it does not fit)."""

    name = ""

    def parts(self, step: StepOperations) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def price(self, step: StepOperations) -> np.ndarray:
        """Seconds of each operation of the step."""
        return self.parts(step).sum(axis=1)

    def total(self, step: StepOperations) -> float:
        """Seconds of the step: the sum of its operations' (inf where it does not fit)."""
        return float(np.sum(self.price(step))) if step.fits else np.inf

    def by_class(self, step: StepOperations) -> dict[str, float]:
        """Seconds of the step by operation class (gemm, attention, collective, ...)."""
        out: dict[str, float] = {}
        for op, seconds in zip(step, self.price(step)):
            out[op.kind] = out.get(op.kind, 0.0) + float(seconds)
        return out

    def aggregates(self, step: StepOperations) -> dict[str, float]:
        """The breakdown's additive parts (``ADDITIVE_PARTS``) as sums over the operations."""
        sums = self.parts(step).sum(axis=0)
        return {name: float(sums[i]) for name, i in _COLUMN.items()}


class RooflineClock(Clock):
    """The ideal step of §A5: launches + collectives + max(memory, compute)."""

    name = "roofline"

    def memory_compute(self, step: StepOperations) -> tuple[np.ndarray, np.ndarray]:
        """(memory seconds, compute seconds) of each operation: its bytes over the sustained
        bandwidth, its FLOP per GPU over the attention rate (attention), the routed experts'
        (the fused MoE's, §B15) or the GEMMs'."""
        m = step.model.machine
        memory = np.array([op.bytes for op in step]) / m.hbm_bandwidth_bytes_per_s
        by_kind = {"attention": m.attention_flop_per_s, "moe": m.expert_flop_per_s}
        rates = [by_kind.get(op.kind, m.flop_per_s) for op in step]
        compute = np.array([op.flop_per_gpu for op in step]) / np.array(rates)
        return memory, compute

    def parts(self, step: StepOperations) -> np.ndarray:
        m = step.model.machine
        out = np.zeros((len(step), len(ADDITIVE_PARTS)))
        memory, compute = self.memory_compute(step)
        memory_bound = memory.sum() >= compute.sum()
        for i, op in enumerate(step):
            if op.kind == "launch":
                out[i, _COLUMN["kernel_launch_s"]] = op.calls * m.launch_s
            if op.collective is not None:
                lat, bw = op.collective.terms_s()
                out[i, _COLUMN["collective_latency_s"]] = lat
                out[i, _COLUMN["collective_bandwidth_s"]] = bw
            if memory_bound:
                bw_s = m.hbm_bandwidth_bytes_per_s
                out[i, _COLUMN["weight_read_s"]] = op.weight_bytes / bw_s
                out[i, _COLUMN["kv_read_s"]] = op.kv_bytes / bw_s
                out[i, _COLUMN["activation_read_s"]] = op.activation_bytes / bw_s
            else:
                out[i, _COLUMN["arithmetic_s"]] = compute[i]
        return out


class EngineClock(Clock):
    """The engine step of Part F, its per-class charges attributed to the operations."""

    name = "engine"

    def step_work(self, step: StepOperations) -> StepWork:
        """The engine step's ``StepWork`` of the layout, with its collectives (as
        ``StepModel.breakdown`` builds it)."""
        model, part, adiv, two_d = step.model, step.part, step.adiv, step.two_d
        assert model.engine is not None, "the engine clock prices an engine profile's steps"
        lat, bw = model.collective_terms(part, adiv, two_d)
        reads = model.attention_reads(part, adiv)
        fusable = model.fusable_bandwidth_s(part, adiv, two_d)
        exchange = exchange_terms_s(model, part, adiv)
        return model.engine.step_work(part, adiv, lat, bw, reads, fusable, exchange)

    def parts(self, step: StepOperations) -> np.ndarray:
        profile = step.model.engine.profile
        work = self.step_work(step)
        times = combine(work, profile)
        pools = _Pools(step, work, times, profile)
        out = np.zeros((len(step), len(ADDITIVE_PARTS)))
        for column, total, weights in pools.charges():
            out[:, _COLUMN[column]] += _shared(total, weights)
        return out


class _Pools:
    """The engine step's charges (``StepTimes``) and, for each, every operation's weight in
    it: its share of the class's ideal work."""

    def __init__(self, step: StepOperations, work: StepWork, times: StepTimes, profile) -> None:
        self.step, self.work, self.times, self.profile = step, work, times, profile
        self.ops = list(step)
        self.bw = step.model.machine.gpu.hbm_bandwidth_bytes_per_s
        self.scale = profile.step_time_scale

    def _where(self, test) -> np.ndarray:
        return np.array([1.0 if test(op) else 0.0 for op in self.ops])

    def _of(self, values) -> np.ndarray:
        return np.array([float(v) for v in values])

    def charges(self):
        """(additive part, seconds, weight of each operation) of every charge of the step."""
        t = self.times
        host = float(t.host_s)
        launch = float(t.overhead_s) - float(t.gemm_fixed_s) - host  # the per-layer overhead
        yield "host_s", host, self._where(lambda op: op.work == "host")
        yield "kernel_launch_s", launch, self._where(lambda op: op.work == "launch")
        launches = self.step.model.kernel_s  # none under an engine profile (its overheads)
        yield "kernel_launch_s", launches, self._where(lambda op: op.work == "launch")
        classes = self._gemm_classes()
        yield "gemm_fixed_s", float(t.gemm_fixed_s), self._gemm_weights(classes, 1, "calls")
        yield from self._collectives()
        yield "activation_read_s", float(t.elementwise_s), self._elementwise()
        # each roofline's reads in full, and its arithmetic beyond them (``_breakdown``)
        yield "weight_read_s", float(t.gemm_weight_s), self._weights()
        rest = float(t.gemm_memory_s) - float(t.gemm_weight_s)
        yield "activation_read_s", rest, self._activations()
        beyond = max(float(t.gemm_compute_s) - float(t.gemm_memory_s), 0.0)
        yield "arithmetic_s", beyond, self._gemm_weights(classes, 0, "flop")
        yield "kv_read_s", float(t.kv_s), self._kv()
        attention = self._of(
            op.flop_per_gpu if op.work in ("attention", "state") else 0.0 for op in self.ops
        )
        yield "arithmetic_s", max(float(t.attention_compute_s) - float(t.kv_s), 0.0), attention

    def _gemm_classes(self) -> dict[str, tuple[float, float]]:
        """(arithmetic, fixed) seconds of each GEMM class charged alone (the others' work and
        kernels zeroed): how the step's GEMM charges divide among the classes."""
        out = {}
        for name in GEMM_CLASSES:
            zero = {f: 0.0 for other, fs in GEMM_CLASSES.items() if other != name for f in fs}
            arithmetic, fixed, floor = gemm_compute_s(self.work.replace(**zero), self.profile)
            out[name] = (float(arithmetic), float(fixed) + float(floor))
        return out

    def _gemm_weights(self, classes, which: int, within: str) -> np.ndarray:
        """Each GEMM operation's weight in a GEMM charge: its class's (``which``: arithmetic
        or fixed) shared within the class by FLOP per GPU or by calls (``within``)."""
        key = (lambda op: op.flop_per_gpu) if within == "flop" else (lambda op: op.calls)
        totals = {name: 0.0 for name in GEMM_CLASSES}
        for op in self.ops:
            if op.work in totals:
                totals[op.work] += key(op)
        return self._of(
            classes[op.work][which] * key(op) / totals[op.work]
            if op.work in totals and totals[op.work] > 0.0
            else 0.0
            for op in self.ops
        )

    def _weights(self) -> np.ndarray:
        """Weight reads by their ideal seconds: the routed experts' at the profile's
        ``hbm_efficiency``, the others' at the part's small-batch streaming share if any."""
        share = float(self.work.small_batch_stream_share)
        other = share if share > 0.0 else self.profile.hbm_efficiency
        return self._of(
            op.weight_bytes / (self.profile.hbm_efficiency if op.work == "expert" else other)
            for op in self.ops
        )

    def _activations(self) -> np.ndarray:
        """The GEMMs' activation reads and the activation function's rows (the engine charges
        both on the GEMMs' memory side), each activation operation by its rows."""
        ap = self.step.part.achievable
        rows = self._of(
            op.calls * op.shape["passes"] * op.shape["width"] if op.work == "activation" else 0.0
            for op in self.ops
        )
        function = _shared(float(ap.activation_ff_s) if ap is not None else 0.0, rows)
        return self._of(op.activation_bytes / self.bw for op in self.ops) + function

    def _elementwise(self) -> np.ndarray:
        """The elementwise passes over each token's row and the logits (§F1)."""
        passes = self.profile.elementwise_passes * float(self.work.elementwise_read_s)
        logits = float(self.work.logits_read_s)
        return self._of(
            passes if op.work == "elementwise" else logits if op.work == "logits" else 0.0
            for op in self.ops
        )

    def _kv(self) -> np.ndarray:
        """KV reads: the cache's and each request's own positions (attention), the state."""
        request = self.profile.kv_request_positions * float(self.work.kv_request_read_s)
        return self._of(
            op.kv_bytes / self.bw + (request if op.work == "attention" else 0.0) for op in self.ops
        )

    def _collectives(self):
        """Collective latency by each call's latency; the bandwidth left exposed by each
        call's bandwidth, the row-parallel all-reduces' less what their GEMMs hide (§F6)."""
        t = self.times
        terms = [
            op.collective.terms_s() if op.collective is not None else (0.0, 0.0) for op in self.ops
        ]
        lat = self._of(float(x) for x, _ in terms)
        bw = self._of(float(y) for _, y in terms)
        if self.step.model.engine.overlap_family is not None:  # two-batch overlap (§F7)
            yield from self._overlapped(lat, bw)
            return
        yield "collective_latency_s", float(t.collective_latency_s), lat
        fused = self._where(lambda op: op.work == "row-parallel all-reduce")
        hidden = self.scale * bw.sum() - float(t.collective_bandwidth_s)
        fusable = self.scale * float((bw * fused).sum())
        kept = 1.0 - hidden / fusable if fusable > 0.0 else 1.0
        yield (
            "collective_bandwidth_s",
            float(t.collective_bandwidth_s),
            bw * np.where(fused > 0.0, kept, 1.0),
        )

    def _overlapped(self, lat: np.ndarray, bw: np.ndarray):
        """Collectives of a step whose MoE exchange runs under the other micro-batch's work:
        the others as they are, the dispatch and combine calls what shows of theirs (what
        the step's collective seconds hold beyond the others')."""
        t, names = self.times, EXCHANGE_OPERATIONS
        exchange = self._where(lambda op: op.collective is not None and op.name.startswith(names))
        for part, each in (("collective_latency_s", lat), ("collective_bandwidth_s", bw)):
            total = float(getattr(t, part))
            others = self.scale * float((each * (1.0 - exchange)).sum())
            own = self.scale * float((each * exchange).sum())
            kept = max(total - others, 0.0) / own if own > 0.0 else 1.0
            kept = kept if kept > 1e-9 else 0.0  # hidden whole (a sum's rounding apart)
            yield part, total, each * np.where(exchange > 0.0, kept, 1.0)


def _shared(total: float, weights: np.ndarray) -> np.ndarray:
    """``total`` divided in proportion to ``weights`` (evenly where every weight is 0)."""
    weights = np.asarray(weights, dtype=float)
    s = weights.sum()
    if total == 0.0:
        return np.zeros_like(weights)
    if s <= 0.0:
        return np.full_like(weights, total / len(weights))
    return total * weights / s
