"""Hostile input: a fuzz suite over every command's options and every kind of file.

Hypothesis generates wrong types, non-finite and extreme numbers, missing, extra and duplicate
fields and broken encodings. The contract (docs/errors.md): no traceback, exit 2 for bad input
(1 only when nothing is feasible), never a NaN, infinite or negative speed or cost in the
output, every run under 10 s. Runs are in-process (click's CliRunner) and derandomised, so the
suite is fast and repeatable; ``IE_FUZZ_EXAMPLES=500 pytest tests/test_hostile.py`` searches
harder.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import time

import pandas as pd
import yaml
from click.testing import CliRunner
from conftest import STUCK_CPU_S
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inference_econ.cli import commands, main
from inference_econ.specs import catalog

SCALE = float(os.environ.get("IE_FUZZ_EXAMPLES", "0")) or None


def fuzz(examples: int):
    """Hypothesis settings of a fuzz test: derandomised, no deadline, ``examples`` runs
    (times IE_FUZZ_EXAMPLES / 100 when set)."""
    n = int(examples * SCALE / 100) if SCALE else examples
    return settings(
        max_examples=max(n, 1),
        deadline=None,
        derandomize=SCALE is None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )


# --- what every run must satisfy ---------------------------------------------------------

#: Columns holding a speed, a cost or a time: never NaN text, infinite or negative.
MEASURE = re.compile(r"(tokens_per_s|usd|latency|_s$|ttft|speedup|mfu)")
#: Columns of text a user names (a curve's label may be "nan").
TEXT = re.compile(r"(label|name|note|model|offer|provider|curve|hardware|source|value)")


def invoke(args, input_bytes=None):
    """Run the CLI in-process and check the contract; returns (exit code, stdout)."""
    start = time.process_time()
    result = CliRunner().invoke(main, [str(a) for a in args], input=input_bytes)
    elapsed = time.process_time() - start
    described = f"{args!r} -> exit {result.exit_code}: {result.output[-400:]}"
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"traceback: {described}") from result.exception
    assert "Traceback" not in result.output, described
    assert result.exit_code in (0, 1, 2), described
    assert elapsed < STUCK_CPU_S, f"stuck: {elapsed:.1f} CPU s: {described}"
    if result.exit_code != 0:
        errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
        assert len(errors) == 1, described  # one line naming the problem
        assert result.stdout == "", described  # nothing half-printed
    else:
        check_numbers(result.stdout, described)
    return result.exit_code, result.stdout


def check_numbers(out: str, described: str) -> None:
    """Every speed, cost or time in a CSV output is finite and not negative (blank: none)."""
    if not out.strip() or out.lstrip().startswith(("{", "[")):
        return
    lines = out.splitlines(keepends=True)
    body = "".join(lines[next((i for i, x in enumerate(lines) if not x.startswith("#")), 0) :])
    try:  # after the '#' lines that state what the output was computed with
        df = pd.read_csv(io.StringIO(body), keep_default_na=False)  # cells as printed
    except (pd.errors.ParserError, pd.errors.EmptyDataError):
        return
    if {"field", "value"} <= set(df.columns):  # a vertical point/prefill/request table
        df = pd.DataFrame([dict(zip(df["field"], df["value"]))])
    for column in df.columns:
        if not TEXT.search(str(column)):  # a number column never prints inf or nan
            text = df[column].astype(str).str.strip().str.lower()
            assert not text.isin(["inf", "-inf", "nan", "infinity"]).any(), (column, described)
        if not MEASURE.search(str(column)):
            continue
        values = pd.to_numeric(df[column], errors="coerce")
        assert not (values < 0).any(), (column, described)
        assert not values.isin([math.inf, -math.inf]).any(), (column, described)


# --- values a user might type -----------------------------------------------------------

SPECIAL = [
    "nan", "NaN", "inf", "-inf", "Infinity", "1e999", "-1e999", "-1", "0", "-0", "1e-300",
    "5e-324", "abc", "", " ", ",", ",,", "1,2", "0x10", "1_000", " 7 ", "1e308", "10" * 40,
    "true", "[1]", "{}", "\x00", "é", "1e", "--", "0.5", "3", "8", "2000", "4096",
]  # fmt: skip
values = st.one_of(
    st.sampled_from(SPECIAL),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-(10**25), max_value=10**25).map(str),
    st.text(max_size=6),
)

#: A valid run of each command (small and fast), and the options fuzzed on it.
MODEL = "Llama 3 8B"
COMMANDS = {
    "point": (
        ["point", MODEL, "-H", "H100-paper", "--gpus", "2", "--batch", "8", "--format", "csv"],
        ["--gpus", "--batch", "--context", "--weight-bits", "--activation-bits", "--kv-bits",
         "--acceptance", "--max-draft", "--assumptions", "--draft", "-H"],
    ),
    "frontier": (
        ["frontier", MODEL, "-H", "H100-paper", "--grid-points", "24", "--format", "csv"],
        ["--grid-points", "--context", "--max-throughput", "--prompt-tokens", "--ttft-max",
         "--weight-bits", "--rows", "--format", "--max-draft"],
    ),
    "prefill": (
        ["prefill", MODEL, "-H", "H100-paper", "--gpus", "1", "--prompt-tokens", "2000",
         "--format", "csv"],
        ["--gpus", "--prompt-tokens", "--batch", "--cached-fraction", "--chunk", "--context"],
    ),
    "request": (
        ["request", MODEL, "-H", "H100-paper", "--gpus", "1", "--batch", "4",
         "--prompt-tokens", "500", "--output-tokens", "100", "--format", "csv"],
        ["--gpus", "--batch", "--prompt-tokens", "--output-tokens", "--prefill-batch",
         "--cached-fraction"],
    ),
    "disagg": (
        ["disagg", MODEL, "-H", "H100-paper", "--gpus", "1", "--batch", "4",
         "--prompt-tokens", "500", "--output-tokens", "100", "--format", "csv"],
        ["--gpus", "--batch", "--prompt-tokens", "--output-tokens", "--prefill-gpus"],
    ),
    "context-parallel": (
        ["context-parallel", MODEL, "-H", "A100-paper", "--prompt-tokens", "1000,8000",
         "--format", "csv"],
        ["--prompt-tokens", "--devices", "--link-gb-per-s"],
    ),
    "prices": (
        ["prices", MODEL, "-H", "H100-paper", "--contexts", "1000", "--format", "csv"],
        ["--contexts", "--weight-bits", "--assumptions"],
    ),
    "sweep": (
        ["sweep", MODEL, "-H", "H100-paper", "--param", "hbm_bandwidth", "--values", "2",
         "--grid-points", "24", "--format", "csv"],
        ["--param", "--values", "--at-speed", "--context"],
    ),
    "show": (["show", MODEL, "--format", "csv"], ["-H", "--assumptions", "--format"]),
    "list": (["list", "models", "--format", "csv"], ["--format"]),
    "reproduce": (["reproduce", "table-1", "--format", "csv"], ["--format"]),
}  # fmt: skip


def with_value(base: list, option: str, value: str) -> list:
    """``base`` with ``option`` set to ``value`` (replaced if present, else added)."""
    args = list(base)
    if option in args:
        args[args.index(option) + 1] = value
    else:
        args += [option, value]
    return args


@fuzz(60)
@given(st.data())
def test_every_option_of_every_command(data):
    name = data.draw(st.sampled_from(sorted(COMMANDS)), label="command")
    base, options = COMMANDS[name]
    option = data.draw(st.sampled_from(options), label="option")
    value = data.draw(values, label="value")
    invoke(with_value(base, option, value))


@fuzz(20)
@given(st.data())
def test_names_flags_and_positional_arguments(data):
    """Unknown options, missing arguments, hostile names and paths."""
    name = data.draw(st.sampled_from(sorted(COMMANDS)), label="command")
    base, _ = COMMANDS[name]
    hostile = data.draw(
        st.sampled_from(
            ["", " ", "a" * 5000, "\x00", "~nobody/x.yaml", "/dev/zero", "/dev/null", "/tmp",
             "/etc/shadow", "../../x.yaml", "Lama 3", "llama-3-8b", "LLAMA 3 8B"]
        )
        | st.text(max_size=12),
        label="value",
    )  # fmt: skip
    how = data.draw(st.sampled_from(["model", "hardware", "unknown option", "drop"]))
    args = list(base)
    if how == "model" and len(args) > 1:
        args[1] = hostile
    elif how == "hardware":
        args = with_value(args, "-H", hostile)
    elif how == "unknown option":
        args += ["--no-such-option", hostile]
    else:
        args = args[: max(1, len(args) - 2)]
    invoke(args)


def test_the_issues_examples_exit_2_with_one_line():
    """The inputs the issue found accepted, hanging or crashing."""
    p = ["-H", "H100-paper", "--gpus", "8"]
    big = "Llama 3 70B"
    for args in (
        ["prefill", big, *p, "--prompt-tokens", "8000", "--chunk", c]
        for c in ("0", "-1", "-inf", "1e-300")
    ):
        assert invoke(args)[0] == 2
    for args in (
        ["prefill", big, "-H", "H100-paper", "--gpus", "inf", "--prompt-tokens", "8000"],
        ["request", big, "-H", "H100-paper", "--gpus", "inf", "--batch", "1",
         "--prompt-tokens", "8", "--output-tokens", "8"],
        ["disagg", big, *p, "--batch", "0", "--prompt-tokens", "8", "--output-tokens", "8"],
        ["disagg", big, *p, "--batch", "nan", "--prompt-tokens", "8", "--output-tokens", "8"],
        ["point", big, *p, "--batch", "0.5"],
        ["point", big, *p, "--batch", "1e-300"],
        ["point", big, *p, "--batch", "inf"],
        ["point", big, *p, "--batch", "8", "--context", "inf"],
        ["point", big, *p, "--batch", "8", "--acceptance", "7"],
        ["point", big, *p, "--batch", "8", "--acceptance", "0.5"],  # without --draft
        ["prefill", big, *p, "--prompt-tokens", "800", "--cached-fraction", "1.5"],
        ["prices", big, "-H", "H100-paper", "--contexts", ","],
        ["frontier", big, "-H", "H100-paper", "--grid-points", "4000"],
        ["frontier", big, "-H", "H100-paper", "--rows", "-3"],
    ):  # fmt: skip
        assert invoke(args)[0] == 2, args


# --- files --------------------------------------------------------------------------------

GPU = {
    "name": "Fuzz GPU",
    "flop_per_s": {16: 1e15, 8: 2e15},
    "hbm_bandwidth_bytes_per_s": 3e12,
    "hbm_capacity_bytes": 8e10,
    "nvlink_bandwidth_bytes_per_s": 9e11,
    "nic_bandwidth_bytes_per_s": 5e10,
    "scale_up_domain_gpus": 8,
    "price_usd_per_hour": 2.0,
}
MODEL_SPEC = {
    "name": "Fuzz Model",
    "d_model": 1024,
    "vocab_size": 32000,
    "layers": 8,
    "attention": {"kind": "gqa", "query_heads": 16, "kv_heads": 4, "head_dim": 64},
    "ffn": {"d_ff": 4096, "activation": "swiglu", "experts": 4, "active_experts": 2},
    "precision": {"weight_bits": 16, "activation_bits": 16},
}
SCENARIO = {
    "title": "Fuzz",
    "plots": [],  # the curves and their key points, no figure (fast)
    "defaults": {"hardware": "H100-paper", "grid_points": 16},
    "measured": [{"label": "API", "tokens_per_s": 100, "usd_per_mtok": 1.0}],
    "options": {"max_speed": 500},
    "curves": [
        {"label": "a", "model": MODEL, "color": "tab:blue", "context_tokens": 1000},
        {"label": "b", "model": MODEL, "hardware_scale": {"hbm_bandwidth_bytes_per_s": 2}},
    ],
}
HF = {
    "model_type": "llama",
    "hidden_size": 1024,
    "intermediate_size": 4096,
    "num_hidden_layers": 8,
    "num_attention_heads": 16,
    "num_key_value_heads": 4,
    "vocab_size": 32000,
}

#: Replacement values for a field: wrong types, non-finite and extreme numbers.
FIELD_VALUES = st.one_of(
    st.sampled_from(
        [None, True, "", "abc", "nan", ".inf", [], [1], {}, {"a": 1}, 0, -1, 0.5, 1e-300,
         1e300, 10**30, -(10**30), "1e15", 7, 4000, "x" * 300]
    ),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**20), max_value=10**20),
)  # fmt: skip


def paths(spec, prefix=()):
    """Every dotted path to a field of a nested spec."""
    out = []
    for key, value in spec.items():
        out.append((*prefix, key))
        if isinstance(value, dict):
            out += paths(value, (*prefix, key))
        if isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, dict):
                    out += paths(item, (*prefix, key, i))
    return out


def mutate(data, spec: dict) -> dict:
    """A copy of ``spec`` with one field replaced, removed, or an unknown field added."""
    spec = json.loads(json.dumps(spec))
    path = data.draw(st.sampled_from(paths(spec)), label="field")
    node = spec
    for part in path[:-1]:
        node = node[part]
    how = data.draw(st.sampled_from(["replace", "replace", "remove", "add"]), label="how")
    if how == "remove":
        del node[path[-1]]
    elif how == "add" and isinstance(node, dict):
        node[data.draw(st.sampled_from(["extra", "layers ", "Name", "1"]))] = 1
    else:
        node[path[-1]] = data.draw(FIELD_VALUES, label="value")
    return spec


def broken_text(data, text: str) -> bytes:
    """The file's bytes, broken: a non-UTF-8 byte, a NUL, a duplicated key, a cut, or nesting."""
    how = data.draw(
        st.sampled_from(["latin-1", "nul", "duplicate", "cut", "bom", "deep", "bomb", "tag"]),
        label="breakage",
    )
    raw = text.encode("utf-8")
    first = text.splitlines()[0]
    if how == "latin-1":
        return raw.replace(b"a", b"\xe9", 1)
    if how == "nul":
        return raw[: len(raw) // 2] + b"\x00" + raw[len(raw) // 2 :]
    if how == "duplicate":
        return raw + ("\n" + first + "\n").encode()
    if how == "cut":
        return raw[: data.draw(st.integers(0, len(raw)))]
    if how == "bom":
        return b"\xef\xbb\xbf" + raw
    if how == "deep":
        return raw + b"\nextra: " + b"[" * 5000 + b"]" * 5000 + b"\n"
    if how == "bomb":
        lines = ['a: &a ["x","x","x","x","x","x","x","x","x"]']
        for i in range(8):
            prev, cur = chr(97 + i), chr(98 + i)
            lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
        return (text + "\n" + "\n".join(lines) + "\ndescription: *i\n").encode()
    return raw + b"\nextra: !!python/object/apply:os.system ['true']\n"


def write(tmp_path, name: str, payload) -> str:
    path = tmp_path / name
    path.write_bytes(payload if isinstance(payload, bytes) else payload.encode("utf-8"))
    return str(path)


def file_run(kind: str, path: str) -> list:
    """The command that reads a file of one kind."""
    return {
        "hardware": ["point", MODEL, "-H", path, "--gpus", "4", "--batch", "8", "--format", "csv"],
        "model": ["point", path, "-H", "H100-paper", "--gpus", "4", "--batch", "8",
                  "--format", "csv"],
        "scenario": ["run", path, "--format", "csv", "-q"],
        "hf": ["import-hf", path],
    }[kind]  # fmt: skip


SPECS = {"hardware": GPU, "model": MODEL_SPEC, "scenario": SCENARIO, "hf": HF}


@fuzz(50)
@given(st.data())
def test_every_field_of_every_file_kind(tmp_path_factory, data):
    kind = data.draw(st.sampled_from(sorted(SPECS)), label="kind")
    spec = mutate(data, SPECS[kind])
    suffix = ".json" if kind == "hf" else ".yaml"
    text = json.dumps(spec) if kind == "hf" else yaml.safe_dump(spec, sort_keys=False)
    path = write(tmp_path_factory.mktemp("f"), f"{kind}{suffix}", text)
    code, _ = invoke(file_run(kind, path))
    assert code in (0, 1, 2)


@fuzz(24)
@given(st.data())
def test_broken_encodings_and_yaml_attacks(tmp_path_factory, data):
    kind = data.draw(st.sampled_from(["hardware", "model", "scenario"]), label="kind")
    text = yaml.safe_dump(SPECS[kind], sort_keys=False)
    payload = broken_text(data, text)
    path = write(tmp_path_factory.mktemp("b"), f"{kind}.yaml", payload)
    code, _ = invoke(file_run(kind, path))
    if b"\xe9" in payload or b"\x00" in payload or b"!!python" in payload:
        assert code == 2


OVERLAY_VALUES = st.one_of(
    st.sampled_from(["", "abc", "nan", "inf", "-1", "0", "1e999", "1e-300", "5", " 3 "]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)


@fuzz(15)
@given(st.data())
def test_overlay_csv(tmp_path_factory, data):
    """The measured-points overlay of ``run --measured``: bad cells, columns and encodings."""
    rows = data.draw(st.integers(0, 4), label="rows")
    columns = data.draw(
        st.sampled_from(
            [("label", "tokens_per_s", "usd_per_mtok"), ("tokens_per_s", "usd_per_mtok"),
             ("tokens_per_s", "tokens_per_s_per_gpu"), ("tokens_per_s",), ("usd_per_mtok",), ()]
        ),
        label="columns",
    )  # fmt: skip
    lines = [",".join(columns)] + [
        ",".join(data.draw(OVERLAY_VALUES) for _ in columns) for _ in range(rows)
    ]
    payload = "\n".join(lines).encode()
    if data.draw(st.booleans(), label="latin-1"):
        payload += b"\n\xe9,1,1"
    folder = tmp_path_factory.mktemp("o")
    one_curve = {**SCENARIO, "plots": ["frontier"], "curves": SCENARIO["curves"][:1]}
    scenario = write(folder, "s.yaml", yaml.safe_dump(one_curve))
    csv = write(folder, "m.csv", payload)
    invoke(["run", scenario, "--measured", csv, "--format", "csv", "-q"])


def test_a_broken_catalog_file_is_skipped_and_named(tmp_path, monkeypatch):
    """`aliases: 5`, invalid YAML or a bad name in one catalog file: reported, skipped."""
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "bad-aliases.yaml").write_text("name: Bad\naliases: {a: 1}\n")
    (tmp_path / "models" / "bad-yaml.yaml").write_text("name: [unclosed\n")
    (tmp_path / "models" / "dupe.yaml").write_text("name: Dupe\nname: Dupe 2\n")
    monkeypatch.setenv("INFERENCE_ECON_PATH", str(tmp_path))
    catalog.clear_cache()
    try:
        result = CliRunner().invoke(main, ["list", "models", "--format", "csv"])
        assert result.exit_code == 0 and "Llama 3 70B" in result.stdout
        warnings = [line for line in result.stderr.splitlines() if line.startswith("warning")]
        assert len(warnings) == 3 and all(str(tmp_path) in w for w in warnings)
        assert invoke(["show", MODEL, "--format", "csv"])[0] == 0  # other lookups work
        code, _ = invoke(["show", "bad-yaml"])
        result = CliRunner().invoke(main, ["show", "bad-yaml"])
        assert code == 2 and "bad-yaml.yaml" in result.stderr and "not valid YAML" in result.stderr
    finally:
        monkeypatch.delenv("INFERENCE_ECON_PATH")
        catalog.clear_cache()


def test_catalog_headers_are_read_by_the_spec_files_loader(tmp_path):
    """A spec file's header (its name, aliases, description and title lines) is parsed by the
    loader whole files take: what it reads, and what it refuses, an alias bomb, a repeated key
    and nesting past 64 (which libyaml alone read, and 30,000 deep crashed the process)."""
    import pytest

    from inference_econ.errors import SpecError
    from inference_econ.specs import catalog
    from inference_econ.specs.yamlfile import parse_yaml

    def header(text: str) -> dict:
        path = tmp_path / "h.yaml"
        path.write_text(text + "hbm_gb: 80\n")
        return catalog._header(path)

    plain = "name: My GPU\naliases: [mine, my-gpu]\ndescription: >-\n  two\n  lines\n"
    assert header(plain) == parse_yaml(plain, "x.yaml")
    lol = "name: x\naliases:\n  - &a0 [y, y, y, y, y, y, y, y, y, y]\n" + "".join(
        f"  - &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 6)
    )  # 10^6 values
    with pytest.raises(SpecError, match="alias"):
        header(lol)
    for text in ("name: &n a\nname: *n\n", "name: a\nname: b\n"):
        with pytest.raises(SpecError, match="twice"):
            header(text)
    with pytest.raises(SpecError, match="nested deeper than 64"):
        header("name: x\naliases:\n" + "- " * 100 + "x\n")


# --- huge integers everywhere, FIFOs and devices, formula strings ----------------

HUGE = "1" + "0" * 310  # more digits than a float holds


def _numeric_options():
    """(command path, flag) of every numeric option of every command."""
    import click

    from inference_econ.cli.common import RawValue

    out = []
    for path, command in commands():
        for p in command.params:
            kind = p.type
            if isinstance(p, click.Option) and (
                (isinstance(kind, RawValue) and kind.name in ("NUMBER", "INTEGER", "LIST"))
                or isinstance(kind, (click.types.IntParamType, click.types.FloatParamType))
            ):
                out.append((path, max(p.opts, key=len)))
    return out


NUMERIC_OPTIONS = _numeric_options()


def test_huge_integers_in_every_numeric_option_are_one_line():
    """Every numeric option of every command (about 160): a 311-digit integer is refused as
    the option is read (given first, before anything else runs), one line naming it."""
    assert len(NUMERIC_OPTIONS) > 100
    runner = CliRunner()
    for path, flag in NUMERIC_OPTIONS:
        result = runner.invoke(main, [*path, flag, HUGE])
        described = f"{path} {flag}: exit {result.exit_code}: {result.output[-300:]}"
        assert (
            result.exit_code == 2
            and not isinstance(result.exception, Exception)
            or (isinstance(result.exception, SystemExit))
        ), described
        errors = [x for x in result.stderr.splitlines() if x.startswith("error: ")]
        assert result.exit_code == 2 and len(errors) == 1 and flag in errors[0], described


HUGE_VALUES = st.one_of(
    st.integers(min_value=309, max_value=5000).map(lambda n: "1" + "0" * n),
    st.integers(min_value=309, max_value=400).map(lambda n: "-" + "9" * n),
    st.integers(min_value=309, max_value=400).map(lambda n: "+1_" + "0" * n),
    st.sampled_from(["1e400", "-1e400", "0." + "0" * 400 + "1", "1" + "0" * 5000 + ".5"]),
)


@fuzz(15)
@given(st.data())
def test_huge_numbers_in_options_files_and_overlays(tmp_path_factory, data):
    """Huge numbers of every spelling: in an option of a command that runs, in a field of a
    spec file (an integer YAML cannot hold as a float), and in an overlay CSV."""
    value = data.draw(HUGE_VALUES, label="value")
    where = data.draw(st.sampled_from(["option", "file", "overlay"]), label="where")
    folder = tmp_path_factory.mktemp("h")
    if where == "option":
        name = data.draw(st.sampled_from(sorted(COMMANDS)), label="command")
        base, options = COMMANDS[name]
        option = data.draw(st.sampled_from(options), label="option")
        assert invoke(with_value(base, option, value))[0] == 2
    elif where == "file":
        kind = data.draw(st.sampled_from(["hardware", "model", "scenario", "hf"]), label="kind")
        spec = json.loads(json.dumps(SPECS[kind]))
        path = data.draw(st.sampled_from(paths(spec)), label="field")
        node = spec
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = "@@HUGE@@"
        text = json.dumps(spec) if kind == "hf" else yaml.safe_dump(spec, sort_keys=False)
        text = text.replace("'@@HUGE@@'", value).replace('"@@HUGE@@"', value)
        suffix = ".json" if kind == "hf" else ".yaml"
        assert invoke(file_run(kind, write(folder, f"{kind}{suffix}", text)))[0] in (0, 2)
    else:
        one = {**SCENARIO, "plots": ["frontier"], "curves": SCENARIO["curves"][:1]}
        scenario = write(folder, "s.yaml", yaml.safe_dump(one))
        csv = write(folder, "m.csv", f"label,tokens_per_s,usd_per_mtok\na,{value},1\n")
        assert invoke(["run", scenario, "--measured", csv, "--format", "csv", "-q"])[0] == 2


def _file_inputs(folder):
    """Every file a command reads, as a function of the path given: (name, args)."""
    scenario = write(
        folder, "ok.yaml", yaml.safe_dump({**SCENARIO, "curves": SCENARIO["curves"][:1]})
    )
    p = ["--gpus", "1", "--batch", "1"]
    return {
        "hardware": lambda f: ["point", MODEL, "-H", f, *p],
        "model": lambda f: ["point", f, "-H", "H100-paper", *p],
        "draft": lambda f: ["point", MODEL, "-H", "H100-paper", *p, "--draft", f],
        "engine": lambda f: ["point", MODEL, "-H", "H100-paper", *p, "--engine", f],
        "show": lambda f: ["show", f],
        "scenario": lambda f: ["run", f, "-q"],
        "study": lambda f: ["study", f, "-q"],
        "hf config": lambda f: ["import-hf", f],
        "observations": lambda f: ["infer", "margin", f],
        "measured": lambda f: ["compare-measured", f],
        "calibration": lambda f: ["calibrate", f],
        "overlay": lambda f: ["run", scenario, "--measured", f, "-q"],
        "trace": lambda f: ["simulate", MODEL, "-H", "H100-paper", "--gpus", "1", "--trace", f],
    }


def test_fifos_devices_and_folders_holding_them_for_every_file_input(tmp_path):
    """A FIFO (which would wait for a writer), /dev/zero (which never ends) and a folder whose
    config.json or study.json is one, for every kind of file a command reads: one line and
    exit 2 at once, never a hang (an alarm fails the test instead)."""
    import signal

    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    csv_fifo = tmp_path / "pipe.csv"
    os.mkfifo(csv_fifo)
    hf = tmp_path / "hf"
    hf.mkdir()
    os.mkfifo(hf / "config.json")
    study = tmp_path / "study"
    study.mkdir()
    (study / "study.json").symlink_to("/dev/zero")
    cases = [(name, run(f)) for name, run in _file_inputs(tmp_path).items()
             for f in (str(fifo), str(csv_fifo), "/dev/zero")]  # fmt: skip
    cases += [
        ("hf folder", ["import-hf", str(hf)]),
        ("report", ["report", str(study), "--out", str(tmp_path / "r.html")]),
    ]

    def hang(*_):
        raise TimeoutError("a reader blocked")

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(60)
    try:
        for name, args in cases:
            assert invoke(args)[0] == 2, (name, args)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


FORMULAS = st.tuples(st.sampled_from(["=", "+", "-", "@", "\t", "\r"]), st.text(max_size=12)).map(
    "".join
)


@fuzz(40)
@given(FORMULAS, st.floats(allow_nan=True, allow_infinity=True))
def test_formula_strings_never_start_a_csv_cell(name, number):
    """The one CSV writer (output/render.csv_text): text that a spreadsheet would run as a
    formula starts with a quote; numbers stay numbers; a non-finite number is blank."""
    import csv as csvlib

    from inference_econ.output.render import csv_text

    df = pd.DataFrame({"label": [name, "plain"], name: [number, 2.5], "n": ["-3", "+4e2"]})
    rows = list(csvlib.reader(io.StringIO(csv_text(df), newline="")))
    for row in rows:
        for cell in row:
            risky = cell.startswith(("=", "+", "-", "@", "\t", "\r"))
            assert not risky or re.fullmatch(r"[+-][\d.e+-]+|-", cell), (cell, rows)
    plain = re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|-", name)  # "-3", "-"
    shown = (name if plain else "'" + name).replace("\r\n", "\n").replace("\r", "\n")
    assert rows[0][1] == shown and rows[1][0] == shown
    assert rows[2] == ["plain", "2.5", "+4e2"] and rows[1][2] == "-3"
    assert rows[1][1] == ("" if not math.isfinite(number) else rows[1][1])
