"""Capacity candidates (docs/model.md §E6): the GPUs per instance worth trying, one row per
GPU, instance size and pool with the instances it needs for the load, the complete options
they make ranked cheapest first, and the candidates table a plan shows."""

from __future__ import annotations

import math

import pandas as pd

from .. import settings as table
from ..errors import InfeasibleError, SpecError, plural, short
from ..load.deployment import Deployment, Pool
from ..load.targets import Targets
from ..model.machine import min_gpus
from ..model.workload import compile_workload
from ..serving.intervals import (
    held_intervals,
    interval_columns,
)
from ..serving.setting import Setting
from ..serving.speculative import SpecDecoding
from ..serving.support import Support
from .load_search import (
    Knee,
    knee_of,
)

#: Extra instances tried when the cheapest count misses a target at the full load.
MAX_BUMPS = 8


def instance_sizes(setting: Setting, max_gpus: int | None = None) -> list[int]:
    """GPUs per instance worth trying: powers of two up to a node and whole multiples of a node,
    from the smallest that holds the weights (and room for a KV cache) up to four times it."""
    work = compile_workload(setting.model, setting.assumptions)
    smallest = min_gpus(work.weights_total_bytes, setting.gpu, setting.assumptions)
    node = setting.gpu.scale_up_domain_gpus
    sizes = [2**i for i in range(0, 12) if 2**i <= node] + [node * 2**j for j in range(1, 10)]
    top = max(node, 4 * smallest)
    keep = [n for n in sizes if smallest < n <= top and (max_gpus is None or n <= max_gpus)]
    return sorted(set(keep))


def sizes_tried(setting: Setting, sizes: list[int] | None, max_gpus: int | None) -> list[int]:
    """The GPUs per instance a search tries for ``setting``: ``sizes`` where given, each a
    whole number of GPUs within ``max_gpus``' bounds (one line naming ``sizes`` otherwise),
    else ``instance_sizes`` (every search's sizes come from here, so a test may narrow them
    once)."""
    if not sizes:
        return instance_sizes(setting, max_gpus)
    if isinstance(sizes, (str, bytes)) or not hasattr(sizes, "__iter__"):
        raise SpecError(
            "argument", "sizes", f"is {short(sizes)}, not a list of GPU counts",
            "give the GPUs an instance may have as a list, such as [8, 16]",
        )  # fmt: skip
    row = table.option("max_gpus")  # the same quantity: a whole number of GPUs
    return [int(row.check(n, "argument", "sizes")) for n in sizes]


def _spec_label(setting: Setting) -> str:
    """The candidates table's speculation column: none, the draft model, or the heads."""
    spec = setting.spec
    if spec is None:
        return "none"
    if isinstance(spec, SpecDecoding):
        return f"draft {spec.draft.name}"
    return f"{spec.kind} heads"


def _candidate(
    setting: Setting, kind: str, size: int, knee: Knee, rate: float, max_gpus: int | None
) -> dict:
    """One row of the candidates table: the instances a size needs for the load, or why it is
    excluded (no load meets the targets: no instance count, GPUs or price; more GPUs than
    ``max_gpus``: those figures, but not an option)."""
    per = knee.max_rate_per_s
    at = knee.at_max
    row = {
        "hardware": setting.gpu.name,
        "pool": kind,
        "speculation": _spec_label(setting),
        "gpus_per_instance": size,
        "layout": at.layout if at else "",
        "max_rate_per_instance": per if per > 0 else math.nan,
        "instances": None,
        "gpus": None,
        "usd_per_hour": math.nan,
        "excluded": per <= 0,
        "note": knee.reason,
        "setting": setting,
        # the held load's intervals (§F12; {} for a bound), for plans built on it (--demand)
        "held": held_intervals(at, per) if at is not None and per > 0 else {},
        # a run of sessions too short to judge the load it held says so (plans built on it)
        "run_notes": tuple(at.unsteady_notes) if at is not None and per > 0 else (),
    }
    if per > 0:
        count = _instances_for(rate, per)
        row.update(
            instances=count,
            gpus=count * size,
            usd_per_hour=count * size * setting.gpu.price_usd_per_hour,
        )
        if max_gpus is not None and count * size > max_gpus:
            row.update(excluded=True, note=f"needs {count * size} GPUs {PAST_MAX_GPUS} {max_gpus}")
    return row


#: How a candidate's note says it holds load but needs more GPUs than ``--max-gpus``.
PAST_MAX_GPUS = "> --max-gpus"


def past_max_gpus_only(row) -> bool:
    """Whether a candidate row is excluded only for needing more GPUs than ``--max-gpus``
    (its load held, instances and price are its own: ``_candidate``)."""
    if not (bool(row.excluded) and PAST_MAX_GPUS in str(row.note)):
        return False
    # a candidate the screened search never ran says so too ("not searched: needs ..."), with
    # no instances of its own
    instances = row.instances
    return instances is not None and not pd.isna(instances) and int(instances) > 0


def knee_rows(
    settings,
    traffic,
    targets,
    config,
    sizes,
    max_gpus,
    disaggregated,
    progress,
    pools: tuple[list, list] | None = None,
):
    """Rows for every GPU, instance size and kind (co-located; prefill and decode pools, on
    the GPUs of ``pools`` = (prefill settings, decode settings) when given, else on each)."""
    limits: dict[Pool, Targets] = {
        "deployment": targets,
        "prefill": Targets(ttft_p99_s=targets.ttft_p99_s),
        "decode": Targets(tpot_p99_s=targets.tpot_p99_s),
    }
    kinds: list[Pool] = ["deployment"]
    if disaggregated and pools is None:
        kinds += ["prefill", "decode"]
    plan: list[tuple[Setting, list[Pool]]] = [(s, kinds) for s in settings]
    if disaggregated and pools is not None:
        plan += [(s, ["prefill"]) for s in pools[0]] + [(s, ["decode"]) for s in pools[1]]
    rate = traffic.offered_rate_per_s
    rows = []
    for s, which in plan:
        for n in sizes_tried(s, sizes, max_gpus):
            for kind in which:
                limit = limits[kind]
                try:
                    knee = knee_of(kind, s, Deployment(n, 1), traffic, limit, config)
                except InfeasibleError as exc:  # the engine's memory: the weights do not fit
                    knee = Knee(max_rate_per_s=0.0, evaluated=(), reason=str(exc))
                row = _candidate(s, kind, n, knee, rate, max_gpus)
                rows.append(row)
                if progress:
                    progress(
                        f"{s.gpu.name}, {kind} instances of {n} {plural(n, 'GPU')}: "
                        f"{_held_text(knee, row)}"
                    )
    return rows


def _held_text(knee: Knee, row: dict) -> str:
    """What one instance holds, for the progress line of a search."""
    if not row["instances"]:
        return "no load meets the targets" if knee.evaluated else knee.reason
    excluded = " (excluded)" if row["excluded"] else ""
    count = row["instances"]
    return (
        f"{knee.max_rate_per_s:.4g} req/s each -> {count:,} {plural(count, 'instance')}{excluded}"
    )


def _options(rows: list[dict], mixed: bool = False) -> list[tuple[float, int, Setting, Deployment]]:
    """(cost per hour, GPUs, setting, deployment) of every complete option: each co-located
    size, and per GPU (and speculation) the first prefill pool with the first decode pool by
    ``_pool_rank`` (with ``mixed`` pools, of any GPU each); cheapest first, and among options
    of the same price the one that holds the most load (the most headroom), then the fewest
    GPUs (pools rank alike)."""
    out = []
    for r in rows:
        if r["pool"] == "deployment" and not r["excluded"]:
            held = r["instances"] * r["max_rate_per_instance"]
            deployment = Deployment(r["gpus_per_instance"], r["instances"])
            out.append((r["usd_per_hour"], held, r["gpus"], r["setting"], deployment))
    by_gpu: dict[tuple, dict[str, dict]] = {}
    for r in rows:
        if r["pool"] != "deployment" and not r["excluded"]:
            key = ("any", r["speculation"]) if mixed else (r["hardware"], r["speculation"])
            best = by_gpu.setdefault(key, {}).get(r["pool"])
            if best is None or _pool_rank(r) < _pool_rank(best):
                by_gpu[key][r["pool"]] = r
    for pools in by_gpu.values():
        if {"prefill", "decode"} <= set(pools):
            p, d = pools["prefill"], pools["decode"]
            other = p["setting"] if p["setting"] is not d["setting"] else None
            deployment = Deployment(
                d["gpus_per_instance"],
                d["instances"],
                p["gpus_per_instance"],
                p["instances"],
                other,
            )
            held = min(
                d["instances"] * d["max_rate_per_instance"],
                p["instances"] * p["max_rate_per_instance"],
            )
            cost = p["usd_per_hour"] + d["usd_per_hour"]
            out.append((cost, held, deployment.gpus, d["setting"], deployment))
    out.sort(key=lambda o: (*_rank(o[0], o[1], o[2]), o[4].disaggregated))
    return [(cost, gpus, setting, deployment) for cost, _, gpus, setting, deployment in out]


def _rank(usd_per_hour: float, held: float, gpus: int) -> tuple:
    """How options rank (``_options``), and pools of one kind: the cheapest (a price is a sum
    of GPU-hours at one price: its last bits are rounded off before comparing), then the one
    that holds the most load, then the fewest GPUs."""
    return (round(usd_per_hour, 9), -held, gpus)


def _pool_rank(row: dict) -> tuple:
    """A pool's ``_rank`` among the pools of one kind."""
    held = row["instances"] * row["max_rate_per_instance"]
    return _rank(row["usd_per_hour"], held, row["gpus"])


def _table(rows: list[dict], setting: Setting, deployment: Deployment) -> pd.DataFrame:
    """The candidates, cheapest first and the excluded ones last, with the chosen pools marked
    (instances and GPUs are blank where no load meets the targets; the speculation column only
    where speculation was searched)."""
    d = deployment
    wanted = {
        "deployment": (setting, d.gpus_per_instance),
        "decode": (setting, d.gpus_per_instance),
        "prefill": (d.prefill_setting or setting, d.prefill_gpus_per_instance),
    }
    pools = ("prefill", "decode") if d.disaggregated else ("deployment",)
    chosen = [
        r["pool"] in pools
        and r["setting"] is wanted[r["pool"]][0]
        and r["gpus_per_instance"] == wanted[r["pool"]][1]
        for r in rows
    ]
    table = pd.DataFrame(
        [{k: v for k, v in r.items() if k not in ("setting", "held", "run_notes")} for r in rows]
    )
    _held_columns(table, rows)
    table["chosen"] = chosen
    for i, r in enumerate(rows):  # the instances the deployment runs, where its run needed more
        if chosen[i]:
            n = d.prefill_instances if r["pool"] == "prefill" else d.instances
            if n != r["instances"]:
                price = r["usd_per_hour"] / r["instances"] if r["instances"] else None
                table.loc[i, ["instances", "gpus"]] = [n, n * r["gpus_per_instance"]]
                if price is not None:
                    table.loc[i, "usd_per_hour"] = n * price
    if set(table["speculation"]) == {"none"}:
        table = table.drop(columns=["speculation"])
    for name in ("instances", "gpus"):
        table[name] = table[name].astype("Int64")
    return _ranked(table)


def _held_columns(table: pd.DataFrame, rows: list[dict], at=None) -> None:
    """Put the interval columns of each candidate's ``max_rate_per_instance`` (its held load's,
    §F12, ``held_intervals``) and the ``support`` of the class they are sized on into ``table``
    (its rows ``at``, default all, one per ``rows``): blank for an excluded candidate; none at
    all under an ideal bound."""
    names = interval_columns("max_rate_per_instance")
    if not any(r["held"] for r in rows):
        return
    ends = [[r["held"].get(c, math.nan) for c in interval_columns("max_rate_per_s")] for r in rows]
    ends = [[*e, candidate_support(r).label() if r["held"] else ""] for e, r in zip(ends, rows)]
    for i, name in enumerate([*names, "support"]):
        if name not in table:
            table[name] = math.nan if name != "support" else ""
        values = [e[i] for e in ends]
        if at is None:
            table[name] = values
        else:
            table.loc[at, name] = values[0]


def candidate_support(row: dict) -> Support:
    """The support of a candidate's class: its GPU and the layout it holds its most load
    with, served under load (``serving.support``)."""
    from ..serving.intervals import described_layout
    from ..serving.support import support_of

    setting = row["setting"]
    layout = described_layout(row["layout"], setting.model.is_moe, row["pool"] != "deployment")
    return support_of(setting, ("throughput", "TPOT", "TTFT"), layout, "server")


def _ranked(table: pd.DataFrame) -> pd.DataFrame:
    """The candidates in the order of ``_options``: cheapest, then the most load held, then
    the fewest GPUs; the excluded ones last."""
    table = table.copy()
    table["held"] = -table["instances"].astype(float) * table["max_rate_per_instance"]
    table = table.sort_values(["excluded", "usd_per_hour", "held", "gpus"], kind="stable")
    return table.drop(columns="held").reset_index(drop=True)


def _per_instance_rate(rows, setting, deployment: Deployment) -> float:
    """The most load the deployment holds: its instances times what one holds (for a
    disaggregated one, the scarcer of its two pools)."""

    def per(pool, size, s=setting):
        return next(
            r["max_rate_per_instance"]
            for r in rows
            if r["setting"] is s and r["pool"] == pool and r["gpus_per_instance"] == size
        )

    if not deployment.disaggregated:
        return deployment.instances * per("deployment", deployment.gpus_per_instance)
    return min(
        deployment.instances * per("decode", deployment.gpus_per_instance),
        deployment.prefill_instances
        * per(
            "prefill", deployment.prefill_gpus_per_instance, deployment.prefill_setting or setting
        ),
    )


def _instances_for(rate: float, per: float) -> int:
    """Instances of ``per`` requests/s each that hold ``rate``: a load met to the last bits of
    its float counts as held."""
    return math.ceil(rate / per - 1e-9)
