"""Commands about the specs themselves: list, show, import-hf."""

from __future__ import annotations

import click

from ..errors import SpecError, UnknownNameError, did_you_mean
from .common import emit, format_option, handle_errors


@click.command("list")
@click.argument("kind", type=click.Choice(["models", "hardware", "scenarios", "engines"]))
@format_option
@handle_errors
def list_cmd(kind, format):
    """List the models, GPUs, scenarios or engine profiles that ship with the toolkit.

    \b
    Example:  inference-econ list hardware
    """
    from .. import api
    from ..output.render import render

    df = api.list_specs(kind)
    if format == "table":
        df = df.drop(columns=["file"])
    click.echo(render(df, format), nl=False)


@click.command()
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
def show(name, hardware, assumptions, format):
    """Show a model's or a GPU's figures and what follows from them.

    For a model: total and active parameters, KV bytes per token, the GPUs its weights need,
    the critical batch size on --hardware. For a GPU: its datasheet and derived figures.

    \b
    Example:  inference-econ show "DeepSeek-V3" -H H100
    """
    import pandas as pd

    from .. import api
    from ..output.render import render
    from ..specs import catalog

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
    if format == "json":
        click.echo(render(pd.DataFrame([info]), "json"), nl=False)
    else:
        click.echo(render(df, format), nl=False)


def _show_value(value):
    if isinstance(value, float) and abs(value) >= 1e6:
        return f"{value:.4g}"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {v:.4g}" for k, v in value.items())
    return value


@click.command("import-hf")
@click.argument("config")
@click.option(
    "-o",
    "--out",
    type=click.Path(dir_okay=False),
    help="Write the model YAML here (default: print it).",
)
@click.option("--name", help="Model name (default: the repository or _name_or_path).")
@click.option("--revision", help="Hub repository revision: a branch, tag or commit.")
@handle_errors
def import_hf(config, out, name, revision):
    """Import a Hugging Face model config into a model YAML.

    CONFIG is a local config.json (or its folder), or a Hub repository org/name, read with
    huggingface_hub (pip install "inference-econ[hub]"). The weight precision comes from
    quantization_config (or hf_quant_config.json), multimodal configs give their text_config.

    \b
    Example:  inference-econ import-hf config.json -o models/my-model.yaml --name "My Model"
              inference-econ import-hf deepseek-ai/DeepSeek-V3 -o models/dsv3.yaml
    """
    from pathlib import Path

    from ..specs.hf_import import import_config, import_repo

    local = Path(config).expanduser()
    if local.exists():
        if revision:
            raise SpecError(
                "command line", "--revision", "given with a local file", "drop it, or give org/name"
            )
        arch, text = import_config(local, name)
    elif config.endswith(".json") or "/" not in config:
        raise SpecError(
            "command line",
            "CONFIG",
            f"no file {config!r}",
            "give a path to a config.json, or a Hub repository as org/name",
        )
    else:
        arch, text = import_repo(config, name, revision)
    emit(text, out)
    if out:
        click.echo(
            f"{arch.name}: {arch.layers} layers, d_model {arch.d_model}, {arch.attention.kind}",
            err=True,
        )


COMMANDS = (list_cmd, show, import_hf)
