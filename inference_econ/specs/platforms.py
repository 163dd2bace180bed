"""The software platform a part runs (CUDA, ROCm, TPU, Intel XPU) and the engine profile that
runs there.

Every engine profile states the platform it runs on (``platform``: cuda, rocm or any). A
preset's default engine (TensorRT-LLM, CUDA only) on a part of another platform gives way to
that platform's default engine, with one line saying so; an engine the user named that does
not run on the part is refused.
"""

from __future__ import annotations

from typing import Any

from ..errors import SpecError
from .engine import EngineProfile, engine_profiles, select_engine
from .versions import split_engine

#: The engine each platform runs when the default one does not run there: vLLM (its ROCm
#: profile), the engine AMD's own results and MLPerf harness run on Instinct parts; vLLM on
#: TPUs (its TPU backend) and on Intel GPUs (its XPU platform, Intel's MLPerf Arc harness).
PLATFORM_ENGINES = {"rocm": "vllm", "cuda": "trtllm", "tpu": "vllm", "xpu": "vllm"}
#: How messages write each platform.
SHOWN = {"cuda": "CUDA", "rocm": "ROCm", "tpu": "TPU", "xpu": "Intel XPU", "any": "any platform"}
#: The platform of a part by the start of its catalog name (the rest run CUDA).
_BY_NAME = (("MI", "rocm"), ("TPU", "tpu"), ("ARC", "xpu"))


def platform_of(gpu: Any) -> str:
    """The software platform of a GPU: ROCm on AMD Instinct parts (MI...), TPU on Google's
    TPUs, Intel XPU on Intel's Arc parts, and those of parts derived from one
    (``derive_from``: the part a derivation starts from, whatever their own name); CUDA
    otherwise."""
    derived = tuple(getattr(gpu, "derived_from", ()))
    root = (derived[-1] if derived else gpu.name).upper()  # a derived part: its base's kind
    return next((kind for start, kind in _BY_NAME if root.startswith(start)), "cuda")


def runs_on(profile: EngineProfile, platform: str) -> bool:
    """Whether an engine profile runs on ``platform`` (its own, or any)."""
    return profile.platform in ("any", platform)


def engine_on(profile: EngineProfile, gpu: Any, named: bool) -> tuple[EngineProfile, str]:
    """The engine profile that serves on ``gpu``, and a line saying why when it is not
    ``profile``: ``profile`` itself where it runs on the part's platform; else, for a default
    (``named`` False), the platform's own engine (``PLATFORM_ENGINES``); a named one is
    refused."""
    platform = platform_of(gpu)
    if runs_on(profile, platform):
        return profile, ""
    other = PLATFORM_ENGINES[platform]
    if named:
        raise SpecError(
            "argument",
            "engine",
            f"{profile.name} runs on {SHOWN[profile.platform]}, and {gpu.name} is a "
            f"{SHOWN[platform]} part",
            f"name an engine that runs there (--engine {other}), or leave --engine out to "
            "take that platform's default",
        )
    chosen = select_engine(other, platform=platform)
    return chosen, (
        f"{gpu.name} runs {SHOWN[platform]}, where the default engine {profile.name} does "
        f"not run: it is served by {chosen.name} (--engine names another)"
    )


def platform_profile(engine: Any, profile: EngineProfile, gpu: Any) -> Any:
    """``engine`` (a name, "family@version" or a profile) as it runs on ``gpu``'s platform:
    where ``profile``, one of the catalog's for any platform, has a sibling of its family and
    versions for the part's own platform (vllm and vllm-rocm), that sibling ("vllm-rocm", or
    "vllm-rocm@0.18" for "vllm@0.18"), as a measured row on the part is priced; else
    ``engine`` itself (a profile for one platform, a file of its own, a family without one)."""
    if profile.platform != "any":
        return engine
    platform = platform_of(gpu)
    version = split_engine(engine)[1] if isinstance(engine, str) else None
    base = next((p for p in engine_profiles() if p.name == profile.name), None)
    if base is None or (version is None and base != profile):
        return engine  # not the catalog's profile (a file, or one changed in Python)
    own = [
        p
        for p in engine_profiles()
        if p.family == base.family and p.platform == platform and p.versions == base.versions
    ]
    if len(own) != 1:
        return engine
    return own[0] if version is None else f"{own[0].name}@{version}"
