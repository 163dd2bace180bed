"""The options of a given operating point (a configuration, a request, a prefill, a
context-parallel chain) and of the values a table or sweep goes through."""

from __future__ import annotations

from .limits import MAX_GPUS, MAX_TOKENS
from .row import OPERATING, Numbers, section, setting


@section(OPERATING)
class PointOptions:
    """A given operating point: the GPUs and batch of a configuration, a request's output, and how
    its prompt is prefilled (``point``, ``prefill``, ``request``, ``disagg``)."""

    gpus: float = setting(
        help="GPUs in the instance.",
        unit="GPUs",
        minimum=0,
        exclusive_minimum=True,
        maximum=MAX_GPUS,
    )

    batch: float = setting(
        help="Concurrent requests in the instance.",
        unit="requests",
        minimum=1,
        maximum=1e9,
    )

    output_tokens: float = setting(
        help="Output tokens per request.",
        unit="tokens",
        minimum=1,
        maximum=MAX_TOKENS,
        # the price ratio (prices, §4.3) prices answers of 512 tokens unless told
        command_defaults=(("prices", 512.0),),
    )

    prefill_batch: float | None = setting(
        None,
        help="Prompts prefilled together in one pass.",
        unit="prompts",
        minimum=1,
        maximum=1e9,
        # the prefill command's --batch: one prompt unless told (request and disagg batch as
        # many prompts as fill the engine's chunk when it is not given)
        command_defaults=(("prefill", 1.0),),
    )

    cached_fraction: float = setting(
        0.0,
        help="Share of the prompt served from a prefix cache (its last token is always computed:"
        " its logits start the reply).",
        minimum=0,
        maximum=1,
    )

    chunk_tokens: float | None = setting(
        None,
        help="Chunked prefill: tokens per pass (default: one pass if it fits).",
        unit="tokens",
        minimum=1,
        flag="--chunk",
        maximum=MAX_TOKENS,
    )

    prefill_gpus: float | None = setting(
        None,
        help="GPUs of the prefill pool (default: as many as decode).",
        unit="GPUs",
        minimum=0,
        exclusive_minimum=True,
        maximum=MAX_GPUS,
        needs=("gpus",),
    )


@section(OPERATING)
class ContextParallelOptions:
    """The chain of devices of a context-parallel prefill (``context-parallel``)."""

    devices: int = setting(
        4,
        help="Devices in the context-parallel chain.",
        minimum=1,
        maximum=1024,
    )

    # context-parallel devices of several GPUs
    device_gpus: int = setting(
        1,
        help="GPUs per device of the context-parallel chain (each device holds the weights and the"
        " KV cache of its prefix).",
        unit="GPUs",
        minimum=1,
        maximum=MAX_GPUS,
    )

    link_gb_per_s: float | None = setting(
        None,
        help="Link bandwidth between devices (default: the NICs of a device's GPUs, one"
        " direction).",
        unit="GB/s",
        minimum=1e-6,
        maximum=1e9,
    )


@section(OPERATING)
class SweepOptions:
    """The values a table or what-if sweep goes through: contexts, prompt lengths, factors, and the
    speed its costs are read at."""

    contexts: Numbers = setting(
        "1000,10000,100000",
        help="Comma-separated context lengths.",
        unit="tokens",
        minimum=0,
        maximum=MAX_TOKENS,
        distinct=True,
    )

    prompt_lengths: Numbers = setting(
        "1000,4000,16000,64000",
        help="Comma-separated prompt lengths.",
        unit="tokens",
        minimum=1,
        flag="--prompt-tokens",
        maximum=MAX_TOKENS,
        distinct=True,
    )

    values: Numbers = setting(
        "0.5,1,2,4",
        help="Comma-separated factors (values for context and acceptance).",
        minimum=0,
        maximum=MAX_TOKENS,
        distinct=True,
    )

    at_speed: float | None = setting(
        None,
        help="Report the cost at this tokens/s per request (default: half the base fastest).",
        unit="tokens/s",
        minimum=0,
        exclusive_minimum=True,
        maximum=1e9,
    )
