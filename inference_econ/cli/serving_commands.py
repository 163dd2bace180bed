"""Serving commands beyond decoding: prefill, requests, prices, context-parallel prefill and
disaggregated pools (docs/model.md §B8-§B10)."""

from __future__ import annotations

import click

from ..errors import InfeasibleError, article, plural
from .common import (
    handle_errors,
    hardware_option,
    make_setting,
    option,
    options,
    prefill_setting_options,
    quiet_accepted,
    request_setting_options,
    table_output,
)
from .decode_commands import discrete_option, layout_meta, layout_notes
from .stated import stated, stated_table


@click.command(short_help="One prefill: latency, MFU and the price of input tokens.")
@click.argument("model")
@prefill_setting_options
@option("gpus")
@option("prompt_tokens", required=True, help="Tokens of each prompt prefilled.")
@option("prefill_batch", "prefill", flag="--batch", help="Prompts prefilled together.")
@options("cached_fraction", "chunk_tokens")
@discrete_option
@table_output
@quiet_accepted
@handle_errors
def prefill(
    model,
    hardware,
    gpus,
    prompt_tokens,
    prefill_batch,
    cached_fraction,
    chunk_tokens,
    discrete,
    format,
    **values,
):
    """One prefill: latency, MFU, what bounds it, its breakdown and the cost of input tokens.

    \b
    Example:  inference-econ prefill "Llama 3 70B" -H H100-paper --gpus 8 --prompt-tokens 8000
    """
    import numpy as np

    from .. import api

    setting = make_setting(model, hardware, **values)
    prompt, batch = prompt_tokens, prefill_batch
    cached = api.cached_prompt_tokens(prompt, cached_fraction)
    row = api.prefill(
        setting,
        gpus,
        prompt,
        batch=batch,
        cached_tokens=cached,
        chunk_tokens=chunk_tokens,
        discrete=discrete,
    )
    if not np.isfinite(row.latency_s):
        raise InfeasibleError(
            (api.uneven_note(setting, gpus) if discrete else None)
            or (
                f"{setting.model.name}: {article(prompt)} {prompt:g}-token prefill of {batch:g} {plural(batch, 'prompt')} does not fit on {gpus:g} x {setting.gpu.name}"
            )
        )
    row = api.prefill_intervals(row, setting, float(gpus), chunk_tokens, discrete)
    title = f"Prefill of {batch:g} x {prompt:g} tokens, {setting.model.name} on {gpus:g} x {setting.gpu.name}"
    notes = [n for n in (api.cache_note(prompt, cached_fraction),) if n]
    notes += layout_notes(row, discrete)
    click.echo(
        stated(row, format, title, setting, layout_meta(_meta(setting), discrete), notes), nl=False
    )


def _meta(setting) -> dict:
    """What a prefill or request result was computed with (its contexts are its own)."""
    from ..api import requests_metadata

    return requests_metadata(setting)


def request_options(fn):
    """A decode instance and a request mix, shared by request and disagg."""
    fn = option("prompt_tokens", required=True, help="Input tokens per request.")(
        options("output_tokens")(fn)
    )
    return options("gpus", "batch")(fn)


@click.command(short_help="A request's TTFT, latency and token prices.")
@click.argument("model")
@request_setting_options
@request_options
@option(
    "prefill_batch",
    help="Prompts prefilled together, at most --batch (they go on to decode together; default "
    "1: each prompt as it arrives, in chunks of 8192 tokens, as vLLM and SGLang schedule them).",
)
@options("cached_fraction")
@discrete_option
@table_output
@quiet_accepted
@handle_errors
def request(
    model,
    hardware,
    gpus,
    batch,
    prompt_tokens,
    output_tokens,
    prefill_batch,
    cached_fraction,
    discrete,
    format,
    **values,
):
    """A request's view: time to first token, end-to-end latency, input and output token prices.

    \b
    Example:  inference-econ request "Llama 3 70B" -H H100-paper --gpus 8 --batch 32 \\
                  --prompt-tokens 2000 --output-tokens 500
    """
    import numpy as np

    from ..api import cache_note, memory_reason, uneven_note, whole_batch_kv_note
    from ..api import request as view

    setting = make_setting(model, hardware, **values)
    row = view(
        setting, gpus, batch, prompt_tokens, output_tokens, prefill_batch, cached_fraction, discrete
    )
    if not all(np.isfinite(v) for v in row.to_numpy() if isinstance(v, float)):
        raise InfeasibleError(
            (uneven_note(setting, gpus) if discrete else None)
            or f"{setting.model.name} does not fit on {gpus:g} x {setting.gpu.name} for this "
            f"request mix: {memory_reason(setting, gpus)}"
        )
    title = f"{setting.model.name} on {gpus:g} x {setting.gpu.name}, batch {batch:g}"
    # the decode step's mean context, n_in + n_out/2 (docs/model.md §B10)
    whole = whole_batch_kv_note(setting, gpus, batch, prompt_tokens + output_tokens / 2)
    notes = [n for n in (cache_note(prompt_tokens, cached_fraction), whole) if n]
    notes += layout_notes(row, discrete, setting)
    click.echo(
        stated(row, format, title, setting, layout_meta(_meta(setting), discrete), notes), nl=False
    )


@click.command(short_help="Output/input token price ratio by context length.")
@click.argument("model")
@hardware_option
@options("contexts", "weight_bits", "assumptions", "engine")
@table_output
@quiet_accepted
@handle_errors
def prices(model, hardware, contexts, format, **values):
    """What output tokens cost relative to input tokens, by context length (paper §4.3).

    Decode at the frontier's preference point; prompts prefilled on the same GPUs.

    \b
    Example:  inference-econ prices "Llama 3 70B" -H H100-paper --weight-bits 8 --contexts 1000
    """
    import pandas as pd

    from ..api import price_ratio

    setting = make_setting(model, hardware, **values)  # checks the options before any work
    given = {k: v for k, v in values.items() if v is not None}
    rows = [price_ratio(model, hardware, c, **given) for c in contexts]
    meta = setting.metadata()
    del meta["context_tokens"]  # one per row
    title = "Output/input token price ratio"
    notes = (
        [
            "The price ratio's interval divides each end of the output price's by the opposite "
            "end of the input price's (a throughput figure over a TTFT figure, whose errors "
            "are not paired): propagated, wider than either."
        ]
        if setting.assumptions.achievable
        else []
    )
    click.echo(stated_table(pd.DataFrame(rows), format, setting, title, meta, notes), nl=False)


@click.command("context-parallel", short_help="Context-parallel prefill (KV-Runahead).")
@click.argument("model")
@hardware_option
@options(
    "prompt_lengths",
    "devices",
    "device_gpus",
    "link_gb_per_s",
    "weight_bits",
    "activation_bits",
    "assumptions",
    "engine",
    "clock",
)
@table_output
@quiet_accepted
@handle_errors
def context_parallel(
    model, hardware, prompt_lengths, devices, device_gpus, link_gb_per_s, format, **values
):
    """Context-parallel prefill of one prompt: load-balanced ring attention against the
    KV-Runahead chain (docs/model.md §B9).

    Each device prefills its chunk with the step model of `prefill` (weights, the prefix's KV,
    overheads); a prompt whose weights plus KV cache do not fit one device is refused.

    \b
    Example:  inference-econ context-parallel "Llama 3.1 8B" -H A100-paper --devices 4 --link-gb-per-s 12.5
    """
    from .. import api

    link = None if link_gb_per_s is None else link_gb_per_s * 1e9
    setting = make_setting(model, hardware, **values)

    def compared(s):
        return api.compare_context_parallel(
            s, list(prompt_lengths), devices, link_bytes_per_s=link, devices_gpus=device_gpus
        )

    df = compared(setting)
    title = "Context-parallel prefill: time to first token and speed-up"
    notes = []
    if setting.assumptions.achievable:
        bound = compared(api.ideal_setting(setting))
        df = api.context_parallel_intervals(df, setting, devices, device_gpus, bound)
        notes.append(
            "Intervals: each time is a time to first token's (one device's on its GPUs, a "
            "chain's on all its devices' GPUs, compute- or memory-bound by its tokens per "
            "device), no end faster than the same time under the refined preset; a speed-up's "
            "and equal_chunks_spread's are the ratios of their times at the same end of each "
            "one's interval (one engine's error at the same quantile: exact where both times "
            "fall in one stratum, §F12)."
        )
    click.echo(stated_table(df, format, setting, title, _meta(setting), notes), nl=False)


@click.command(short_help="Prefill/decode pools against co-located serving.")
@click.argument("model")
@request_setting_options
@request_options
@options("prefill_gpus")
@discrete_option
@table_output
@quiet_accepted
@handle_errors
def disagg(
    model,
    hardware,
    gpus,
    batch,
    prompt_tokens,
    output_tokens,
    prefill_gpus,
    discrete,
    format,
    **values,
):
    """Disaggregated prefill/decode pools against co-located serving, per request.

    \b
    Example:  inference-econ disagg "Llama 3 70B" -H H100-paper --weight-bits 8 --gpus 8 \\
                  --batch 64 --prompt-tokens 4000 --output-tokens 500
    """
    import numpy as np

    from ..api import compare_disaggregation, uneven_note

    setting = make_setting(model, hardware, **values)
    df = compare_disaggregation(
        setting, prompt_tokens, output_tokens, gpus, batch, prefill_gpus, discrete=discrete
    )
    finite = np.isfinite(df[["ttft_s", "gpu_s_per_request"]].to_numpy()).all(axis=1)
    if finite[0] and not finite[1]:  # the decode GPUs serve it: the prefill pool does not
        pool = prefill_gpus if prefill_gpus is not None else gpus
        raise InfeasibleError(
            (uneven_note(setting, pool) if discrete else None)
            or f"the prefill pool of {pool:g} x {setting.gpu.name} does not hold "
            f"{setting.model.name} with a batch of {prompt_tokens:g}-token prompts (co-located "
            f"on {gpus:g} GPUs it fits): give --prefill-gpus more GPUs"
        )
    if not finite.all():
        raise InfeasibleError(
            (uneven_note(setting, gpus) if discrete else None)
            or f"{setting.model.name} does not fit on {gpus:g} x {setting.gpu.name} for this "
            "request mix (co-located or disaggregated)"
        )
    notes = [*df.attrs["notes"], *layout_notes(df.attrs["decode_layout"], discrete, setting)]
    if setting.assumptions.achievable:
        notes.append(
            "kv_transfer_s is an ideal bound, not an expected figure: the KV cache over each "
            "GPU's NIC at its datasheet bandwidth (no engine step, so no interval). The busy "
            "fractions' intervals put the prefill pool's time per request at the ends of a "
            "prompt's band and the decode pool's at a step's, at opposite ends (§F12)."
        )
    meta = layout_meta(_meta(setting), discrete)
    click.echo(stated_table(df, format, setting, df.attrs["note"], meta, notes), nl=False)


COMMANDS = (prefill, request, prices, context_parallel, disagg)
