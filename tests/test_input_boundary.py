"""The one input boundary (docs/errors.md): every number, file and name a user gives is checked
once, with one exception type (SpecError) naming the file, the field and the fix."""

from __future__ import annotations

import gzip
import math
import os
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import inference_econ as ie
from inference_econ.cli import main
from inference_econ.errors import SpecError, short
from inference_econ.optimise import optimiser
from inference_econ.serving import context_parallel as cp
from inference_econ.serving import prefill
from inference_econ.serving.speculative import SpecDecoding
from inference_econ.specs.architecture import Precision
from inference_econ.specs.inputs import read_text
from inference_econ.specs.schema import check_number
from inference_econ.specs.yamlfile import load_yaml, parse_yaml

MODEL_YAML = """\
name: Tiny
d_model: 1024
vocab_size: 32000
layers: 8
attention: {kind: gqa, query_heads: 16, kv_heads: 4, head_dim: 64}
ffn: {d_ff: 4096}
"""


def cli(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert not isinstance(result.exception, Exception) or isinstance(
        result.exception, SystemExit
    ), result.output
    return result.exit_code, result.stderr


# --- the number checker --------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, message",
    [
        (math.inf, "is inf"),
        ("inf", "is 'inf'"),
        (float("nan"), "is nan"),
        (10**400, r"is 1e\+400 "),
        ("1e999", "is '1e999'"),
        (True, "expected a number"),
        ("abc", "expected a number"),
        ([1], "expected a number"),
        (2.5, "expected a whole number"),
        (0, "is 0"),
        (2**40, "is 1099511627776"),
    ],
)
def test_integer_fields_refuse_infinity_and_junk_without_overflow(value, message):
    with pytest.raises(SpecError, match=message) as e:
        check_number(value, "f.yaml", "layers", minimum=1, maximum=2**20, integer=True)
    assert e.value.source == "f.yaml" and e.value.field == "layers"
    assert "expected a whole number >= 1 and <= 1048576" in str(e.value)


def test_numbers_from_text_numpy_and_yaml_are_read():
    assert check_number("1e15", "f", "x") == 1e15  # YAML 1.1 reads 1e15 as text
    assert check_number(np.float32(2.5), "f", "x") == 2.5
    assert check_number(np.int64(7), "f", "x", integer=True) == 7
    assert check_number(" 1_000 ", "f", "x", integer=True) == 1000
    with pytest.raises(SpecError):
        check_number(np.bool_(True), "f", "x")


def test_messages_truncate_values():
    with pytest.raises(SpecError) as e:
        check_number("x" * 100_000, "f.yaml", "name")
    assert len(str(e.value)) < 250
    assert short([[1] * 1000] * 1000).count("1") < 40


def test_huge_whole_numbers_print_as_a_reader_wrote_them():
    """1e308 in a field of whole numbers (a trace's prompt_tokens, --prompt-tokens, a model's
    layers) became int(1e308), printed as '100000000000000001...4885715430223118336'."""
    with pytest.raises(SpecError) as e:
        check_number("1e308", "t.csv", "prompt_tokens", minimum=1, maximum=1e7, integer=True)
    assert "is 1e+308 (expected a whole number >= 1 and <= 1e+07)" in str(e.value)
    assert short(int(1e308)) == "1e+308" and short(-(10**20)) == "-1e+20"
    assert short(2**40) == "1099511627776" and short(10**15 - 1) == "999999999999999"
    assert short(10**400) == "1e+400"  # beyond a float: in the same form, never an error
    # past the 4,300 digits str() converts (a YAML hexadecimal of 100,000 digits reads so)
    assert short(int("f" * 100_000, 16)) == "9.96014e+120411" and short(-(10**5000)) == "-1e+5000"
    code, err = cli("simulate", "Llama 3 8B", "-H", "H100", "--gpus", "1", "--rate", "1",
                    "--prompt-tokens", "1e308", "--output-tokens", "10")  # fmt: skip
    assert code == 2 and "--prompt-tokens (tokens): is 1e+308 in tokens" in err


def test_tables_print_huge_numbers_in_scientific_notation():
    """A measured value of 1e308 printed 309 digits with thousands separators."""
    import pandas as pd

    from inference_econ.output.render import format_number, render

    df = pd.DataFrame({"value": [1e308, 7007.0], "n_gpus": [10**20, 8]})
    text = render(df)
    assert "1e+308" in text and "1e+20" in text and "7,007" in text and len(text) < 200
    assert format_number(1e308) == "1e+308" and format_number(10**400) == ""
    assert format_number(32_000) == "32000" and format_number(3.3e12) == "3.3e+12"


def test_a_device_fifo_or_folder_named_as_a_spec_is_that_error(tmp_path):
    """run, study, show and -H given /dev/null or a FIFO said "no scenario named '/dev/null'"."""
    fifo = tmp_path / "s.yaml"
    os.mkfifo(fifo)
    for args, problem in [
        (("run", "/dev/null"), "/dev/null: is a device (give the path of a regular YAML file)"),
        (("study", fifo, "--out", tmp_path / "o"), f"{fifo}: is a FIFO (named pipe)"),
        (("show", "/dev/null"), "/dev/null: is a device"),
        (
            ("point", "Llama 3 8B", "-H", f"{tmp_path}/", "--gpus", "1", "--batch", "1"),
            f"{tmp_path}/: is a directory",
        ),  # fmt: skip
    ]:
        code, err = cli(*args)
        assert code == 2 and problem in err and "no scenario" not in err, err


def test_an_empty_yaml_file_says_it_is_empty(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text("# a comment only\n")
    with pytest.raises(SpecError, match="has no fields .the file is empty or only comments."):
        load_yaml(path)  # was: "expected a mapping of fields at the top level, got None"


def test_settings_rows_give_bounds_and_units():
    with pytest.raises(SpecError, match=r"in requests.*>= 1 and <= 1e\+09"):
        ie.point("Llama 3 70B", "H100-paper", gpus=8, batch=0.5)
    with pytest.raises(SpecError, match="batch"):
        ie.point("Llama 3 70B", "H100-paper", gpus=8, batch=np.array([8, 1e-300]))
    with pytest.raises(SpecError, match="context_tokens"):
        ie.point("Llama 3 70B", "H100-paper", gpus=8, batch=8, context_tokens=math.inf)
    # infinity is "no limit" where the setting is a limit
    front = ie.frontier(
        "Llama 3 8B", "H100-paper", max_throughput_tokens_per_s=math.inf, grid_points=20
    )
    assert not front.empty


# --- garbage the API used to accept ------------------------------------------------------


def test_garbage_through_the_api_is_refused():
    with pytest.raises(SpecError, match="weight_bits"):
        Precision(weight_bits=-4)
    with pytest.raises(SpecError, match="weight_bits"):
        ie.load_model("Llama 3 8B").with_precision(weight_bits=-4)
    with pytest.raises(SpecError, match="price_usd_per_hour"):
        ie.derive(ie.load_hardware("H100"), price_usd_per_hour=math.inf)
    with pytest.raises(SpecError, match="acceptance"):
        SpecDecoding(ie.load_model("Llama 3 8B"), float("nan"))
    with pytest.raises(SpecError, match="acceptance.*given without draft or draft_heads"):
        ie.make_setting("Llama 3 70B", "H100-paper", acceptance=0.5)
    setting = ie.make_setting("Llama 3 70B", "H100-paper")
    with pytest.raises(SpecError, match="cached_tokens"):
        prefill.prefill(setting, 8, 1000, cached_tokens=1500)
    with pytest.raises(SpecError, match="chunk_tokens"):
        prefill.prefill(setting, 8, 1000, chunk_tokens=0)
    with pytest.raises(SpecError, match="passes"):
        prefill.prefill(setting, 8, 1e9, chunk_tokens=1)  # a billion passes: refused up front
    # a Setting carries its GPU: a second positional (a method, say) was silently dropped
    with pytest.raises(SpecError, match="hardware.*together with a Setting.*method="):
        ie.frontier(setting, ie.Method("discrete", grid_points=20))


def test_head_dim_zero_and_heads_beyond_d_model(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(MODEL_YAML.replace("head_dim: 64", "head_dim: 0"))
    with pytest.raises(SpecError, match="attention.head_dim"):
        ie.load_model(path)
    path.write_text(MODEL_YAML.replace("d_model: 1024", "d_model: 8").replace(", head_dim: 64", ""))
    with pytest.raises(SpecError, match="give head_dim"):
        ie.load_model(path)


# --- files -------------------------------------------------------------------------------


def test_yaml_loader_refuses_duplicates_tags_bombs_and_depth():
    with pytest.raises(SpecError, match="line 3: found the key 'a' twice"):
        parse_yaml("a: 1\nb: 2\na: 3\n", "f.yaml")
    with pytest.raises(SpecError, match="constructor for the tag"):
        parse_yaml("a: !!python/object/apply:os.system ['true']\n", "f.yaml")
    lines = ['a: &a ["x","x","x","x","x","x","x","x","x"]']
    for i in range(8):
        prev, cur = chr(97 + i), chr(98 + i)
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    start = time.process_time()
    with pytest.raises(SpecError, match="alias bomb"):
        parse_yaml("\n".join(lines) + "\ntitle: *i\n", "f.yaml")
    assert time.process_time() - start < 1.0
    with pytest.raises(SpecError, match="nested deeper than 64"):
        parse_yaml("a: " + "[" * 10000 + "]" * 10000, "f.yaml")
    # what YAML users rely on still works: anchors, merge keys, a byte-order mark
    data = parse_yaml("base: &b {x: 1, y: 2}\nc:\n  <<: *b\n  x: 3\n", "f.yaml")
    assert data["c"] == {"x": 3, "y": 2}


def test_yaml_fast_path_reads_what_the_strict_loader_reads():
    """libyaml parses the texts within ``yamlfile._plain``'s bounds: every YAML
    file of the repository reads the same (types and order: ``repr``) through it as through
    the strict loader, nearly all of them take it, and texts outside the bounds or with an
    error get the strict loader's own answer."""
    import yaml

    from inference_econ.specs.inputs import read_text
    from inference_econ.specs.yamlfile import FAST_LOADER, StrictLoader, _plain

    root = Path(__file__).resolve().parent.parent
    files = [p for p in root.rglob("*.yaml") if ".git" not in p.parts]
    texts = [read_text(p, 4 * 2**20) for p in files]
    plain = [t for t in texts if _plain(t)]
    assert len(files) >= 100 and len(plain) >= 0.9 * len(files)
    for text in plain:
        fast = yaml.load(text, Loader=FAST_LOADER)  # noqa: S506 - a CSafeLoader subclass
        assert repr(fast) == repr(yaml.load(text, Loader=StrictLoader))  # noqa: S506
    # nesting: a deep block (prefix over the bound) is the strict loader's, refused or read
    deep = "a:\n" + "".join(" " * i + f"k{i}:\n" for i in range(1, 70)) + " " * 70 + "v"
    assert not _plain(deep) and not _plain("- " * 40 + "x")
    with pytest.raises(SpecError, match="line 64: nested deeper than 64 levels"):
        parse_yaml(deep, "f.yaml")
    nested: object = "x"
    for _ in range(40):
        nested = [nested]
    assert parse_yaml("- " * 40 + "x", "f.yaml") == nested
    # tables of rows, a flow list a line, take it whatever their length (the kernel tables)...
    assert all(_plain(read_text(p, 4 * 2**20)) for p in (root / "kernels").glob("*.yaml"))
    rows = "a:\n" + "  - [1, {b: 2}]\n" * 200
    assert _plain(rows) and parse_yaml(rows, "f.yaml") == {"a": [[1, {"b": 2}]] * 200}
    # ... not where a line's brackets could hide an opening: quoted, commented, carried to a
    # later line, closed before opened, or too deep; the strict loader reads those
    for tail, value in (
        ("b: ']'\n", "]"),
        ("b: [1] # ]\n", [1]),
        ("b: [1,\n  2]\n", [1, 2]),
        ("b: x]\n", "x]"),
        ("b: " + "[" * 13 + "]" * 13 + "\n", [[[[[[[[[[[[[]]]]]]]]]]]]]),
        ("b: [!!str 1]\n", ["1"]),
    ):
        assert not _plain(rows + tail)
        assert parse_yaml(rows + tail, "f.yaml")["b"] == value
    # a verbatim tag's brackets look balanced while the flow they sit in stays open: refused
    # by the strict loader, not read 70 deep by libyaml (nor crash it, many thousands deep)
    for n in (70, 1000):
        merged = "{<<: !<]>\n" * n + "{a: 1}\n" + ", <<: !<[> {}}\n" * n
        tagged = "[!<]>\n" * n + "a\n" + "!<[>]\n" * n
        for text in (merged, tagged):
            assert not _plain(text)
            with pytest.raises(SpecError, match="nested deeper than 64 levels"):
                parse_yaml(text, "f.yaml")
    assert parse_yaml("{<<: !<]>\n{a: 1}\n, <<: !<[> {}}\n", "f.yaml") == {"a": 1}
    # where the parsers' rules differ, the strict loader answers: a byte-order mark at a later
    # line's start (libyaml skips it, nesting past what the line's prefix says), a ``?`` in a
    # flow scalar (libyaml reads it), a lone surrogate (libyaml's encoder raises)
    marked = "# c\n\ufeff" + "- " * 70 + "x\n"  # PyYAML: one plain scalar
    assert not _plain(marked) and parse_yaml(marked, "f.yaml") == marked[4:-1]
    assert not _plain("[a?b]\n")
    for text in ("[a?b]\n", "a: \ud800\n"):
        with pytest.raises(SpecError, match="not valid YAML at line 1"):
            parse_yaml(text, "f.yaml")
    # an error libyaml finds is reported by the strict loader, with its message and line
    assert _plain("a: 1\nb: [1, 2\n")
    with pytest.raises(SpecError, match="line 3: expected ',' or ']', but got '<stream end>'"):
        parse_yaml("a: 1\nb: [1, 2\n", "f.yaml")
    # a .json file is read by the same parser, and its error says which format it was written in
    with pytest.raises(SpecError, match=r"f\.JSON: not valid JSON \(read as YAML\) at line 2"):
        parse_yaml('{"a": [1,\n', "f.JSON")


def test_values_no_type_holds_and_half_characters_are_refused_by_field():
    """A scalar its YAML type cannot hold (a 13th month, an integer past Python's 4,300
    digits, ``!!float abc``) and a \\u escape of half a character, in YAML or JSON (each would
    fail the first table or write that encodes it), are one error naming the file; a whole
    character's escape reads."""
    from inference_econ.specs.inputs import parse_json

    for text, why in (
        ("price_date: 2025-13-45\n", r"cannot hold \(month must be in 1\.\.12\)"),
        ("a: " + "9" * 5000 + "\n", r"cannot hold \(Exceeds the limit \(4300 digits\)"),
        ("a: !!float abc\n", "cannot hold"),
        ('name: "\\ud800"\n', "field 'name': holds a .u escape of half a character"),
        ('a: {b: ["x\\udfffy"]}\n', r"field 'a\.b\[0\]': holds a .u escape"),
    ):
        with pytest.raises(SpecError, match=why):
            parse_yaml(text, "f.yaml")
    assert parse_yaml('a: "\\u00e9"\n', "f.yaml") == {"a": "\u00e9"}
    with pytest.raises(SpecError, match=r"f.json: field 'runs\[1\]\.model': holds a .u escape"):
        parse_json('{"runs": [{}, {"model": "x\\ud800"}]}', "f.json")
    with pytest.raises(SpecError, match="f.json: holds a .u escape"):
        parse_json('{"\\udc00": 1}', "f.json")
    assert parse_json('{"e": "\\ud83d\\ude00"}', "f.json") == {"e": "\U0001f600"}


def test_files_are_utf8_regular_and_small(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + MODEL_YAML.encode())
    assert load_yaml(path)["name"] == "Tiny"
    path.write_bytes(MODEL_YAML.encode() + b"description: caf\xe9\n")
    with pytest.raises(SpecError, match=r"not UTF-8 text \(byte 0xe9 at line 7\)"):
        load_yaml(path)
    with pytest.raises(SpecError, match="is a directory"):
        load_yaml(tmp_path)
    with pytest.raises(SpecError, match="is a device"):
        load_yaml("/dev/zero")


def test_derive_from_cycles_are_named(tmp_path):
    (tmp_path / "a.yaml").write_text(
        "name: A\nderive_from: b.yaml\n".replace("b.yaml", str(tmp_path / "b.yaml"))
    )
    (tmp_path / "b.yaml").write_text(f"name: B\nderive_from: {tmp_path / 'a.yaml'}\n")
    with pytest.raises(SpecError, match=r"derives from itself: a.yaml -> b.yaml -> a.yaml"):
        ie.load_hardware(tmp_path / "a.yaml")


def test_scenario_errors_keep_the_model_file_and_field(tmp_path):
    model = tmp_path / "m.yaml"
    model.write_text(MODEL_YAML.replace("layers: 8", "layers: .inf"))
    scenario = tmp_path / "s.yaml"
    scenario.write_text(f"title: t\ncurves:\n  - {{label: A, model: {model}, hardware: H100}}\n")
    code, err = cli("run", scenario)
    assert code == 2 and err.count("\n") == 1
    assert "s.yaml, curve 'A'" in err and "m.yaml: field 'layers': is inf" in err


@pytest.mark.parametrize(
    "curve, message",
    [
        ("hardware_overrides: [1]", "expected a mapping"),
        ("model_overrides: {layer_groups.9.layers: 1}", "layer_groups"),
        ("model_overrides: {attention.kv_heads.x: 1}", "is a value, not a group"),
        ("color: notacolor", "unknown colour 'notacolor'"),
        ("grid_points: .inf", "is inf"),
        ("hardware_scale: {hbm_bandwidth_bytes_per_s: 1e300}", "is inf"),
        ("hardware_overrides: {name: [a, b]}", "hardware_overrides.name': expected text"),
        ("model_overrides: {name: [a, b]}", "model_overrides.name': expected text"),
    ],
)
def test_malformed_scenario_values(tmp_path, curve, message):
    path = tmp_path / "s.yaml"
    path.write_text(f"title: t\ncurves:\n  - {{model: Llama 3 8B, hardware: H100, {curve}}}\n")
    code, err = cli("run", path)
    assert code == 2 and message in err, err


def test_scenario_options_and_measured_points_are_checked(tmp_path):
    path = tmp_path / "s.yaml"
    base = "title: t\ncurves: [{model: Llama 3 8B, hardware: H100, grid_points: 16}]\n"
    path.write_text(base + "options: {max_speed: abc}\n")
    assert "options.max_speed" in cli("run", path)[1]
    path.write_text(base + "measured: [{tokens_per_s: 5}]\n")
    assert "needs tokens_per_s and usd_per_mtok" in cli("run", path)[1]


# --- exit codes ----------------------------------------------------------------------------


def test_show_reports_the_gpu_that_is_unknown():
    code, err = cli("show", "Llama 3 70B", "-H", "H1000")
    assert code == 2 and "H1000" in err and "no model or GPU named 'Llama 3 70B'" not in err


def test_run_with_no_feasible_curve_exits_1(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(
        "title: t\ncurves:\n  - {model: Llama 3.1 405B (paper), hardware: V100-paper,"
        " max_throughput_tokens_per_s: 1e-3, grid_points: 16}\n"
    )
    code, err = cli("run", path, "--out", tmp_path / "out")
    assert code == 1 and "no curve has a feasible configuration" in err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_bad_input_is_never_reported_as_does_not_fit():
    for flag in ("--context", "--batch"):
        code, err = cli(
            "point", "Llama 3 70B", "-H", "H100-paper", "--gpus", "8", "--batch", "8", flag, "inf"
        )
        assert code == 2 and "does not fit" not in err


# --- bounded work --------------------------------------------------------------------------


def test_a_grid_too_large_for_the_machine_is_refused_with_its_estimate(monkeypatch):
    monkeypatch.setattr(optimiser, "available_memory_bytes", lambda: 1e9)  # a 1 GB machine
    with pytest.raises(SpecError, match=r"needs about 0\.6 GB .* 1\.0 GB available") as e:
        ie.frontier("Llama 3 8B", "H100-paper", grid_points=1200)
    assert e.value.field == "grid_points"
    fits = int(str(e.value).split("use grid_points <= ")[1].split(",")[0])
    assert 500 < fits < 1200 and optimiser.grid_cost(fits**2, 1)[0] <= 0.5e9
    need, seconds = optimiser.grid_cost(2000 * 2000, 65)
    assert need > 5e9 and seconds > 600  # 64 draft tokens on the largest grid: refused anywhere


def test_chunked_prefill_is_evaluated_at_once():
    setting = ie.make_setting("Llama 3 70B", "H100-paper")
    start = time.process_time()
    row = prefill.prefill(setting, 8, 100_000, chunk_tokens=10)  # 10,000 passes
    assert row.chunks == 10_000 and time.process_time() - start < 2.0
    one = prefill.prefill(setting, 8, 32000, chunk_tokens=4000)
    passes = [prefill.prefill(setting, 8, 4000 * (i + 1), cached_tokens=4000 * i) for i in range(8)]
    assert one.latency_s == pytest.approx(sum(p.latency_s for p in passes), rel=1e-9)


def test_balanced_context_parallel_chunks_are_fast_and_balanced():
    setting = ie.make_setting("Llama 3 8B", "A100-paper")
    costs = cp.chain_costs(setting, link_bytes_per_s=1e9)
    start = time.process_time()
    df = cp.compare(setting, [64000], 1024, link_bytes_per_s=1e9)
    assert time.process_time() - start < 2.0 and df.equal_chunks_spread[0] > 100
    # on a 1 GB/s link the balanced chain finishes together at 8.404 s (the prefix transfer
    # costs nearly what it saves), 0.2 % behind 1024 equal chunks: those are kept
    bounds = cp.balanced_chunks(costs, 64000, 1024)
    times = cp.device_times(costs, bounds)
    assert times.max() / times[times > 0].min() < 1.01
    assert bounds[-1] == 64000 and all(float(b).is_integer() for b in bounds)
    assert df.kv_runahead_balanced_s[0] == df.kv_runahead_equal_s[0] < times.max()
    assert df.single_device_s[0] == pytest.approx(8.4202, rel=1e-4)


def test_an_overlay_of_10000_points_is_read_at_once_and_drawn_as_one_scatter_per_label(tmp_path):
    import pandas as pd

    from inference_econ.measured.overlays import load_overlay_points
    from inference_econ.output import plots

    rng = np.random.default_rng(0)
    csv = tmp_path / "m.csv"
    n = 10_000
    pd.DataFrame(
        {
            "label": rng.choice(["a", "b", "c"], n),
            "tokens_per_s": rng.uniform(5, 200, n),
            "usd_per_mtok": rng.uniform(0.1, 20, n),
        }
    ).to_csv(csv, index=False)
    start = time.process_time()
    points = load_overlay_points(csv)
    assert len(points) == n and time.process_time() - start < 1.0
    fig = plots.frontier_figure({}, "overlay", measured=points)
    assert len(fig.axes[0].collections) == 3
    plots.plt.close(fig)
    csv.write_text("tokens_per_s,usd_per_mtok\n5,1\n7,abc\n")  # the bad row: left out
    with pytest.warns(ie.InferenceEconWarning, match="line 3: field 'usd_per_mtok'"):
        (point,) = load_overlay_points(csv)
    assert point["tokens_per_s"] == 5 and point["usd_per_mtok"] == 1
    csv.write_text("tokens_per_s,usd_per_mtok\n5,0\n7,abc\n")  # no readable row: an error
    with pytest.raises(SpecError, match="line 2: field 'usd_per_mtok'.*none of its 2 point"):
        load_overlay_points(csv)
    csv.write_text("tokens_per_s,usd_per_mtok\n")
    with pytest.raises(SpecError, match="no rows"):
        load_overlay_points(csv)


def test_api_helpers_raise_spec_error_for_bad_arguments(llama70_8bit_frontier):
    front = llama70_8bit_frontier
    for call in (
        lambda: ie.list_specs("gpu-s"),
        lambda: front.preference_point(k=math.nan),
        lambda: front.cheapest_at_speed("fast"),
        lambda: front.cost_at_speed(["x"]),
        lambda: front.cost_at_speed(-1.0),
    ):
        with pytest.raises(SpecError):
            call()
    assert np.isinf(front.cost_at_speed(1e9))  # no point that fast: inf, documented


def test_an_overlay_per_gpu_is_priced_row_by_row_when_the_curves_gpus_differ(tmp_path):
    from inference_econ.runs.runner import _overlay
    from inference_econ.studies.scenario import load_scenario

    spec = tmp_path / "two.yaml"
    spec.write_text(
        "title: two GPUs\nkind: figure\nplots: [frontier]\n"
        "defaults: {model: Llama 3 8B}\n"
        "curves:\n  - {label: H100, hardware: H100-paper}\n  - {label: A100, hardware: A100-paper}\n"
    )
    scenario = load_scenario(str(spec))
    csv = tmp_path / "m.csv"
    csv.write_text("label,tokens_per_s,tokens_per_s_per_gpu\nmine,60,1000\n")
    with pytest.raises(SpecError, match="add a hardware column"):
        _overlay(scenario, csv)
    csv.write_text(
        "label,tokens_per_s,tokens_per_s_per_gpu,hardware\nmine,60,1000,H100-paper\n"
        "theirs,60,1000,A100-paper\n"
    )
    (mine, theirs), notes = _overlay(scenario, csv)
    assert notes == ()
    # 1000 tok/s per GPU: $2.10/h / 3.6 Mtok/h = $0.5833/Mtok; A100 at $1.506667/h: $0.4185
    assert mine["usd_per_mtok"] == pytest.approx(2.1 / 3.6, rel=1e-6)
    assert theirs["usd_per_mtok"] == pytest.approx(1.506667 / 3.6, rel=1e-6)
    assert mine["marker"] != theirs["marker"]  # two labels, two shapes
    csv.write_text("tokens_per_s,tokens_per_s_per_gpu,hardware\n60,1000,H1OO\n")
    with pytest.raises(SpecError, match="line 2: field 'hardware'.*none of its 1 point row"):
        _overlay(scenario, csv)


def test_an_unreadable_overlay_row_is_left_out_and_the_run_says_so(tmp_path):
    """One bad row of a --measured overlay (text, a ragged row) stopped the run (exit 2): now
    it is one warning line (file, line, field, fix), the other points are drawn and the run's
    notes state the rows left out; a file of no readable row is still exit 2, one line. (The
    scenario's frontier is drawn beside the points on a 20-point grid: the overlay is read
    and drawn alike on any.)"""
    spec = tmp_path / "one.yaml"
    spec.write_text(
        "title: one GPU\nkind: figure\nplots: [frontier]\n"
        "defaults: {model: Llama 3 8B, grid_points: 20}\n"
        "curves:\n  - {label: H100, hardware: H100-paper}\n"
    )
    csv = tmp_path / "m.csv"
    csv.write_text(
        "label,tokens_per_s,usd_per_mtok\nme,60,2.5\nme,fast,1\nme,30,1.5,9\nyou,20,0.8\n"
    )
    args = ["run", str(spec), "--measured", str(csv), "--format", "json"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    warned = [x for x in result.stderr.splitlines() if x.endswith("the row is left out")]
    assert warned == [
        f"warning: {csv}: line 3: field 'tokens_per_s': expected a number in tokens/s, got "
        "'fast' (expected a number > 0 and <= 1e+12); the row is left out",
        f"warning: {csv}: line 4: has 4 cells for the header's 3 columns (quote cells that hold "
        "commas); the row is left out",
    ]
    import json

    notes = json.loads(result.stdout)["notes"]
    assert f"2 of 4 point rows of {csv} left out (unreadable): line 3: tokens_per_s: " in (
        " ".join(notes)
    )
    from inference_econ.measured.overlays import load_overlay_points

    with pytest.warns(ie.InferenceEconWarning):
        points = load_overlay_points(csv)
    assert [(p["label"], p["tokens_per_s"], p["usd_per_mtok"]) for p in points] == [
        ("me", 60, 2.5),
        ("you", 20, 0.8),
    ]
    csv.write_text("label,tokens_per_s,usd_per_mtok\nme,0,2.5\nme,fast,1\n")
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1
    assert f"{csv}: line 2: field 'tokens_per_s'" in result.stderr
    assert "none of its 2 point rows can be read" in result.stderr


# --- every reader behind the boundary, huge numbers, wrong shapes ------------------


def test_huge_whole_numbers_are_infinite_never_an_overflow():
    from fractions import Fraction

    huge = "1" + "0" * 310
    for value in (huge, "-" + huge, "+" + "9" * 5000, 10**400, Fraction(10**400, 3)):
        with pytest.raises(SpecError, match="expected a whole number >= 1 and <= 1048576"):
            check_number(value, "f.yaml", "gpus", minimum=1, maximum=2**20, integer=True)
    assert check_number("1" + "0" * 20, "f", "x") == 10**20  # whole numbers a float holds


def test_readers_refuse_fifos_devices_and_large_files_before_reading(tmp_path):
    from inference_econ.specs.inputs import read_bytes, read_json

    fifo = tmp_path / "p"
    os.mkfifo(fifo)
    for path, kind in ((fifo, "FIFO"), ("/dev/zero", "device"), (tmp_path, "directory")):
        with pytest.raises(SpecError, match=kind):
            read_bytes(path)
    big = tmp_path / "big.csv"
    with open(big, "wb") as fh:
        fh.truncate(230 * 2**20)  # sparse: 230 MB that take no disk
    start = time.process_time()
    with pytest.raises(SpecError, match="is 230 MB, larger than the 64 MB read"):
        read_bytes(big)
    assert time.process_time() - start < 0.1
    bad = tmp_path / "c.json"
    for text, message in (("{", "line 1"), ("[" * 100_000 + "]" * 100_000, "nested")):
        bad.write_text(text)
        with pytest.raises(SpecError, match=f"not valid JSON.*{message}"):
            read_json(bad)


def test_trace_observation_and_hardware_numbers_are_bounded(tmp_path):
    from inference_econ.load.arrivals import load_trace

    trace = tmp_path / "t.csv"
    trace.write_text("arrival_time_s,prompt_tokens,output_tokens\n0,10,10\n1e308,10,10\n")
    with pytest.raises(SpecError, match=r"line 3: field 'arrival_time_s'.*<= 1e\+09"):
        load_trace(trace)
    gpu = tmp_path / "g.yaml"
    for field in ("sustained_flop_fraction: 1.0e-300", "gemm_efficiency: {16: 1.0e-300}"):
        gpu.write_text(f"name: G\nderive_from: H100-paper\n{field}\n")
        with pytest.raises(SpecError, match=r">= 0\.05"):
            ie.load_hardware(gpu)
    with pytest.raises(SpecError, match="tokens_per_s"):
        ie.observation(1e308, 1.0)
    from inference_econ.settings import option

    for name, value in (("arrival_rate_per_s", 1e-15), ("log_speed_sd", 1e308), ("seed", 2**64)):
        with pytest.raises(SpecError, match=name):
            option(name).check(value)


def test_api_arguments_of_the_wrong_type_are_one_clear_error():
    h100 = ie.load_hardware("H100")
    hf = {"model_type": "llama", "hidden_size": 1024, "intermediate_size": 4096,
          "num_hidden_layers": 8, "num_attention_heads": 16, "num_key_value_heads": 4,
          "vocab_size": 32000}  # fmt: skip
    assert ie.derive("H100", name="x").name == "x"  # a GPU's name, as everywhere
    assert ie.import_hf_config(hf, name="From a dict")[0].layers == 8  # a parsed config
    for call, field in (
        (lambda: ie.derive(h100, scale=[2]), "scale"),
        (lambda: ie.derive(h100, name=["a"]), "name"),
        (lambda: ie.derive(5), "base"),
        (lambda: ie.import_hf_config(5), "path"),
        (lambda: ie.margin([1, 2]), "observed"),
        (lambda: ie.implied_size(3.0), "observed"),
        (lambda: ie.fit_preference([1]), "observations"),
        (lambda: ie.point("Llama 3 8B", "H100-paper", gpus=[8, 16], batch=8), "gpus"),
        (lambda: ie.study({"title": "t", "axes": {"model": ["Llama 3 8B"]}}, recompute=True),
         "recompute"),
    ):  # fmt: skip
        with pytest.raises(SpecError) as e:
            call()
        assert e.value.field == field, e.value


def test_a_damaged_cache_counts_as_missing_and_a_wrong_study_json_is_one_error(tmp_path):
    import json

    from inference_econ.output.study_folder import read_manifest
    from inference_econ.runs.study_run import CellCache
    from inference_econ.studies.study import compute_cell

    cache = CellCache(tmp_path / "cache")
    setting = ie.make_setting("Llama 3 8B", "H100-paper")
    good = compute_cell(setting, ie.Method(kind="grid", grid_points=8))
    cache.put("ab12", good)
    assert cache.get("ab12")["data"] == good["data"]
    negative = json.loads(json.dumps(good))
    negative["data"][0][0] = -5.0  # a hand-edited speed
    for bad in ([], {"format": 2}, {**good, "columns": "x"}, {**good, "data": [[1]]}, negative,
                {**good, "columns": good["columns"][1:] + ["x"]}):  # fmt: skip
        cache.put("ab12", bad)
        assert cache.get("ab12") is None, bad
    path = tmp_path / "study.json"
    for bad, field in (([], ""), ({"title": "t"}, "source"),
                       ({"title": "t", "source": "s", "package_version": "1", "axes": []}, "axes")):  # fmt: skip
        path.write_text(json.dumps(bad))
        with pytest.raises(SpecError) as e:
            read_manifest(path)
        assert e.value.field == field and "study.json" in e.value.source


def test_offers_faster_than_the_frontier_are_blank_not_inf():
    """`paper-2025 --no-speculation`: Fireworks' 158 tok/s on Llama 3 70B is beyond the
    frontier's fastest point, so no k explains it: blank, with the note saying why."""
    result = CliRunner().invoke(
        main,
        [
            "infer",
            "preference",
            "paper-2025",
            "--no-speculation",
            "--grid-points",
            "16",
            "--format",
            "csv",
        ],  # fmt: skip
    )
    assert result.exit_code == 0 and "inf" not in result.stdout
    row = next(x for x in result.stdout.splitlines() if x.startswith("Fireworks,Llama 3 70B"))
    assert row.split(",")[4] == "" and row.split(",")[8] == ""  # implied_k, usd_per_mtok


@pytest.mark.parametrize(
    "args, message",
    [
        (["infer", "margin", "paper-2025", "--no-speculation", "--draft", "Llama 3 8B"],
         "--no-speculation: cannot be given with --draft"),
        (["infer", "size", "paper-2025", "--acceptance", "0.6", "--no-speculation"],
         "--no-speculation: cannot be given with --acceptance"),
        (["show", "H100", "--weight-bits", "8"], "'H100' is a GPU: it would be ignored"),
        (["study", "x.yaml", "--recompute"], "--recompute: is given, but nothing is cached"),
        (["run", "paper/table-1", "--observations", "paper-2025"], "no figure is drawn"),
        (["infer", "margin", "--speed", "50", "--price", "1e308"], "--price: is 1e+308"),
        (["infer", "feasibility", "--speed", "1e308"], "--speed: is 1e+308"),
        (["simulate", "Llama 3 8B", "-H", "H100", "--gpus", "1", "--rate", "1e-15"], "--rate"),
    ],
)  # fmt: skip
def test_ignored_and_out_of_range_options_are_refused(args, message):
    code, err = cli(*args)
    assert code == 2 and message in err and err.count("\n") == 1, err


def test_recompute_without_a_cache_names_what_the_caller_types():
    """The command line is told of its options, the API of its arguments: cache_dir has no
    option, and out is --out."""
    code, err = cli("study", "examples/study.yaml", "--recompute")
    assert code == 2 and err == (
        "error: --recompute: is given, but nothing is cached without --out: it would be ignored "
        "(give --out too, or drop --recompute)\n"
    )
    with pytest.raises(SpecError) as e:
        ie.study("examples/study.yaml", recompute=True)
    assert e.value.fix == "give out or cache_dir too, or drop recompute=True"


def test_work_past_ten_minutes_needs_yes(monkeypatch):
    from inference_econ import settings
    from inference_econ.load.arrivals import make_traffic
    from inference_econ.optimise import load_search
    from inference_econ.studies import execution
    from inference_econ.studies.study import expand, study_from_dict

    cells = expand(study_from_dict({"title": "t", "axes": {"model": ["Llama 3 8B"]},
                                    "defaults": {"hardware": "H100-paper", "grid_points": 100}}))  # fmt: skip
    # one cell of a 100 x 100 grid: 0.19 s + 1e4 points x 1e-5 s = 0.29 s of CPU
    assert execution.cell_seconds(cells[0]) == pytest.approx(0.29)
    monkeypatch.setattr(settings, "CONFIRM_SECONDS", 0.1)
    with pytest.raises(SpecError, match=r"t: 1 cell to compute, about 0.29 s with 1 job") as e:
        execution.check_work(cells, 1, "t")
    assert "--yes" in e.value.fix
    assert execution.check_work(cells, 1, "t", yes=True).startswith("about 0.29 s")
    traffic = make_traffic(1.0, 1000, 100, requests=10_000_000)
    # the memory limit is a share of what the machine has free: fixed here (16 GB free), so the
    # check is of time alone whatever else runs on the machine
    monkeypatch.setattr(load_search, "available_memory_bytes", lambda: 16e9)
    with pytest.raises(SpecError, match="about 24,300 s") as e:
        load_search.check_budget(traffic, 81, "the capacity search")
    assert "give --yes" in e.value.fix
    load_search.check_budget(traffic, 81, "the capacity search", yes=True)  # runs when asked


def test_a_gzip_compressed_input_is_read_within_the_size_bound(tmp_path):
    # the same measured rows, plain and gzip-compressed (two members, as `cat a.gz b.gz` makes)
    text = "model,hardware\nLlama 3 8B,H100\n"
    path = tmp_path / "rows.csv.gz"
    path.write_bytes(gzip.compress(text[:15].encode()) + gzip.compress(text[15:].encode()))
    assert read_text(path) == text
    # a decompression bomb: 81 kB that expands past the bound is refused, not expanded
    path.write_bytes(gzip.compress(b"a," * (40 * 2**20)))
    with pytest.raises(SpecError, match="rows.csv.gz: expands to more than the 64 MB read"):
        read_text(path)
    path.write_bytes(gzip.compress(b"a," * 1000))  # 2,000 bytes in about 30
    assert len(read_text(path, limit=2000)) == 2000
    with pytest.raises(SpecError, match="expands to more than the 0.0 MB read"):
        read_text(path, limit=1999)
    whole = gzip.compress(text.encode())
    path.write_bytes(whole[:20])
    with pytest.raises(SpecError, match="is gzip-compressed but cut short"):
        read_text(path)
    path.write_bytes(whole + b"junk")
    with pytest.raises(SpecError, match="has bytes after its gzip data"):
        read_text(path)
    path.write_bytes(whole[:10] + b"\xff" * 12 + whole[22:])
    with pytest.raises(SpecError, match="is gzip-compressed but damaged"):
        read_text(path)
    # named .gz but plain text: said so, not read as a CSV whose header is its first words
    path.write_text("not gz\n")
    with pytest.raises(SpecError, match=r"rows.csv.gz: is named .gz but is not gzip-compressed"):
        read_text(path)
