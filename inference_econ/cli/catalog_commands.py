"""Commands about the specs themselves: list, show, import-hf."""

from __future__ import annotations

import click

from ..errors import SpecError, short
from .common import (
    OutputFile,
    emit,
    given,
    handle_errors,
    one_gpu_option,
    option,
    options,
    table_output,
    typed_name,
)


@click.command("list", short_help="List the shipped models, GPUs, scenarios, engines or costs.")
@click.argument("kind", type=click.Choice(["models", "hardware", "scenarios", "engines", "costs"]))
@table_output
@handle_errors
def list_cmd(kind, format):
    """List the models, GPUs, scenarios, engine profiles or cost files that ship with the
    toolkit (the names an unknown one's error points to).

    \b
    Example:  inference-econ list hardware
    """
    from .. import api
    from ..output.render import first_sentence, render

    df = api.list_specs(kind)
    if format in ("table", "markdown"):  # the whole description is in show and the JSON
        df = df.assign(description=df["description"].map(first_sentence))
    if format == "table":
        df = df.drop(columns=["file"])
    extra = api.extra_data_roots()
    meta = {"listed": kind, "from": "the package's data"}
    if extra:
        meta["from"] += " and INFERENCE_ECON_PATH " + ", ".join(extra)
    meta["inference_econ"] = api.package_version()
    names = {"hardware": "GPUs", "engines": "engine profiles"}
    title = f"{len(df)} {names.get(kind, kind)}"
    if format == "table":  # the plain listing: what it holds is in the CSV/JSON/Markdown
        title, meta = "", None
    click.echo(render(df, format, title=title, meta=meta), nl=False)
    for problem in api.skipped_specs(kind):
        click.echo(f"warning: skipped {problem}", err=True)
    for unread in api.unread_user_roots():
        click.echo(f"warning: {unread}", err=True)


@click.command(short_help="A model's, a GPU's or an engine profile's figures.")
@click.argument("name")
@one_gpu_option(
    "give one -H",
    required=False,
    default=("H100-paper",),
    show_default=True,
    help="GPU for the derived figures of a model.",
)
@options("assumptions", "weight_bits", "activation_bits", "kv_cache_bits")
@table_output
@handle_errors
def show(name, hardware, assumptions, weight_bits, activation_bits, kv_cache_bits, format):
    """Show a model's, a GPU's or an engine profile's figures and what follows from them.

    For a model: total and active parameters, KV bytes per token, the GPUs its weights need,
    the critical batch size on --hardware, counted under --assumptions (paper, like every
    command; refined counts MLA, shared experts and tied embeddings exactly). For a GPU: its
    datasheet and derived figures. For an engine profile: its terms. NAME is a name, an alias
    or a YAML file of any of the three kinds (told apart by folder, derive_from or fields).

    \b
    Examples:  inference-econ show "DeepSeek-V3" -H H100
               inference-econ show examples/gpu.yaml
    """
    import pandas as pd

    from .. import api
    from ..output.render import render

    bits = dict(
        weight_bits=weight_bits, activation_bits=activation_bits, kv_cache_bits=kv_cache_bits
    )
    kind = api.spec_kind(name)
    if kind != "models":  # the options describe a model: for a GPU or a profile, ignored
        ctx = click.get_current_context()
        model_only = ("hardware", "assumptions", "weight_bits", "activation_bits", "kv_cache_bits")
        extra = [n for n in model_only if n in given(ctx)]
        if extra:
            flag = typed_name(extra[0], ctx)
            what = "a GPU" if kind == "hardware" else "an engine profile"
            raise SpecError(
                "command line",
                flag,
                f"sets a model's figures, but {short(name)} is {what}: it would be ignored",
                f"drop {flag}",
            )
    if kind == "models":  # errors about --hardware or the model file are reported as they are
        info = api.model_summary(name, hardware, assumptions, **bits)
    elif kind == "hardware":
        info = api.hardware_summary(name)
    else:
        info = api.engine_summary(name)
    df = pd.DataFrame({"field": list(info), "value": [_show_value(k, v) for k, v in info.items()]})
    if kind == "models":
        title = f"{info['name']} ({info['precision']}), derived figures on {info['hardware']}"
        meta = {
            "model": info["name"],
            "model_file": info["file"],
            "hardware": info["hardware"],
            "hardware_file": info["hardware_file"],
            "assumptions": info["assumptions"],
        }
    else:
        title = str(info["name"])
        key = "hardware" if kind == "hardware" else "engine"
        meta = {key: info["name"], f"{key}_file": info["file"]}
    shown = pd.DataFrame([info]) if format in ("json", "csv") else df
    if kind != "models":  # a spec's own figures: nothing computed under a preset
        click.echo(render(shown, format, title=title, meta=meta), nl=False)
        return
    # a model's derived figures (its weights' GPUs, critical batch) are its preset's
    line = api.figures_line(info["assumptions"], intervals=False)
    if format in ("json", "csv"):
        click.echo(render(shown, format, title=title, meta=meta, notes=[line]), nl=False)
        return
    click.echo(line + "\n" + render(shown, format, title=title, meta=meta), nl=False)


def _show_value(field, value):
    """A figure of ``show``: counts of tokens, requests or GPUs in full (128,000), large
    parameter and byte counts to four digits (7.055e+10), the rest as tables print them."""
    from ..output.render import format_number

    if isinstance(value, dict):  # a table by bits; an entry may be a table of its own
        return ", ".join(
            f"{k}: ({_show_value(field, v)})" if isinstance(v, dict) else f"{k}: {v:.4g}"
            for k, v in value.items()
        )
    if isinstance(value, float) and abs(value) >= 1e6 and not _is_count(field):
        return f"{value:.4g}"
    return format_number(value)


def _is_count(field: str) -> bool:
    return any(word in field for word in ("tokens", "batch", "gpus", "heads", "layers"))


@click.command("import-hf", short_help="Import a Hugging Face model config as a model YAML.")
@click.argument("config")
@click.option(
    "-o",
    "--out",
    type=OutputFile(("yaml", "yml")),
    help="Write the model YAML here (default: print it).",
)
@click.option(
    "--name",
    help="Model name (default: the Hub repository, else the config's _name_or_path, else the "
    "folder that holds config.json: examples/config.json would be named 'examples').",
)
@click.option("--revision", help="Hub repository revision: a branch, tag or commit.")
@option(
    "format",
    default=None,
    help="Print a summary of the imported model in this format instead of its YAML.",
)
@handle_errors
def import_hf(config, out, name, revision, format):
    """Import a Hugging Face model config into a model YAML.

    CONFIG is a local config.json (or its folder), or a Hub repository org/name, read with
    huggingface_hub (pip install "inference-econ[hub]"). The weight precision comes from
    quantization_config (or hf_quant_config.json), multimodal configs give their text_config.

    \b
    Examples:  inference-econ import-hf examples/config.json -o models/my-model.yaml --name "My Model"
               inference-econ import-hf meta-llama/Llama-3.1-8B-Instruct -o models/llama-hub.yaml
    """
    from pathlib import Path

    import pandas as pd

    from .. import api

    local = Path(config).expanduser()
    try:
        if local.exists():
            if revision:
                raise SpecError(
                    "command line",
                    "--revision",
                    "given with a local file",
                    "drop it, or give org/name",
                )
            arch, text = api.import_hf_config(local, name)
        elif config.endswith(".json") or "/" not in config:
            raise SpecError(
                "command line",
                "CONFIG",
                f"no file {short(config)}",
                "give a path to a config.json, or a Hub repository as org/name",
            )
        else:
            arch, text = api.import_hf_repo(config, name, revision)
    except (ValueError, TypeError, ArithmeticError, LookupError, RecursionError) as exc:
        if isinstance(exc, SpecError):
            raise
        # a config the importer does not check field by field: still one line, exit 2
        raise SpecError(
            config, "", f"cannot import the config: {short(str(exc), 120)}", "check its fields"
        ) from None
    if format is not None:
        from ..output.render import render

        info = api.model_summary(arch)
        if out:
            emit(text, out)
        rows = pd.DataFrame(
            {"field": list(info), "value": [_show_value(k, v) for k, v in info.items()]}
        )
        shown = pd.DataFrame([info]) if format in ("json", "csv") else rows
        click.echo(render(shown, format, title=f"Imported {arch.name}"), nl=False)
        return
    emit(text, out)
    if out:
        click.echo(
            f"{arch.name}: {arch.layers} layers, d_model {arch.d_model}, {arch.attention.kind}",
            err=True,
        )


COMMANDS = (list_cmd, show, import_hf)
