"""Speculative decoding inside the load engine (docs/model.md §E8).

The decode commands price speculation at a steady batch (§A6, §C3: ``serving/speculative.py``
holds the cycles, the tokens a cycle yields and the passes it runs). Under load the batch
changes every step, so the engine decides at every step whether to speculate and with which
cycle, as serving engines do:

* ``fixed`` (vLLM's ``num_speculative_tokens``, SGLang's ``--speculative-num-steps``): the
  configured draft, the longest cycle ``max_draft_tokens`` allows, at every batch;
* ``by_batch`` (TensorRT-LLM's ``draft_len_schedule``, SmartSpec): at each batch the cycle
  with the shortest time per generated token at the reference context, or none;

and both switch speculation off above ``speculation_max_batch`` running requests (vLLM's
``disable_by_batch_size``, TensorRT-LLM's ``max_concurrency``, SGLang's
``--speculative-batch-size-threshold``) and wherever a cycle's verification would not fit the
step's token budget.

A speculative step of ``D`` decoding requests is the target's verification pass over ``D·v``
tokens (``v`` tokens per request, each request's cache read once and attended ``v`` times)
plus the cycle's draft passes on the draft's own step table; every request advances by the
cycle's expected tokens ``E`` (``Cycle.expected_tokens``, the one home of §A6/§C3's formula).
Acceptance is per token and does not depend on the batch (no public measurement shows it
does); what changes with the batch is whether a cycle pays.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Literal, get_args, overload

import numpy as np

from ..errors import InfeasibleError
from ..model.assumptions import Assumptions
from ..model.efficiency import host_overhead_s
from ..model.latency import StepModel
from ..model.mixed_step import EngineLayout, StepTable, candidate_layouts
from ..model.workload import Workload
from ..serving.speculative import Cycle, DraftHeads, SpecDecoding
from ..specs.hardware import GPU

#: How the engine picks its cycle at a batch (module docstring).
SpecSchedule = Literal["fixed", "by_batch"]
SPEC_SCHEDULES: tuple[SpecSchedule, ...] = get_args(SpecSchedule)


def resident_draft(spec, assumptions: Assumptions) -> tuple[Workload, int]:
    """What speculation keeps in the instance's memory beside the target: (workload, copies).
    Draft heads keep their own weights and cache (§C3); a draft model under load does too (the
    engine holds it: its weights and its KV cache of every running request, §E8), although
    the steady-state model of §A6 charges it to no one."""
    if isinstance(spec, DraftHeads):
        return spec.resident(assumptions)
    return spec.draft_workload(assumptions), 1


@dataclass(frozen=True, eq=False)
class DraftEngine:
    """The draft side of an instance: its passes' step table, the cycles tried and how the
    engine chooses among them (module docstring)."""

    spec: SpecDecoding | DraftHeads
    table: StepTable
    layout: EngineLayout
    #: Layers of the draft (its KV layer-positions are its layers times a context).
    layers: float
    #: Layers of the target, for the draft's positions from the target's (no windows).
    target_layers: float
    cycles: tuple[Cycle, ...]
    schedule: SpecSchedule
    max_batch: int | None
    budget: int
    #: The context the ``by_batch`` choice compares cycles at (the instance's reference).
    context: float

    @property
    def fixed_cycle(self) -> Cycle:
        """The configured draft: the longest cycle tried."""
        return self.cycles[-1]

    def describe(self) -> str:
        """Such as "draft model X, acceptance 0.8, fixed draft of 5 tokens, off above 32"."""
        how = (
            f"fixed cycle of up to {self.fixed_cycle.label} tokens"
            if self.schedule == "fixed"
            else f"cycle chosen per batch (up to {self.fixed_cycle.label} tokens)"
        )
        off = f", off above {self.max_batch} running requests" if self.max_batch else ""
        return f"{self.spec.describe()}; {how}{off}"

    @overload
    def draft_positions(self, contexts_sum: float) -> float: ...
    @overload
    def draft_positions(self, contexts_sum: np.ndarray) -> np.ndarray: ...
    def draft_positions(self, contexts_sum):
        """The draft's KV layer-positions for a sum of contexts (its windows ignored)."""
        return self.layers * contexts_sum

    def cycle_s(self, target: StepTable, D: int, q: float, contexts_sum: float, c: Cycle):
        """Seconds of one speculative step of ``D`` requests whose target KV layer-positions
        are ``q`` and whose contexts sum to ``contexts_sum``: verification plus drafts."""
        v = c.verify_tokens
        total = target.time_s(D * v, q, v * q, D, v)
        qd = self.draft_positions(contexts_sum)
        for tokens, count in c.draft_passes:
            total += count * self.table.time_s(D * tokens, qd, tokens * qd, D, tokens)
        return total

    def run_s(self, target: StepTable, D: int, q0, g, s0, gs, steps: int, c: Cycle) -> float:
        """Seconds of ``steps`` speculative steps in closed form: target positions ``q0 +
        g·j``, sum of contexts ``s0 + gs·j`` at step ``j``."""
        v = c.verify_tokens
        total = target.run_time_s(D * v, q0, g, steps, D, v)
        qd0, gd = self.draft_positions(s0), self.draft_positions(gs)
        for tokens, count in c.draft_passes:
            total += count * self.table.run_time_s(D * tokens, qd0, gd, steps, D, tokens)
        return total

    def step_work(self, D: int, c: Cycle | None, contexts_sum: float, chunks, taken: int):
        """(seconds, FLOP, seconds without the prompt chunks) the draft adds to a step with
        prompt tokens: its passes for the ``D`` decoding requests (contexts summing to
        ``contexts_sum``) when the step speculates (``c``), and its own prefill of the prompt
        chunks, ``chunks`` (tokens prefilled before the step, tokens taken) of each prompt,
        ``taken`` in all (its cache follows the target's, §E8)."""
        tab = self.table
        seconds = flop = decode_only = 0.0
        if c is not None:
            qd = self.draft_positions(contexts_sum)
            for tokens, count in c.draft_passes:
                s = tab.time_s(D * tokens, qd, tokens * qd, D, tokens)
                seconds += count * s
                decode_only += count * s
                flop += count * (tab.flop[D * tokens] + tab.attention_flop * tokens * qd)
        if taken:
            kv = sum(self.layers * done for done, _ in chunks)
            att = sum(take * self.layers * (done + (take - 1) / 2.0) for done, take in chunks)
            largest = max(take for _, take in chunks)
            seconds += tab.time_s(taken, kv, att, len(chunks), largest, kv, att)
            flop += tab.flop[taken] + tab.attention_flop * att
        return seconds, flop, decode_only

    def cycle_at(self, target: StepTable, D: int, per_request_q: float) -> Cycle | None:
        """The cycle the engine runs with ``D`` decoding requests (None: no speculation)."""
        return _choice(self, target, D, per_request_q)

    def fits(self, D: int, c: Cycle) -> bool:
        return D * c.verify_tokens <= min(self.budget, self.table.max_tokens)


@functools.lru_cache(maxsize=65536)
def _choice(draft: DraftEngine, target: StepTable, D: int, q1: float) -> Cycle | None:
    if D < 1 or (draft.max_batch is not None and draft.max_batch < D):
        return None
    if draft.schedule == "fixed":
        c = draft.fixed_cycle
        return c if draft.fits(D, c) else None
    q, ctx = D * q1, D * draft.context
    best, best_s = None, target.time_s(D, q, q, D)
    for c in draft.cycles:
        if not draft.fits(D, c):
            continue
        per_token = draft.cycle_s(target, D, q, ctx, c) / c.expected_tokens
        if per_token < best_s:
            best, best_s = c, per_token
    return best


def draft_engine(
    spec,
    gpu: GPU,
    assumptions: Assumptions,
    gpus: int,
    target_layers: float,
    budget: int,
    max_tokens: int,
    schedule: SpecSchedule,
    max_batch: int | None,
    context: float,
) -> DraftEngine:
    """The draft side of an instance of ``gpus`` GPUs: the draft (or one head) on the same
    GPUs in its fastest one-token layout, tensor-parallel without pipeline stages (engines run
    the draft tensor-parallel beside the target: vLLM's draft_tensor_parallel_size); under an
    engine profile its passes carry no step overhead of their own (the engine schedules the
    step once)."""

    work = spec.draft_workload(assumptions)
    model = StepModel(work, gpu, assumptions, integer_layouts=True)
    q = work.layer_positions(context)
    best = None
    for lay in candidate_layouts(
        work,
        gpus,
        pipeline=False,
        features=model.features,
        copies=model.assumptions.kv_replication,
    ):
        table = StepTable(model, lay, max_tokens)
        t = table.time_s(1, q, q, 1)
        if best is None or t < best[0]:
            best = (t, lay, table)
    if best is None:
        raise InfeasibleError(f"no layout runs the draft {spec.describe()} on {gpus} GPUs")
    _, layout, table = best
    if model.profile is not None:  # its passes run inside the target's engine step, whose
        # scheduling and input preparation (§F5's step overhead) the target's table holds
        once = model.profile.step_time_scale * float(host_overhead_s(model.profile, 0.0))
        table.fixed_s = [x - once if x > 0.0 else 0.0 for x in table.fixed_s]
    cycles = tuple(spec.cycles())
    return DraftEngine(
        spec,
        table,
        layout,
        float(sum(g.layers for g in work.groups)),
        float(target_layers),
        cycles,
        schedule,
        max_batch,
        int(budget),
        float(context),
    )
