"""One instance of a model on one GPU and size, or on a share of a GPU (docs/model.md §G6): the
most load it holds within the targets (the load engine's knee search, as capacity's), and what
it costs and draws, so fleet and power-capped plans count instances without simulating again.

Power comes from the power model (docs/model.md §G2) in three states of the GPUs: ``idle``
(clocks up, nothing running), ``load`` (the simulation's draw at the most load held within the
targets: the most an instance draws while it meets them) and ``peak`` (every board at its power
limit, with its server share).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..errors import InfeasibleError, SpecError, plural
from ..load.arrivals import Traffic
from ..load.deployment import Deployment
from ..load.engine import EngineConfig
from ..load.targets import Targets
from ..model.power import it_power_w
from ..serving.intervals import held_intervals
from ..serving.setting import Setting
from .candidates import _instances_for, sizes_tried
from .gpu_share import shared_setting, why_not_shared
from .load_search import Knee, knee_of

#: The power states of an instance's GPUs a budget may be counted at (module docstring).
POWER_STATES = ("idle", "load", "peak")


@dataclass(frozen=True)
class InstanceOption:
    """One instance size of a model on one GPU (``share`` < 1: on that share of one GPU)."""

    hardware: str
    #: The setting it runs (on the share's GPU, ``gpu_share.share_gpu``, for a share).
    setting: Setting
    gpus_per_instance: int
    share: float
    #: The most requests/s one instance holds within the targets (0: none).
    max_rate_per_instance: float
    #: IT kW of one instance at that load (NaN: the GPU has no power figures).
    load_kw_per_instance: float
    #: What one whole GPU of it costs an hour.
    gpu_usd_per_hour: float
    note: str = ""
    #: What its knee's run could not judge (a run of sessions too short for a steady state).
    run_notes: tuple[str, ...] = ()
    #: ``max_rate_per_instance``'s interval columns (§F12; {} for a bound or no load held).
    held: dict[str, float] = field(default_factory=dict, compare=False)
    #: What its knee's run was computed with (``LoadResult.metadata``; {}: no load held).
    computed_with: dict = field(default_factory=dict, compare=False)

    @property
    def feasible(self) -> bool:
        return self.max_rate_per_instance > 0

    @property
    def shared(self) -> bool:
        return self.share < 1.0

    def label(self) -> str:
        """``"2 x H100-SXM"`` or ``"1/2 of H100-SXM"``."""
        if self.shared:
            return f"{_fraction(self.share)} of {self.hardware}"
        return f"{self.gpus_per_instance} x {self.hardware}"

    def describe(self, instances: int) -> str:
        """``"2 x 1 GPU H100-SXM"`` or ``"3 x 1/2 of H100-SXM"``."""
        if self.shared:
            return f"{instances} x {self.label()}"
        return f"{Deployment(self.gpus_per_instance, instances).describe()} {self.hardware}"

    def instances_for(self, rate_per_s: float) -> int:
        """Instances that hold ``rate_per_s`` within the targets."""
        return _instances_for(rate_per_s, self.max_rate_per_instance)

    def kw_per_instance(self, state: str = "load") -> float:
        """IT kW of one instance's GPUs (and their server share) in a power state."""
        if state == "load":
            return self.load_kw_per_instance
        power = self.setting.gpu.power
        if power is None:
            return math.nan
        watts = power.it_max_w if state == "peak" else float(it_power_w(power, 0.0))
        return watts * self.gpus_per_instance / 1e3

    def usd_per_hour(self, instances: int) -> float:
        """What ``instances`` whole-GPU instances cost an hour."""
        return instances * self.gpus_per_instance * self.gpu_usd_per_hour


def _fraction(share: float) -> str:
    """0.25 -> "1/4", 0.75 -> "3/4"."""
    for den in (2, 3, 4, 8):
        num = share * den
        if abs(num - round(num)) < 1e-9:
            return f"{round(num)}/{den}"
    return f"{share:g}"


def instance_options(
    settings: Sequence[Setting],
    traffic: Traffic,
    targets: Targets,
    config: EngineConfig,
    sizes: list[int] | None = None,
    max_gpus: int | None = None,
    shares: Sequence[float] = (),
    progress: Callable[[str], None] | None = None,
) -> list[InstanceOption]:
    """Every instance size of every setting (``sizes_tried``) and, where its engine takes a
    share of a GPU (``gpu_share.why_not_shared``), every share of ``shares``: one knee search
    each, at one instance."""
    out = []
    for s in settings:
        runs = [(s, n, 1.0) for n in sizes_tried(s, sizes, max_gpus)]
        if shares and why_not_shared(s) is None:
            runs += [(shared_setting(s, x), 1, x) for x in shares]
        for run, n, share in runs:
            option = _option(s, run, n, share, traffic, targets, config)
            out.append(option)
            if progress:
                held = (
                    f"{option.max_rate_per_instance:.4g} req/s each"
                    if option.feasible
                    else option.note
                )
                size = option.label() if share < 1 else f"{n} {plural(n, 'GPU')}"
                progress(f"{s.model.name} on {s.gpu.name}, instances of {size}: {held}")
    return out


def _option(base: Setting, run: Setting, n: int, share: float, traffic, targets, config):
    """One knee search: the instance's most load and its draw there, or why it holds none."""
    try:
        knee = knee_of("deployment", run, Deployment(n, 1), traffic, targets, config)
    except InfeasibleError as exc:  # the engine's memory: the weights do not fit
        knee = Knee(max_rate_per_s=0.0, evaluated=(), reason=str(exc))
    at = knee.at_max
    return InstanceOption(
        hardware=base.gpu.name,
        setting=run,
        gpus_per_instance=n,
        share=share,
        max_rate_per_instance=max(knee.max_rate_per_s, 0.0),
        load_kw_per_instance=at.it_power_kw if at is not None else math.nan,
        gpu_usd_per_hour=base.gpu.price_usd_per_hour,
        note=knee.reason or ("" if at is not None else "no load meets the targets"),
        run_notes=tuple(at.unsteady_notes) if at is not None else (),
        held=held_intervals(at, knee.max_rate_per_s) if at is not None else {},
        computed_with=at.metadata() if at is not None else {},
    )


def need_power(option: InstanceOption) -> None:
    """Refuse a power budget over a GPU whose file gives no power figures."""
    if not math.isfinite(option.kw_per_instance("load")) or option.setting.gpu.power is None:
        gpu = option.setting.gpu
        raise SpecError(
            gpu.source_file or gpu.name,
            "power",
            f"{gpu.name} has no power figures, which a power budget needs",
            "add 'power: {board_w: ..., idle_w: ..., host_w: ...}' to its file, or plan "
            "without a power cap",
        )
