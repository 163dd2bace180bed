"""The operations of a described configuration's decode step as a table (docs/model.md "A
step as operations"): what ``point`` prints under its figures and ``ie.operations`` returns,
priced by the setting's clock (the roofline of the ideal presets, the engine step of an engine
profile)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.breakdown import ADDITIVE_PARTS
from ..model.kernel_clock import KernelClock, clock_of
from ..model.operations import StepOperations, step_operations
from .decode import Decoder
from .setting import Setting

#: What each clock's table says under it (docs/model.md "A step as operations").
CLOCK_NOTES = {
    "roofline": "roofline clock: launches and collectives add; the step's max(memory, compute) "
    "is each operation's reads where memory binds, its arithmetic where compute does",
    "engine": "engine clock: the engine step's charges by kernel class (Part F), each class's "
    "shared by its operations' work; a GEMM's time holds its kernels' fixed cost; kernel "
    "launches: the engine's per-layer overhead; host and scheduling: its step and "
    "per-sequence host work (0 where the runtime overlaps it with the GPU)",
    "kernels": "kernels: each operation at its measured kernel's time ({tables}), one after "
    "another; launches inside a CUDA graph cost nothing apart; host work as the engine clock "
    "charges it",
}


def kernel_tables_read(gpu_name: str) -> str:
    """Which tables the kernel clock read for a part: its own folder of kernels/, or, for a
    part without one, the physics fitted to the others'."""
    from ..specs.kernel_tables import DEFAULT_TABLES, NCCL_TABLES, kernel_folder

    folder = kernel_folder(gpu_name)
    if folder is None:
        return f"{gpu_name} has no measured tables: the physics fitted to other GPUs' tables"
    return (
        f"kernels/{folder}/{DEFAULT_TABLES} and kernels/{folder}/{NCCL_TABLES}, interpolated; "
        f"the fitted physics where a table lacks the class"
    )


#: What a table of an engine that overlaps two micro-batches says besides (§F7).
OVERLAP_NOTE = (
    "two-batch overlap: the engine step reads the weights and pays each kernel's fixed cost "
    "once per micro-batch, and runs the expert dispatch and combine under the other "
    "micro-batch's work, their rows holding what shows; the kernels column prices one batch, "
    "its operations in series"
)


@dataclass(frozen=True)
class OperationTable:
    """A step's operations with their seconds under one clock."""

    step: StepOperations
    clock: str
    #: Seconds of each operation by additive part (rows: operations; ``ADDITIVE_PARTS``).
    parts: np.ndarray
    #: Seconds of each operation under the kernel clock beside an engine clock, else None.
    kernels: np.ndarray | None = None

    @property
    def seconds(self) -> np.ndarray:
        return self.parts.sum(axis=1)

    def columns(self, detail: bool = False) -> dict[str, np.ndarray]:
        """{column: array}: operation, class, calls, time and share of the step; with
        ``detail`` the FLOP, bytes, shape and the time by additive part too."""
        ops = list(self.step)
        seconds = self.seconds
        total = seconds.sum()
        out: dict[str, np.ndarray] = {
            "operation": np.array([op.name for op in ops]),
            "class": np.array([op.kind for op in ops]),
            "calls": np.array([op.calls for op in ops]),
            "time_s": seconds,
            "share": seconds / total if total > 0 else np.zeros(len(ops)),
        }
        if self.kernels is not None:
            out["kernels_s"] = self.kernels
        if detail:
            out["flop"] = np.array([op.flop for op in ops])
            out["flop_per_gpu"] = np.array([op.flop_per_gpu for op in ops])
            for name in ("weight_bytes", "activation_bytes", "kv_bytes"):
                out[name] = np.array([getattr(op, name) for op in ops])
            out["shape"] = np.array([_shape_text(op.shape) for op in ops])
            for i, name in enumerate(ADDITIVE_PARTS):
                out[name] = self.parts[:, i]
            out["clock"] = np.array([self.clock] * len(ops))
        return out

    def title(self, setting: Setting) -> str:
        return f"Operations of one decode step ({self.clock} clock, {setting.assumptions.label})"

    @property
    def note(self) -> str:
        tables = kernel_tables_read(self.step.model.machine.gpu.name)
        text = CLOCK_NOTES[self.clock].format(tables=tables)
        if self.kernels is not None:
            text += ". " + CLOCK_NOTES["kernels"].format(tables=tables)
        engine = self.step.model.engine
        if engine is not None and engine.overlap_family is not None:
            text += f". {OVERLAP_NOTE}"
        return text


def operation_table(setting: Setting, row: dict, discrete: bool = False) -> OperationTable | None:
    """The operations of the decode step of a described configuration ``row`` (a ``point``
    row: its GPUs, batch and layout), at the setting's context; None with speculation (a
    cycle is several passes: the table is one step's)."""
    if setting.spec is not None:
        return None
    model = Decoder(setting, integer_layouts=discrete).target
    tensor = float(row["tensor_degree"])
    step = step_operations(
        model,
        float(row["gpus"]),
        float(row["batch"]),
        1.0,
        setting.context_tokens,
        float(row["pipeline_degree"]),
        tensor / float(row["attention_degree"]),
        str(row["tp_dims"]) == "2D",
    )
    clock = clock_of(model)
    beside = model.engine is not None and clock.name != KernelClock.name
    kernels = KernelClock().price(step) if beside else None
    return OperationTable(step, clock.name, clock.parts(step), kernels)


def _shape_text(shape) -> str:
    """An operation's shape as text: "m=64 n=1280 k=8192"."""
    return " ".join(
        f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}" for k, v in shape.items()
    )
