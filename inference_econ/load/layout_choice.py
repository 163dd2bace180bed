"""The layout an engine instance takes for the load it is offered (docs/model.md §E6): the
steady state each whole layout settles into under the offered requests per second (a
mean-field estimate: the batch by Little's law, prompts in chunks of the step budget, the
busiest attention rank's prompts under data-parallel attention), the shortest settled step
chosen, or, when the load outgrows every layout, the one serving the most requests per second.
Under the kernel clock a layout's steps are read from its step table, as the simulation reads
them; under the other clocks from the step model (``mixed_step_s``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..model.latency import StepModel
from ..model.mixed_step import EngineLayout, mixed_step_s, table_steps_s


@dataclass(frozen=True)
class OfferedLoad:
    """What one instance is offered, for choosing its layout (§E6): requests per second and
    the mean prompt and output tokens of a request."""

    rate_per_s: float
    prompt_tokens: float
    output_tokens: float


#: Saturation: the layout is chosen for the most requests per second.
SATURATED = OfferedLoad(math.inf, 1024.0, 256.0)

#: Step times tried when solving for the steady state (§E7): 10 µs to 100 s, 0.5 % apart.
_TAU_GRID = np.geomspace(1e-5, 100.0, 3230)


def layout_steps_s(
    model, prefill_work, layout, decoding, context, prompt_tokens, chunks=None, table=None
):
    """Seconds of steps (arrays) of ``decoding`` requests at ``context`` and ``prompt_tokens``
    prompt tokens in ``chunks`` chunks, each attending to itself (None: one chunk where there
    are any): read from the layout's step ``table`` where it has one (the kernel clock's, as
    the simulation reads it), else the step model's (``mixed_step_s``)."""
    if table is None:
        return mixed_step_s(
            model, prefill_work, layout, decoding, context, prompt_tokens, prefill_prompts=chunks
        )
    D, P = np.broadcast_arrays(np.asarray(decoding, float), np.asarray(prompt_tokens, float))
    R = (
        (P > 0).astype(float)
        if chunks is None
        else np.broadcast_to(np.asarray(chunks, float), D.shape)
    )
    D = np.rint(D)
    P = np.minimum(np.rint(P), table.max_tokens - D)  # no step beyond the table's tokens
    size = np.where(R > 0, P / np.maximum(R, 1e-300), 0.0)  # tokens of each chunk
    sizes, where = np.unique(size, return_inverse=True)
    positions = model.work.layer_positions
    attends = np.array([float(positions((c - 1.0) / 2.0)) if c > 0 else 0.0 for c in sizes])
    prompt_att = R * size * attends[where.reshape(size.shape)]
    held = D * float(positions(context))
    requests = D + np.ceil(R)
    return table_steps_s(
        table, D + P, held, held + prompt_att, requests, np.maximum(size, 1.0), prompt_att
    )


def steady_step_s(
    model,
    prefill_work,
    layout,
    load: OfferedLoad,
    context,
    batch_cap,
    budget,
    floor=None,
    ranks=1,
    table=None,
):
    """The mean step time of ``layout`` once the offered load has settled (§E6), inf when the
    load outgrows it: the smallest step time tau with step(lam·O·tau requests decoding,
    lam·P·tau prompt tokens) <= tau, found on a geometric grid of tau. ``floor``: the step
    time of one request decoding at the context (``_floor_s``; computed when not given).
    ``ranks``: data-parallel attention ranks that schedule their own requests (§F9 "Attention
    DP"), each with its share of the prompts and of the budget: a step lasts as long as its
    busiest rank's: its prompt work counts ``ranks`` times (``busiest_rank_tokens``).
    ``table``: the layout's step table where its steps are read from it (``layout_steps_s``)."""
    lam, P, out = load.rate_per_s, load.prompt_tokens, load.output_tokens
    if not math.isfinite(lam):
        return math.inf
    if floor is None:
        floor = _floor_s(model, prefill_work, layout, context, table)
    per_step = lam * max(out, 1.0)
    top = min(batch_cap / per_step, budget / (lam * (max(out, 1.0) + P))) if lam > 0 else floor
    if top < floor:
        return math.inf
    # one grid for every layout and every limit: a limit only decides whether the settled
    # step time is allowed, never where it falls (so a larger limit cannot move a choice)
    # (step times above ``top`` are refused whatever they solve: the grid stops there, and
    # the first settled step time is the one of the whole grid when it is allowed)
    tau = _TAU_GRID[(floor <= _TAU_GRID) & (top >= _TAU_GRID)]
    if not tau.size:
        return math.inf
    decoding = np.maximum(per_step * tau, 1.0)
    # prompts arrive in chunks of up to ``budget`` tokens: a share of the steps carries one
    # (the step time is not linear in the prompt tokens of a step, so spreading them evenly
    # over every step would flatter layouts that are slow on a chunk)
    share = np.minimum(lam * P * tau / budget, 1.0) if P > 0 else np.zeros_like(tau)
    prompts = None  # one chunk of the whole budget
    if ranks > 1 and P > 0:
        share = np.minimum(busiest_rank_tokens(lam * tau, P, budget / ranks, ranks) / budget, 1.0)
        # the ranks' budget in their own prompts' chunks, each attending to itself alone
        prompts = np.repeat([0.0, budget / min(P, budget / ranks)], tau.size)
    # the steps without and with a chunk in one evaluation (the model is elementwise)
    both = layout_steps_s(
        model,
        prefill_work,
        layout,
        np.concatenate([decoding, decoding]),
        context,
        np.repeat([0.0, float(budget)], tau.size),
        prompts,
        table,
    )
    step = (1.0 - share) * both[: tau.size] + share * both[tau.size :]
    settled = np.flatnonzero(step <= tau * (1 + 1e-9))
    if not settled.size or tau[settled[0]] > top:
        return math.inf  # the load outgrows the layout's batch or token limit
    return float(tau[settled[0]])


def busiest_rank_tokens(prompts, prompt_tokens, rank_budget, ranks):
    """Prompt tokens a step charges on average when ``ranks`` attention ranks each take their
    own prompts (``simulate``'s ``_rank_step``): ``ranks`` times the busiest rank's. The
    prompts arriving per step (``prompts``, an array; a Poisson count), in chunks of
    min(prompt, ``rank_budget``) tokens, each go to the least-loaded rank (TensorRT-LLM's
    ``_balance_requests_across_ranks``), so the busiest rank takes ceil(N / ranks) of the N
    chunks: E[ceil(N / ranks)] = sum over j >= 0 of P(N > j·ranks). One rank: the prompt
    tokens themselves."""
    chunk = float(min(prompt_tokens, rank_budget))
    n = np.asarray(prompts, dtype=float) * prompt_tokens / chunk  # chunks per step
    top = float(np.max(n, initial=0.0))
    k = np.arange(1, int(np.ceil(top + 12.0 * np.sqrt(top) + 12.0)))
    # P(N <= k) from the Poisson terms e^-n n^k / k!, built up in k
    first = np.exp(-n)[:, None]
    cdf = np.cumsum(np.hstack([first, np.cumprod(n[:, None] / k[None, :], axis=1) * first]), 1)
    most = np.sum(1.0 - cdf[:, ::ranks], axis=1)  # P(N > j·ranks), j = 0, 1, ...
    return ranks * chunk * most


def _floor_s(model, prefill_work, layout, context, table=None) -> float:
    """Seconds of a step of one request decoding at ``context``: the least a settled step
    takes (``steady_step_s``)."""
    return float(layout_steps_s(model, prefill_work, layout, 1.0, context, 0.0, None, table))


def layout_capacity(model: StepModel, capacity: float, layout: EngineLayout) -> float:
    """Layer-positions of KV cache a layout holds: ``capacity`` (one attention replica's, of
    one stage over all the GPUs) less the room its attention replicas' weights take, or more
    where its stages' tensor groups hold fewer copies of weights replicated over them (§F8,
    ``kv_capacity_bytes``' ``p``), over the copies its attention group keeps (§B13)."""
    adiv = layout.attention_divisor
    if (adiv > 1.0 or layout.pipeline > 1) and model.engine is not None:
        one = float(model.kv_capacity_bytes(layout.gpus))
        share = (
            max(float(model.kv_capacity_bytes(layout.gpus, adiv, layout.pipeline)), 0.0) / one
            if one > 0
            else 0.0
        )
        capacity = capacity * share
    return capacity / float(model.kv_copies(layout.attention_degree))


def held_per_request(model, config, context: float, load: OfferedLoad) -> float:
    """Layer-positions of KV cache one request holds as a layout's batch is counted (§E6):
    its context's; under no-evict admission (TensorRT-LLM's) its whole length, prompt and
    output, which the engine reserves when it admits it (``scheduling.NoEvict``)."""
    reach = context
    if config.admission == "no_evict" and load != SATURATED:
        reach = max(context, load.prompt_tokens + load.output_tokens)
    return max(float(model.work.held_positions(reach)), 1.0)


def choose_layout(
    model, prefill_work, options, config, capacity, context, load, floors=None, tables=None
) -> EngineLayout:
    """The layout that runs the offered load fastest (§E6); ``floors`` keeps each layout's
    ``_floor_s`` by context, and the choice when saturated (a load search chooses at many
    loads). ``tables``: each layout's step table by its config (None: none), where the steps
    are read from it (the kernel clock's; ``layout_steps_s``)."""
    floors = {} if floors is None else floors
    configs = [config.on_layout(lay) for lay in options]  # per attention rank where they hold
    step_tables = [
        None if tables is None else tables(lay, cfg) for lay, cfg in zip(options, configs)
    ]
    for lay, table in zip(options, step_tables):
        if (lay, context) not in floors:
            floors[lay, context] = _floor_s(model, prefill_work, lay, context, table)
    per_request = held_per_request(model, config, context, load)
    # the KV cache holds fewer requests where attention keeps copies of it (§B13)
    batches = [  # np.clip(held, 1, top), in floats
        int(
            min(
                max(layout_capacity(model, capacity, lay) // per_request, 1.0),
                float(cfg.max_batch_requests),
            )
        )
        for lay, cfg in zip(options, configs)
    ]
    budgets = [cfg.step_token_budget for cfg in configs]
    # the ranks of a data-parallel attention layout schedule their own requests (``simulate``)
    ranks = [int(round(lay.attention_divisor)) if config.rank_scheduling else 1 for lay in options]
    steady = [
        steady_step_s(
            model, prefill_work, lay, load, context, batch, budget, floors[lay, context], r, table
        )
        for lay, batch, budget, r, table in zip(options, batches, budgets, ranks, step_tables)
    ]
    if math.isfinite(min(steady)):
        return options[int(np.argmin(steady))]
    # saturated: decode at the largest batch plus prompts in full chunks, per request (the
    # same at every rate: kept with the floors)
    P, out = max(load.prompt_tokens, 0.0), max(load.output_tokens, 1.0)
    key = ("saturated", context, P, out, tuple(budgets), tuple(batches), tuple(options))
    if key not in floors:
        per_request_s = []
        for lay, batch, budget, r, table in zip(options, batches, budgets, ranks, step_tables):
            chunks = budget / min(P, budget / r) if r > 1 and P > 0 else None  # each rank's own
            decode = layout_steps_s(model, prefill_work, lay, batch, context, 0.0, None, table)
            prompt = layout_steps_s(model, prefill_work, lay, 0.0, context, budget, chunks, table)
            per_request_s.append(out * float(decode) / batch + P * float(prompt) / budget)
        floors[key] = options[int(np.argmin(per_request_s))]
    return floors[key]
