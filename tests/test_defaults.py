"""Defaults a newcomer cannot misread and the settings table as their home."""

from pathlib import Path

import yaml

import inference_econ as ie
from inference_econ import settings as table
from inference_econ.serving.setting import REQUESTS_CONTEXT, Setting, make_setting

ROOT = Path(__file__).resolve().parent.parent


def test_the_default_context_reads_a_kv_cache():
    # A default of 0 tokens would let the cheapest point of a frontier read no KV cache.
    assert table.option("context_tokens").default == 1000.0
    assert make_setting("Llama 3 70B", "H100").context_tokens == 1000.0
    front = ie.frontier("Llama 3 70B", "H100", grid_points=60)
    assert front.metadata["context_tokens"] == 1000.0  # stated in every output's metadata
    assert front.cheapest()["kv_read_full_s"] > 0
    # the dataclass takes the table's default too: one home
    assert Setting.__dataclass_fields__["context_tokens"].default == 1000.0


def test_paper_scenarios_state_their_context():
    """A paper table or figure that uses the paper's empty context says so: every curve of
    every paper scenario states context_tokens (itself or in the file's defaults), so the
    package's default never decides a reproduced figure."""
    for path in sorted((ROOT / "scenarios" / "paper").glob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        defaults = data.get("defaults") or {}
        for curve in data.get("curves") or []:
            assert "context_tokens" in curve or "context_tokens" in defaults, (
                path.name,
                curve.get("label"),
            )


def test_results_whose_requests_bring_their_contexts_say_so():
    from inference_econ.load.arrivals import make_traffic
    from inference_econ.load.deployment import Deployment, simulate_deployment

    setting = make_setting("Llama 3 8B", "H100")
    run = simulate_deployment(
        setting, Deployment(1), make_traffic(2, "200", "20", requests=50, seed=0)
    )
    assert run.metadata()["context_tokens"] == REQUESTS_CONTEXT


# --- the settings table as the one home of defaults -------------------------
#: Keywords that name another row than their own name: the inverse analyses' candidates, and
#: the prefill pass's batch (a prefill batch).
ROWS = {
    ("InverseOptions", "weight_bits"): "candidate_weight_bits",
    ("InverseOptions", "assumptions"): "candidate_assumptions",
    ("prefill", "batch"): "prefill_batch",
}


def _table_defaults(name: str) -> list:
    row = table.option(name)
    return [row.default, *(value for _, value in row.command_defaults)]


def _same(a, b) -> bool:
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return list(a) == list(b)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return float(a) == float(b)
    return a == b


def test_every_api_default_is_the_tables():
    """A keyword of a public function named as a setting defaults to the table's value (or to
    None, "not given", which the function resolves from the table): an analysis that restated
    grid_points=100 against the table's 400, with no row saying so, would fail here."""
    import inspect

    from inference_econ import _EXPORTS
    from inference_econ.studies.inverse.variants import InverseOptions

    # the figure functions of output/ take no settings (and would import matplotlib)
    functions = [getattr(ie, n) for n, (m, _) in _EXPORTS.items() if not m.startswith("output")]
    functions = [f for f in functions if inspect.isfunction(f)] + [InverseOptions]
    wrong = []
    for fn in functions:
        for p in inspect.signature(fn).parameters.values():
            name = ROWS.get((fn.__qualname__, p.name), p.name)
            if name not in table.BY_NAME or p.default in (inspect.Parameter.empty, None):
                continue
            if not any(_same(p.default, d) for d in _table_defaults(name)):
                wrong.append(f"{fn.__qualname__}({p.name}={p.default!r})")
    assert not wrong, wrong


def test_every_command_default_is_the_tables():
    """The default each command shows for a setting is the table's, or the row's default for
    that command (``command_defaults``)."""
    import click

    from inference_econ.cli import main

    wrong = []

    def walk(cmd, path):
        if isinstance(cmd, click.Group):
            for name, sub in cmd.commands.items():
                walk(sub, (*path, name))
            return
        for p in cmd.params:
            if p.name not in table.BY_NAME or p.default is None or "UNSET" in repr(p.default):
                continue  # not a setting, or no default shown (click's unset flag)
            row = table.option(p.name)
            allowed = [row.default] + [v for c, v in row.command_defaults if c in path]
            if row.kind == "flag" and isinstance(p.default, bool):
                continue  # a flag's --x/--no-x pair is the row's either way
            if not any(_same(p.default, d) for d in allowed) and str(p.default) not in map(
                str, allowed
            ):
                wrong.append(f"{' '.join(path)} --{p.name}: {p.default!r} (table: {allowed!r})")

    walk(main, ())
    assert not wrong, wrong


def test_a_command_default_lives_in_the_table():
    assert table.default("grid_points") == 400
    assert table.default("grid_points", table.INFER) == 100
    from inference_econ.studies.inverse.variants import InverseOptions

    assert InverseOptions().grid_points == 100 and InverseOptions().draft == "Llama 3 8B"


def test_each_setting_is_a_typed_field_of_its_section():
    """The table is derived from the fields that declare the settings, in order: each field's
    default is its row's (a required row's field has none), and a dataclass that uses a
    setting reads its default there; a field whose type and default disagree is refused."""
    import dataclasses

    import pytest

    from inference_econ.settings.load import SchedulerOptions
    from inference_econ.settings.row import section, setting
    from inference_econ.settings.table import SECTIONS

    fields = [f for cls in SECTIONS for f in dataclasses.fields(cls)]
    assert [f.name for f in fields] == [row.name for row in table.SETTINGS]
    for f in fields:
        row = table.option(f.name)
        assert f.default is dataclasses.MISSING if row.required else f.default == row.default
    assert SchedulerOptions.prefix_caching is table.default("prefix_caching") is True
    with pytest.raises(TypeError, match="Bad.requests_per_s"):

        @section(table.LOAD)
        class Bad:
            requests_per_s: float = setting(None, help="Given None, typed without None.")


#: A value other than its default for every problem setting, with what it needs beside it.
GIVEN = {
    "context_tokens": ({}, 2000),
    "weight_bits": ({}, 8),
    "activation_bits": ({}, 8),
    "kv_cache_bits": ({}, 8),
    "redundant_experts": ({"model": "Mixtral 8x7B"}, 8),  # a MoE model's option
    "max_throughput_tokens_per_s": ({}, 1e5),
    "draft": ({}, "Llama 3 8B"),
    "acceptance": ({"draft": "Llama 3 8B"}, 0.6),
    "max_draft_tokens": ({"draft": "Llama 3 8B"}, 3),
    "draft_weight_bits": ({"draft": "Llama 3 8B"}, 8),
    "draft_heads": ({}, "eagle"),
    "acceptance_by_position": ({"draft_heads": "eagle"}, [0.8, 0.6]),
    "tree_branching": ({"draft_heads": "eagle"}, 2),
    "eagle_layers": ({"draft_heads": "eagle"}, 2),
    "pipeline": ({}, False),
    "assumptions": ({}, "refined"),
    "engine": ({"assumptions": "achievable"}, "vllm"),
    "clock": ({"assumptions": "achievable"}, "kernel"),
    # stated in the assumptions' label ("+ two_batch_overlap=True")
    "two_batch_overlap": (
        {"model": "Mixtral 8x7B", "assumptions": "achievable", "engine": "sglang"},
        True,
    ),
    # stated in the assumptions' label ("+ deepep=True")
    "deepep": ({"model": "Mixtral 8x7B", "assumptions": "achievable", "engine": "sglang"}, True),
    "prompt_tokens": ({}, 500),
    "ttft_max_s": ({"prompt_tokens": 500}, 0.5),
    "max_gpus": ({}, 16),
    "price_basis": ({}, "owned"),
    "costs": ({"price_basis": "owned"}, "COSTS"),
    "pue": ({}, 1.5),
    "grid_intensity_g_per_kwh": ({}, 300),
    "grid_region": ({}, "France"),
}


def test_every_problem_setting_is_stated_in_the_metadata(tmp_path):
    """Giving any setting of what is served changes what a result says it was computed with,
    so a new setting cannot vanish from provenance: a new row of the table fails here until it
    has a value in GIVEN and a statement in the metadata."""
    costs = tmp_path / "my-costs.yaml"
    costs.write_text((ROOT / "costs" / "owned-2025.yaml").read_text())
    assert set(GIVEN) | {"label"} == set(table.names(table.PROBLEM))
    for name, (base, value) in GIVEN.items():
        value = str(costs) if value == "COSTS" else value
        base = dict(base)
        model = base.pop("model", "Llama 3 70B")
        before = make_setting(model, "H100", **base).metadata()
        after = make_setting(model, "H100", **base, **{name: value}).metadata()
        assert after != before, name


def test_the_api_signatures_list_the_settings_they_take():
    """help(ie.frontier) lists its parameters, not only **kwargs: the
    signature is generated from the table, so it lists every setting with its default."""
    import inspect

    params = inspect.signature(ie.frontier).parameters
    assert set(table.names(table.PROBLEM, table.METHOD)) <= set(params)
    assert params["grid_points"].default == 400 and params["context_tokens"].default == 1000.0
    load = inspect.signature(ie.capacity).parameters
    assert set(table.names(table.LOAD)) <= set(load)
    assert load["assumptions"].default == table.LOAD_ASSUMPTIONS  # the command's own default
    assert "gpus" in inspect.signature(ie.point).parameters  # its own parameters stay
