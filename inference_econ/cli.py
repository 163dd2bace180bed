"""The command line: a thin layer over the public API.

Exit codes: 0 success, 1 a runtime failure (e.g. nothing feasible), 2 bad input.
"""

from __future__ import annotations

import functools
import sys
import time
from pathlib import Path

import click
import numpy as np
import pandas as pd

from . import api, catalog
from .errors import InfeasibleError, InferenceEconError, SpecError, UnknownNameError, did_you_mean
from .frontier import DETAIL_COLUMNS, SUMMARY_COLUMNS
from .report import FORMATS, is_duration, render, write_atomic
from .runner import run_scenario
from .tables import PAPER_TABLES, deviations, run_table

FRONTIER_COLUMNS = DETAIL_COLUMNS


class Progress:
    """Progress lines on stderr, shown only once a run has taken more than a second."""

    def __init__(self, quiet: bool = False) -> None:
        self.start = time.perf_counter()
        self.quiet = quiet

    def __call__(self, message: str) -> None:
        if not self.quiet and time.perf_counter() - self.start > 1.0:
            click.echo(f"[{time.perf_counter() - self.start:5.1f}s] {message}", err=True)


def _fail(exc: Exception) -> None:
    code = 2 if isinstance(exc, SpecError) else 1
    click.echo(f"error: {exc}", err=True)
    sys.exit(code)


def handle_errors(fn):
    """Turn the toolkit's own errors into a one-line message and an exit code, no traceback."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except InferenceEconError as exc:
            _fail(exc)

    return wrapper


def emit(text: str, out: str | None) -> None:
    if out:
        write_atomic(out, text)
        click.echo(f"wrote {out}", err=True)
    else:
        click.echo(text, nl=False)


#: --format table|csv|json|markdown, as every command takes it
format_option = click.option(
    "--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True
)


def setting_options(fn):
    """The options that describe a setting, shared by point and frontier."""
    options = [
        click.option(
            "--hardware",
            "-H",
            required=True,
            help="GPU name, alias or YAML file (see 'list hardware').",
        ),
        click.option(
            "--context",
            "context_tokens",
            type=float,
            default=0.0,
            show_default=True,
            help="Tokens already in the KV cache.",
        ),
        click.option(
            "--weight-bits", type=float, help="Bits per weight (default: the model file's)."
        ),
        click.option(
            "--activation-bits", type=float, help="Bits per activation (default: the model file's)."
        ),
        click.option(
            "--kv-bits",
            "kv_cache_bits",
            type=float,
            help="Bits per KV-cache element (default: activation bits).",
        ),
        click.option("--draft", help="Draft model for speculative decoding."),
        click.option(
            "--acceptance",
            type=float,
            default=0.8,
            show_default=True,
            help="Per-token acceptance probability of the draft.",
        ),
        click.option(
            "--max-draft",
            "max_draft_tokens",
            type=int,
            default=5,
            show_default=True,
            help="Longest draft (γ_max).",
        ),
        click.option("--no-pipeline", is_flag=True, help="Do not use pipeline parallelism."),
        click.option(
            "--assumptions",
            default="paper",
            show_default=True,
            help="Assumption preset (paper, refined).",
        ),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def request_options(fn):
    """A decode instance and a request mix, shared by request and disagg."""
    options = [
        click.option("--gpus", type=float, required=True, help="GPUs of the (decode) instance."),
        click.option("--batch", type=float, required=True, help="Concurrent requests decoding."),
        click.option(
            "--prompt-tokens", type=float, required=True, help="Input tokens per request."
        ),
        click.option(
            "--output-tokens", type=float, required=True, help="Output tokens per request."
        ),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _make(
    model,
    hardware,
    context_tokens,
    weight_bits,
    activation_bits,
    kv_cache_bits,
    draft,
    acceptance,
    max_draft_tokens,
    no_pipeline,
    assumptions,
    **extra,
):
    return api.make_setting(
        model,
        hardware,
        context_tokens=context_tokens,
        weight_bits=weight_bits,
        activation_bits=activation_bits,
        kv_cache_bits=kv_cache_bits,
        draft=draft,
        acceptance=acceptance,
        max_draft_tokens=max_draft_tokens,
        pipeline=not no_pipeline,
        assumptions=assumptions,
        **extra,
    )


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="inference-econ")
def main():
    """How fast and how cheaply can a model be served on a GPU, and with which setup?

    \b
    Examples:
      inference-econ list models
      inference-econ show "Llama 3 70B"
      inference-econ point "Llama 3 70B" -H H100 --gpus 8 --batch 64 --weight-bits 8
      inference-econ frontier "Llama 3 70B" -H H100-paper --weight-bits 8 --draft "Llama 3 8B"
      inference-econ reproduce table-2
    """


@main.command("list")
@click.argument("kind", type=click.Choice(["models", "hardware", "scenarios"]))
@format_option
@handle_errors
def list_cmd(kind, fmt):
    """List the models, GPUs or scenarios that ship with the toolkit.

    \b
    Example:  inference-econ list hardware
    """
    df = api.list_specs(kind)
    if fmt == "table":
        df = df.drop(columns=["file"])
    click.echo(render(df, fmt), nl=False)


@main.command()
@click.argument("name")
@click.option(
    "--hardware",
    "-H",
    default="H100-paper",
    show_default=True,
    help="GPU for the derived figures of a model.",
)
@click.option(
    "--assumptions",
    default="refined",
    show_default=True,
    help="Assumption preset for the counts (refined: exact MLA, shared experts, tied embeddings).",
)
@format_option
@handle_errors
def show(name, hardware, assumptions, fmt):
    """Show a model's or a GPU's figures and what follows from them.

    For a model: total and active parameters, KV bytes per token, the GPUs its weights need,
    the critical batch size on --hardware. For a GPU: its datasheet and derived figures.

    \b
    Example:  inference-econ show "DeepSeek-V3" -H H100
    """
    try:
        info = api.model_summary(name, hardware, assumptions)
    except UnknownNameError:
        try:
            info = api.hardware_summary(name)
        except UnknownNameError:
            names = [e.name for k in ("models", "hardware") for e in catalog.entries(k)]
            raise SpecError(
                "argument",
                "NAME",
                f"no model or GPU named {name!r}",
                did_you_mean(name, names) or "see 'inference-econ list models' and 'list hardware'",
            ) from None
    df = pd.DataFrame({"field": list(info), "value": [_show_value(v) for v in info.values()]})
    if fmt == "json":
        click.echo(render(pd.DataFrame([info]), "json"), nl=False)
    else:
        click.echo(render(df, fmt), nl=False)


def _point_value(field, value):
    if is_duration(field) and isinstance(value, float):
        return f"{value * 1e3:.4g} ms"
    if isinstance(value, float):
        return f"{value:.4g}"
    return value


def _show_value(value):
    if isinstance(value, float) and abs(value) >= 1e6:
        return f"{value:.4g}"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {v:.4g}" for k, v in value.items())
    return value


@main.command()
@click.argument("model")
@setting_options
@click.option("--gpus", type=float, required=True, help="GPUs in the instance.")
@click.option("--batch", type=float, required=True, help="Concurrent requests.")
@format_option
@handle_errors
def point(model, gpus, batch, fmt, **opts):
    """One configuration: latency, tokens/s per request, $/Mtok, MFU, layout and breakdown.

    \b
    Example:  inference-econ point "Llama 3 70B" -H H100 --gpus 8 --batch 64 --context 4096
    """
    setting = _make(model, **opts)
    row = api.points(setting, gpus=gpus, batch=batch).iloc[0]
    if not np.isfinite(row["latency_s"]):
        raise InfeasibleError(
            f"{setting.model.name} does not fit on {gpus:g} x {setting.gpu.name} with batch {batch:g} "
            f"at context {setting.context_tokens:g} (weights plus KV cache exceed HBM)"
        )
    if fmt in ("csv", "json"):
        click.echo(render(pd.DataFrame([row]), fmt), nl=False)
        return
    df = pd.DataFrame({"field": row.index, "value": [_point_value(k, v) for k, v in row.items()]})
    title = f"{setting.model.name} on {gpus:g} x {setting.gpu.name}, batch {batch:g}, context {setting.context_tokens:g}"
    click.echo(render(df, fmt, title=title), nl=False)


@main.command()
@click.argument("model")
@setting_options
@click.option(
    "--max-throughput",
    "max_throughput_tokens_per_s",
    type=float,
    help="Demand cap: total tokens/s of an instance.",
)
@click.option(
    "--discrete", is_flag=True, help="Whole GPUs, nodes, batches and layouts one could deploy."
)
@click.option(
    "--rows", type=int, help="Show this many points, evenly spaced in speed (table format: 20)."
)
@click.option(
    "--prompt-tokens", type=float, help="Prompt length: adds each point's time to first token."
)
@click.option(
    "--ttft-max",
    "ttft_max_s",
    type=float,
    help="Keep only configurations whose TTFT (seconds) is within this.",
)
@format_option
@click.option("--out", type=click.Path(dir_okay=False), help="Write to this file (atomically).")
@handle_errors
def frontier(
    model, max_throughput_tokens_per_s, discrete, rows, fmt, out, prompt_tokens, ttft_max_s, **opts
):
    """The Pareto frontier of tokens/s per request vs $ per million tokens.

    Every point carries its layout (GPUs, batch, PP, TP, attention TP, EP, 1-D/2-D, draft
    length) and where its time goes.

    \b
    Example:  inference-econ frontier "Llama 3 70B" -H H100-paper --weight-bits 8 \\
                  --draft "Llama 3 8B" --acceptance 0.8 --format csv --out llama.csv
    """
    setting = _make(
        model,
        max_throughput_tokens_per_s=max_throughput_tokens_per_s,
        discrete=discrete,
        prompt_tokens=prompt_tokens,
        ttft_max_s=ttft_max_s,
        **opts,
    )
    front = api.frontier(setting)
    if front.empty:
        raise InfeasibleError(
            f"{setting.name}: no feasible configuration ({'; '.join(front.notes)})"
        )
    df = front.points[[c for c in FRONTIER_COLUMNS if c in front.points]]
    if rows is None and fmt == "table":
        rows = 20
    if rows:
        df = _thin(df, rows)
    if fmt == "table":
        keys = pd.DataFrame(
            [
                front.fastest()[SUMMARY_COLUMNS].rename("fastest"),
                front.preference_point()[SUMMARY_COLUMNS].rename("preference (speed^3/price)"),
                front.cheapest()[SUMMARY_COLUMNS].rename("cheapest"),
            ]
        )
        keys.insert(0, "point", keys.index)
        head = render(
            keys,
            "table",
            title=f"{setting.name}: {len(front)} frontier points ({front.elapsed_s:.2f} s)",
        )
        emit(
            head
            + "\n"
            + render(df, "table", title=f"{len(df)} points, slowest first (--rows to change)"),
            out,
        )
    else:
        emit(render(df, fmt, title=setting.name if fmt == "markdown" else ""), out)


def _thin(df: pd.DataFrame, rows: int) -> pd.DataFrame:
    if len(df) <= rows:
        return df
    speeds = np.log(df["tokens_per_s"].to_numpy())
    targets = np.linspace(speeds.min(), speeds.max(), rows)
    idx = np.unique([int(np.argmin(np.abs(speeds - t))) for t in targets])
    return df.iloc[idx]


PAPER_ITEMS = {**PAPER_TABLES, **{f"figure-{i}": f"paper/figure-{i}" for i in range(1, 10)}}


@main.command()
@click.argument(
    "what",
    type=click.Choice(
        sorted(PAPER_ITEMS, key=lambda k: (k.split("-")[0], int(k.split("-")[1]))) + ["all"]
    ),
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="table",
    show_default=True,
    help="Format of the printed table.",
)
@click.option(
    "--out",
    type=click.Path(),
    help="Tables: write to this file. Figures and 'all': the folder (default figures/).",
)
@click.option(
    "--detail", is_flag=True, help="Add each row's layout and latency breakdown to tables."
)
@click.option("--quiet", "-q", is_flag=True, help="No progress lines on stderr.")
@handle_errors
def reproduce(what, fmt, out, detail, quiet):
    """Reproduce a table or figure of the paper (or all of them), beside the paper's numbers.

    Tables print ours beside the paper's; figures are written as PNG and SVG with a table of
    their key points; 'all' regenerates every table and figure into figures/.

    \b
    Examples:  inference-econ reproduce table-3 --format csv
               inference-econ reproduce figure-9 --out /tmp/fig9
               inference-econ reproduce all
    """
    progress = Progress(quiet)
    if what == "all":
        folder = Path(out or "figures")
        written, summary = [], []
        for name in sorted(
            PAPER_ITEMS, key=lambda k: (k.split("-")[0] != "table", int(k.split("-")[1]))
        ):
            progress(f"{name}")
            result = run_scenario(PAPER_ITEMS[name], folder, progress=progress)
            written += result.files
            if result.table is not None:
                summary.append(
                    {
                        "table": name,
                        **deviations(result.table).drop(columns="label").abs().max().to_dict(),
                    }
                )
        title = "Largest relative difference from the paper, per table (Table 5: see docs/deviations.md)"
        click.echo(render(pd.DataFrame(summary), fmt, title=title), nl=False)
        click.echo(
            f"wrote {len(written)} files to {folder}/ in {time.perf_counter() - progress.start:.1f} s",
            err=True,
        )
        return
    if what.startswith("figure"):
        folder = Path(out or "figures")
        result = run_scenario(PAPER_ITEMS[what], folder, progress=progress)
        click.echo(render(result.key_points, fmt, title=result.scenario.title), nl=False)
        click.echo(f"wrote {len(result.files)} files to {folder}/", err=True)
        return
    table = run_table(what, progress=progress)
    cols = list(table.attrs["columns"])
    if detail:
        cols += [c for c in DETAIL_COLUMNS if c in table and c not in cols]
    shown = table[cols]
    title = table.attrs["title"] if fmt in ("table", "markdown", "json") else ""
    emit(render(shown, fmt, title=title, notes=table.attrs.get("notes", ())), out)


@main.command()
@click.argument("scenario")
@click.option("--out", type=click.Path(file_okay=False), help="Folder for the figures and tables.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="table",
    show_default=True,
    help="Format of the printed key points.",
)
@click.option(
    "--measured",
    type=click.Path(exists=True, dir_okay=False),
    help="CSV of measured points to overlay (tokens_per_s, usd_per_mtok or tokens_per_s_per_gpu).",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress lines on stderr.")
@handle_errors
def run(scenario, out, fmt, measured, quiet):
    """Run a scenario file: compute every curve, print its key points, write its figures.

    SCENARIO is a YAML file or the name of a shipped scenario (see 'list scenarios'). With
    --out the figures (PNG, SVG) and the key points (CSV, JSON, Markdown) go to that folder.

    \b
    Example:  inference-econ run scenarios/hardware-generations.yaml --out out/
    """
    progress = Progress(quiet)
    result = run_scenario(scenario, out, measured_csv=measured, progress=progress)
    if result.table is not None:
        cols = list(result.table.attrs["columns"])
        click.echo(render(result.table[cols], fmt, title=result.scenario.title), nl=False)
    else:
        click.echo(render(result.key_points, fmt, title=result.scenario.title), nl=False)
    if out:
        click.echo(f"wrote {len(result.files)} files to {out}/", err=True)


def _vertical(series: pd.Series, fmt: str, title: str) -> str:
    if fmt in ("csv", "json"):
        return render(pd.DataFrame([series]), fmt)
    df = pd.DataFrame(
        {"field": series.index, "value": [_point_value(k, v) for k, v in series.items()]}
    )
    return render(df, fmt, title=title)


@main.command()
@click.argument("model")
@setting_options
@click.option("--gpus", type=float, required=True, help="GPUs in the instance.")
@click.option("--prompt-tokens", type=float, required=True, help="Prompt length.")
@click.option(
    "--batch", type=float, default=1.0, show_default=True, help="Prompts prefilled together."
)
@click.option(
    "--cached-fraction",
    type=float,
    default=0.0,
    show_default=True,
    help="Share of the prompt served from a prefix cache.",
)
@click.option(
    "--chunk",
    "chunk_tokens",
    type=float,
    help="Chunked prefill: tokens per pass (default: one pass if it fits).",
)
@format_option
@handle_errors
def prefill(model, gpus, prompt_tokens, batch, cached_fraction, chunk_tokens, fmt, **opts):
    """One prefill: latency, MFU, what bounds it, its breakdown and the cost of input tokens.

    \b
    Example:  inference-econ prefill "Llama 3 70B" -H H100-paper --gpus 8 --prompt-tokens 8000
    """
    from . import prefill as pf

    setting = _make(model, **opts)
    cached = (
        min(int(cached_fraction * prompt_tokens), int(prompt_tokens) - 1) if cached_fraction else 0
    )
    row = pf.prefill(
        setting, gpus, prompt_tokens, batch=batch, cached_tokens=cached, chunk_tokens=chunk_tokens
    )
    if not np.isfinite(row.latency_s):
        raise InfeasibleError(
            f"{setting.model.name}: a {prompt_tokens:g}-token prefill of {batch:g} prompts does not fit on {gpus:g} x {setting.gpu.name}"
        )
    click.echo(
        _vertical(
            row,
            fmt,
            f"Prefill of {batch:g} x {prompt_tokens:g} tokens, {setting.model.name} on {gpus:g} x {setting.gpu.name}",
        ),
        nl=False,
    )


@main.command()
@click.argument("model")
@setting_options
@request_options
@click.option(
    "--prefill-batch", type=float, help="Prompts prefilled together (default: the batch)."
)
@click.option(
    "--cached-fraction",
    type=float,
    default=0.0,
    show_default=True,
    help="Share of the prompt served from a prefix cache.",
)
@format_option
@handle_errors
def request(
    model, gpus, batch, prompt_tokens, output_tokens, prefill_batch, cached_fraction, fmt, **opts
):
    """A request's view: time to first token, end-to-end latency, input and output token prices.

    \b
    Example:  inference-econ request "Llama 3 70B" -H H100-paper --gpus 8 --batch 32 \\
                  --prompt-tokens 2000 --output-tokens 500
    """
    from . import prefill as pf

    setting = _make(model, **opts)
    row = pf.request(
        setting, gpus, batch, prompt_tokens, output_tokens, prefill_batch, cached_fraction
    )
    if not np.isfinite(row.ttft_s):
        raise InfeasibleError(
            f"{setting.model.name} does not fit on {gpus:g} x {setting.gpu.name} for this request mix"
        )
    click.echo(
        _vertical(
            row, fmt, f"{setting.model.name} on {gpus:g} x {setting.gpu.name}, batch {batch:g}"
        ),
        nl=False,
    )


@main.command()
@click.argument("model")
@click.option("--hardware", "-H", required=True, help="GPU name, alias or YAML file.")
@click.option(
    "--contexts",
    default="1000,10000,100000",
    show_default=True,
    help="Comma-separated context lengths.",
)
@click.option("--weight-bits", type=float, help="Bits per weight (default: the model file's).")
@click.option(
    "--assumptions", default="paper", show_default=True, help="Assumption preset (paper, refined)."
)
@format_option
@handle_errors
def prices(model, hardware, contexts, weight_bits, assumptions, fmt):
    """What output tokens cost relative to input tokens, by context length (paper §4.3).

    Decode at the frontier's preference point; prompts prefilled on the same GPUs.

    \b
    Example:  inference-econ prices "Mistral Large 2" -H H100-paper --contexts 1000,100000
    """
    from . import prefill as pf

    try:
        values = [float(c) for c in contexts.split(",") if c.strip()]
    except ValueError:
        raise SpecError(
            "argument",
            "--contexts",
            f"not a list of numbers: {contexts!r}",
            "e.g. 1000,10000,100000",
        ) from None
    rows = [
        pf.price_ratio(model, hardware, c, weight_bits=weight_bits, assumptions=assumptions)
        for c in values
    ]
    click.echo(render(pd.DataFrame(rows), fmt, title="Output/input token price ratio"), nl=False)


@main.command("context-parallel")
@click.argument("model")
@click.option("--hardware", "-H", required=True, help="GPU name, alias or YAML file.")
@click.option(
    "--prompt-tokens",
    default="1000,4000,16000,64000",
    show_default=True,
    help="Comma-separated prompt lengths.",
)
@click.option("--devices", type=int, default=4, show_default=True, help="Devices in the chain.")
@click.option(
    "--link-gb-per-s",
    type=float,
    help="Link bandwidth between devices, GB/s (default: the GPU's NIC).",
)
@format_option
@handle_errors
def context_parallel(model, hardware, prompt_tokens, devices, link_gb_per_s, fmt):
    """Context-parallel prefill of one prompt: all-gather against the KV-Runahead chain (seed 004).

    \b
    Example:  inference-econ context-parallel "Llama 3 8B" -H A100-paper --devices 4 --link-gb-per-s 1
    """
    from . import contextparallel as cp

    try:
        lengths = [float(c) for c in prompt_tokens.split(",") if c.strip()]
    except ValueError:
        raise SpecError(
            "argument",
            "--prompt-tokens",
            f"not a list of numbers: {prompt_tokens!r}",
            "e.g. 1000,16000",
        ) from None
    link = None if link_gb_per_s is None else link_gb_per_s * 1e9
    df = cp.compare(api.make_setting(model, hardware), lengths, devices, link_bytes_per_s=link)
    click.echo(
        render(df, fmt, title="Context-parallel prefill: time to first token (s) and speed-up"),
        nl=False,
    )


@main.command()
@click.argument("model")
@setting_options
@request_options
@click.option(
    "--prefill-gpus", type=float, help="GPUs of the prefill pool (default: as many as decode)."
)
@format_option
@handle_errors
def disagg(model, gpus, batch, prompt_tokens, output_tokens, prefill_gpus, fmt, **opts):
    """Disaggregated prefill/decode pools against co-located serving, per request.

    \b
    Example:  inference-econ disagg "Llama 3 70B" -H H100-paper --weight-bits 8 --gpus 8 \\
                  --batch 64 --prompt-tokens 4000 --output-tokens 500
    """
    from . import disagg as dg

    df = dg.compare(_make(model, **opts), prompt_tokens, output_tokens, gpus, batch, prefill_gpus)
    click.echo(render(df, fmt, title=df.attrs["note"]), nl=False)


@main.command("import-hf")
@click.argument("config", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "-o",
    "--out",
    type=click.Path(dir_okay=False),
    help="Write the model YAML here (default: print it).",
)
@click.option("--name", help="Model name (default: from the config).")
@handle_errors
def import_hf(config, out, name):
    """Import a Hugging Face config.json (a local file) into a model YAML.

    \b
    Example:  inference-econ import-hf config.json -o models/my-model.yaml --name "My Model"
    """
    from .hfimport import import_config

    arch, text = import_config(config, name)
    emit(text, out)
    if out:
        click.echo(
            f"{arch.name}: {arch.layers} layers, d_model {arch.d_model}, {arch.attention.kind}",
            err=True,
        )


@main.command("compare-measured")
@click.argument("csv", type=click.Path(exists=True, dir_okay=False))
@click.option("--assumptions", default="paper", show_default=True, help="Assumption preset.")
@click.option(
    "--figure",
    type=click.Path(dir_okay=False),
    help="Also draw the measured points over the predicted frontier (PNG/SVG).",
)
@format_option
@click.option(
    "--out", type=click.Path(dir_okay=False), help="Write the table to this file (atomically)."
)
@handle_errors
def compare_measured(csv, assumptions, figure, fmt, out):
    """Hold the model against measured serving benchmarks: prediction and measured/predicted
    for every row; any point that beats the roofline is reported loudly.

    \b
    Example:  inference-econ compare-measured ../shared/data/measured_public_sample.csv --figure nim.png
    """
    from . import measured as ms

    table = ms.compare(csv, assumptions)
    beaten = table[table.beats_roofline]
    for _, row in beaten.iterrows():
        click.echo(
            f"WARNING: row {row.row}: measured {row.measured_tokens_per_s:.1f} tok/s beats the model's "
            f"{row.predicted_tokens_per_s:.1f} by {row.speed_ratio - 1:.0%}: the roofline is not a bound here"
            + (" (requests were queueing)" if row.queueing else ""),
            err=True,
        )
    emit(render(table, fmt, title="Measured against predicted" if fmt != "csv" else ""), out)
    if figure:
        from .plots import save

        fig = ms.measured_figure(table, csv, assumptions)
        stem = str(Path(figure).with_suffix(""))
        fmts = (Path(figure).suffix.lstrip(".") or "png",)
        save(fig, stem, fmts)
        click.echo(f"wrote {figure}", err=True)


@main.command()
@click.argument("csv", type=click.Path(exists=True, dir_okay=False))
@click.option("--assumptions", default="paper", show_default=True, help="Assumption preset.")
@click.option(
    "-o", "--out", type=click.Path(dir_okay=False), help="Write the calibrated hardware YAML here."
)
@click.option(
    "--holdout-every",
    type=int,
    default=3,
    show_default=True,
    help="Hold out every n-th point for the out-of-sample error.",
)
@handle_errors
def calibrate(csv, assumptions, out, holdout_every):
    """Fit a GPU's sustained FLOP and HBM fractions and collective-latency scale to measured
    points; save them as a hardware file scenarios can use ("achievable" frontiers).

    \b
    Example:  inference-econ calibrate ../shared/data/measured_public_sample.csv -o hardware/h100_calibrated.yaml
    """
    from . import measured as ms

    result = ms.calibrate(csv, assumptions, holdout_every)
    rows = [
        {"parameter": k, "value": v, "standard_error": result["errors"][k]}
        for k, v in result["values"].items()
    ]
    click.echo(
        render(
            pd.DataFrame(rows), "table", title=f"{result['hardware']}: {result['points']} points"
        ),
        nl=False,
    )
    click.echo(
        f"RMS log-speed error: {result['rms_log_error_before']:.3f} before, {result['rms_log_error_fit']:.3f} fitted, "
        f"{result['rms_log_error_held_out']:.3f} on {result['held_out']} held-out points"
    )
    if out:
        emit(ms.calibrated_yaml(result), out)


@main.command()
@click.argument("model")
@setting_options
@click.option(
    "--param",
    "parameter",
    default=None,
    help="Parameter to vary (hbm_bandwidth, flops, interconnect_bandwidth, nccl_latency, launch_latency, price, hbm_capacity, context, acceptance).",
)
@click.option(
    "--values",
    default="0.5,1,2,4",
    show_default=True,
    help="Comma-separated factors (values for context and acceptance).",
)
@click.option(
    "--at-speed",
    type=float,
    help="Report the cost at this tokens/s per request (default: half the base fastest).",
)
@click.option(
    "--tornado",
    type=click.Path(dir_okay=False),
    help="Instead: elasticities of every factor, drawn as a tornado chart here.",
)
@format_option
@handle_errors
def sweep(model, parameter, values, at_speed, tornado, fmt, **opts):
    """What-if: vary one parameter and report the fastest speed and the cost at a fixed speed.

    \b
    Examples:  inference-econ sweep "Llama 3 70B" -H H100-paper --param hbm_bandwidth --values 0.5,1,2,4
               inference-econ sweep "Llama 3 70B" -H H100-paper --tornado tornado.png
    """
    from . import sensitivity as sens

    setting = _make(model, **opts)
    if tornado:
        from .plots import save

        table = sens.elasticities(setting, at_speed=at_speed)
        click.echo(render(table, fmt, title=f"Elasticities: {setting.name}"), nl=False)
        save(
            sens.tornado_figure(table, f"What moves the frontier: {setting.name}"),
            str(Path(tornado).with_suffix("")),
            (Path(tornado).suffix.lstrip(".") or "png",),
        )
        click.echo(f"wrote {tornado}", err=True)
        return
    if not parameter:
        raise SpecError(
            "argument", "--param", "is missing", "name a parameter, or ask for --tornado"
        )
    try:
        vals = [float(v) for v in values.split(",") if v.strip()]
    except ValueError:
        raise SpecError(
            "argument", "--values", f"not a list of numbers: {values!r}", "e.g. 0.5,1,2"
        ) from None
    click.echo(
        render(
            sens.sweep(setting, parameter, vals, at_speed),
            fmt,
            title=f"{parameter}: {setting.name}",
        ),
        nl=False,
    )


if __name__ == "__main__":  # pragma: no cover
    main()
