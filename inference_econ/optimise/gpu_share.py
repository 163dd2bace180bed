"""A share of one GPU (docs/model.md §G6): several small models served on one GPU, each engine
given a fraction of its memory and the GPU's time shared between them.

An engine whose memory fraction is of the GPU's whole memory (``kv_cache_fraction_of: total``
in its profile) can be told to take part of a GPU, so several engines fit side by side:

* vLLM: ``--gpu-memory-utilization`` "is a per-instance limit, and only applies to the current
  vLLM instance. It does not matter if you have another vLLM instance running on the same GPU.
  For example, if you have two vLLM instances running on the same GPU, you can set the GPU
  memory utilization to 0.5 for each instance" (vllm-project/vllm, ``vllm/config/cache.py``,
  ``CacheConfig.gpu_memory_utilization``; the engine arguments page says the same).
* SGLang: ``--mem-fraction-static`` is "the fraction of the memory used for static allocation
  (model weights and KV cache memory pool)" (sgl-project/sglang, ``server_args.py``): a share
  of the whole GPU. SGLang does not document two servers on one GPU; the share rests on what
  the fraction means.

TensorRT-LLM's ``kv_cache_free_gpu_memory_fraction`` is a fraction of the memory left free
after its weights (``kv_cache_fraction_of: free``): it takes that share of whatever another
engine left, so it is not given a share of the GPU here, nor is an ideal preset (no engine).

A share ``x`` is modelled as a GPU with ``x`` of the memory, of the tensor rate and of the
memory bandwidth (the GPU's time divided between the engines in proportion to their shares,
as time-slicing does when all are busy; an engine whose neighbour idles runs faster), of the
power and of the price; launch latencies and host overheads stay whole. The load engine then
finds the most load the model holds on its share within its targets, as on a whole GPU.
"""

from __future__ import annotations

import dataclasses

from ..serving.setting import Setting
from ..specs.hardware import GPU, Power

#: The shares of a GPU a model may take (whole GPUs are dedicated instances).
SHARES = (0.25, 0.5, 0.75)


def share_gpu(gpu: GPU, share: float) -> GPU:
    """``gpu`` cut to ``share`` of its memory, tensor rate, bandwidth, power and price."""
    power = gpu.power
    if power is not None:
        power = Power(
            board_w=power.board_w * share,
            idle_w=power.idle_w * share,
            host_w=power.host_w * share,
            memory_activity=power.memory_activity,
        )
    return dataclasses.replace(
        gpu,
        flop_per_s=tuple((bits, rate * share) for bits, rate in gpu.flop_per_s),
        hbm_bandwidth_bytes_per_s=gpu.hbm_bandwidth_bytes_per_s * share,
        hbm_capacity_bytes=gpu.hbm_capacity_bytes * share,
        price_usd_per_hour=gpu.price_usd_per_hour * share,
        prices=tuple(
            dataclasses.replace(p, usd_per_hour=p.usd_per_hour * share) for p in gpu.prices
        ),
        power=power,
    )


def why_not_shared(setting: Setting) -> str | None:
    """Why ``setting``'s engine cannot take a share of a GPU (module docstring), or None."""
    profile = setting.assumptions.profile()
    if profile is None:
        return f"the {setting.assumptions.name} preset names no engine to give a share of a GPU"
    if profile.kv_cache_fraction_of != "total":
        return (
            f"engine {profile.name} sizes its KV cache from the memory left free after its "
            "weights, not from a share of the GPU"
        )
    return None


def shared_setting(setting: Setting, share: float) -> Setting:
    """``setting`` on ``share`` of its GPU (``share_gpu``)."""
    return setting.replace(gpu=share_gpu(setting.gpu, share))
