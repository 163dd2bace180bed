"""How long a new engine instance takes to serve (docs/model-part-e.md §E14): its weights'
bytes over the bandwidth of where they come from (a local SSD, network storage, or a running
instance's GPUs), then the engine's start, graph compilation and CUDA-graph capture. The figures
and their sources are in ``startup.yaml`` beside this module.

An instance is paid from when it is asked for, and serves from when it is ready: this delay is
what an autoscaler pays for and what requests wait through.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..errors import SpecError
from ..model.workload import compile_workload
from ..serving.setting import Setting
from ..settings.load import WEIGHT_SOURCES


@lru_cache(maxsize=1)
def startup_figures() -> dict:
    """The published figures of ``startup.yaml`` (read once)."""
    from ..specs.yamlfile import load_yaml

    return load_yaml(Path(__file__).with_name("startup.yaml"))


@dataclass(frozen=True)
class StartupDelay:
    """Seconds from asking for an instance to its serving, by part."""

    weights_s: float
    engine_start_s: float
    graph_compile_s: float
    cuda_graph_capture_s: float
    source: str  # where the weights come from (``WEIGHT_SOURCES``, or "given")
    weight_bytes: float = 0.0

    @property
    def total_s(self) -> float:
        return (
            self.weights_s + self.engine_start_s + self.graph_compile_s + self.cuda_graph_capture_s
        )

    def describe(self) -> str:
        if self.source == "given":
            s = self.total_s
            return f"{s:,.0f} s (given)" if s >= 1e4 else f"{s:.4g} s (given)"
        return (
            f"{self.total_s:.0f} s: weights {self.weight_bytes / 1e9:.3g} GB from {self.source} "
            f"{self.weights_s:.1f} s, engine start {self.engine_start_s:g} s, graph compilation "
            f"{self.graph_compile_s:g} s, CUDA-graph capture {self.cuda_graph_capture_s:g} s"
        )


def given_delay(seconds: float) -> StartupDelay:
    """A delay stated outright (tests, what-ifs): all of it counted as the engine's start."""
    if not seconds >= 0:
        raise SpecError("argument", "startup_s", f"is {seconds}", "give seconds >= 0")
    return StartupDelay(0.0, float(seconds), 0.0, 0.0, "given")


def weight_bandwidth(source: str, setting: Setting) -> tuple[float, bool]:
    """(bytes/s, whether the instance's GPUs share it) of a weight source on this GPU."""
    sources = startup_figures()["weight_sources"]
    if source not in sources:
        raise SpecError(
            "argument",
            "weights_source",
            f"unknown weight source {source!r}",
            f"give one of {', '.join(WEIGHT_SOURCES)}",
        )
    row = sources[source]
    bandwidth = row["bandwidth_bytes_per_s"]
    if bandwidth == "nic":  # per GPU: the hardware file's scale-out NIC
        bandwidth = setting.gpu.nic_bandwidth_bytes_per_s
    return float(bandwidth), bool(row["shared_by_instance"])


def startup_delay(setting: Setting, gpus_per_instance: int, source: str) -> StartupDelay:
    """The delay of a new instance of ``gpus_per_instance`` GPUs serving ``setting``'s model,
    its weights read from ``source``: the whole weights over a shared bandwidth (one disk), or
    each GPU's share over its own (network ranks, NICs), plus the engine's published times."""
    figures = startup_figures()
    bandwidth, shared = weight_bandwidth(source, setting)
    total = compile_workload(setting.model, setting.assumptions).weights_total_bytes
    each = total if shared else total / gpus_per_instance
    return StartupDelay(
        weights_s=each / bandwidth,
        engine_start_s=float(figures["engine_start_s"]),
        graph_compile_s=float(figures["graph_compile_s"]),
        cuda_graph_capture_s=float(figures["cuda_graph_capture_s"]),
        source=source,
        weight_bytes=total,
    )
