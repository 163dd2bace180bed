"""``derive_from`` chains that return to a file or run too deep, and other bad derived specs:
each refused with one line naming the file, the field and the fix, exit status 2 (never a
RecursionError's traceback)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import inference_econ as ie
from inference_econ.cli import main
from inference_econ.errors import SpecError
from inference_econ.specs import catalog
from inference_econ.specs.engine import load_engine

POINT = ["point", "Llama-3.1-8B", "-H", "H100", "--gpus", "1", "--batch", "8"]
ACHIEVABLE = [*POINT, "--assumptions", "achievable", "--engine"]
DISAGG = [
    "disagg",
    "Llama-3.1-8B",
    "-H",
    "H100",
    "--gpus",
    "1",
    "--batch",
    "8",
    "--prompt-tokens",
    "1000",
    "--output-tokens",
    "100",
    "--assumptions",
    "achievable",
    "--engine",
]


def refused(*args) -> str:
    """Run the CLI; assert exit 2, nothing on stdout and one stderr line; return that line."""
    result = CliRunner().invoke(main, [str(a) for a in args])
    described = f"{args!r} -> exit {result.exit_code}: {result.output[-600:]}"
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"traceback: {described}") from result.exception
    assert result.exit_code == 2, described
    assert result.stdout == "", described
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), described
    assert "Traceback" not in result.stderr
    return lines[0]


def write(path, text: str):
    path.write_text(text)
    return path


def engine_cycle(tmp_path):
    a, b = tmp_path / "EA.yaml", tmp_path / "EB.yaml"
    write(a, f"name: EA\nderive_from: {b}\nhbm_efficiency: 0.8\n")
    write(b, f"name: EB\nderive_from: {a}\nhbm_efficiency: 0.8\n")
    return a


def test_engine_cycle_of_two_files_is_one_line(tmp_path):
    a = engine_cycle(tmp_path)
    line = refused(*ACHIEVABLE, a)
    assert f"{a}: field 'derive_from': derives from itself: EA.yaml -> EB.yaml -> EA.yaml" in line
    assert "(point derive_from at a spec that does not lead back to this file)" in line


def test_engine_cycle_in_disagg_is_one_line(tmp_path):
    a = engine_cycle(tmp_path)
    line = refused(*DISAGG, a)
    assert f"{a}: field 'derive_from': derives from itself: EA.yaml -> EB.yaml -> EA.yaml" in line


def test_engine_deriving_from_itself_is_one_line(tmp_path):
    s = write(tmp_path / "ES.yaml", f"name: ES\nderive_from: {tmp_path / 'ES.yaml'}\n")
    line = refused(*ACHIEVABLE, s)
    assert f"{s}: field 'derive_from': derives from itself: ES.yaml -> ES.yaml" in line


def test_engine_cycle_reached_through_another_file_names_the_cycle(tmp_path):
    a = engine_cycle(tmp_path)
    x = write(tmp_path / "X.yaml", f"name: X\nderive_from: {a}\n")
    line = refused(*ACHIEVABLE, x)
    assert f"{a}: field 'derive_from': derives from itself: EA.yaml -> EB.yaml -> EA.yaml" in line


def test_engine_cycle_in_python_raises_and_leaves_no_state(tmp_path):
    a = engine_cycle(tmp_path)
    with pytest.raises(SpecError, match=r"derives from itself: EA.yaml -> EB.yaml -> EA.yaml"):
        load_engine(a)
    # the chain of files being read is emptied after the error: a good file still loads
    good = write(tmp_path / "good.yaml", "name: Good\nderive_from: vllm\nhbm_efficiency: 0.7\n")
    profile = load_engine(good)
    assert profile.name == "Good" and profile.hbm_efficiency == 0.7
    assert profile.derived_from == load_engine("vllm").name


@pytest.mark.parametrize(
    "text, cycle",
    [
        ("name: S\nderive_from: {me}\n", "S.yaml -> S.yaml"),  # a GPU (by its derive_from)
        ("name: MA\nderive_from: {me}\nd_model: 4096\n", "S.yaml -> S.yaml"),  # a model
        ("name: E\nderive_from: {me}\nhbm_efficiency: 0.8\n", "S.yaml -> S.yaml"),  # a profile
    ],
)
def test_show_a_file_deriving_from_itself(tmp_path, text, cycle):
    path = tmp_path / "S.yaml"
    write(path, text.format(me=path))
    line = refused("show", path)
    assert f"{path}: field 'derive_from': derives from itself: {cycle}" in line


def test_show_an_engine_cycle_of_two_files(tmp_path):
    a = engine_cycle(tmp_path)
    line = refused("show", a)
    assert f"{a}: field 'derive_from': derives from itself: EA.yaml -> EB.yaml -> EA.yaml" in line


def test_gpu_cycle_still_refused_in_one_line(tmp_path):
    a, b = tmp_path / "GA.yaml", tmp_path / "GB.yaml"
    write(a, f"name: GA\nderive_from: {b}\n")
    write(b, f"name: GB\nderive_from: {a}\n")
    line = refused("point", "Llama-3.1-8B", "-H", a, "--gpus", "1", "--batch", "8")
    assert line.count("field 'derive_from'") == 1  # not once per file of the cycle
    assert f"{a}: field 'derive_from': derives from itself: GA.yaml -> GB.yaml -> GA.yaml" in line


def chain(tmp_path, prefix: str, files: int, last: str, body: str = ""):
    """``files`` files, each deriving from the next, the last from ``last``; the first."""
    paths = [tmp_path / f"{prefix}{i}.yaml" for i in range(files)]
    for i, path in enumerate(paths):
        base = paths[i + 1] if i + 1 < files else last
        write(path, f"name: {prefix}{i}\nderive_from: {base}\n{body}")
    return paths[0]


@pytest.mark.parametrize(
    "prefix, last, body, command",
    [
        ("G", "H100", "", ["show"]),
        ("G", "H100", "", ["point", "Llama-3.1-8B", "--gpus", "1", "--batch", "8", "-H"]),
        ("C", "vllm", "hbm_efficiency: 0.8\n", ["show"]),
        ("C", "vllm", "hbm_efficiency: 0.8\n", ACHIEVABLE),
    ],
)
def test_too_long_a_chain_is_one_short_line(tmp_path, prefix, last, body, command):
    depth = catalog.MAX_DERIVE_DEPTH
    first = chain(tmp_path, prefix, depth + 4, last, body)
    line = refused(*command, first)
    assert len(line) < 300, line
    assert line.count(str(tmp_path)) == 1, line  # the file once, not once per file of the chain
    assert f"{first}: field 'derive_from': chain of more than {depth} files" in line
    assert f"{prefix}0.yaml -> {prefix}1.yaml -> ... ->" in line
    assert f"at most {depth} deep: shorten the chain" in line


def test_a_chain_at_the_limit_loads(tmp_path):
    depth = catalog.MAX_DERIVE_DEPTH
    gpu = ie.load_hardware(chain(tmp_path, "G", depth - 1, "H100"))  # H100's file: the 16th
    assert gpu.name == "G0"
    profile = load_engine(chain(tmp_path, "C", depth - 1, "vllm", "hbm_efficiency: 0.8\n"))
    assert profile.name == "C0" and profile.hbm_efficiency == 0.8


@pytest.mark.parametrize(
    "name, problem",
    [("null", "expected text, got None"), ("[a, b]", "expected text, got ['a', 'b']")],
)
def test_engine_profile_name_must_be_text(tmp_path, name, problem):
    path = write(tmp_path / "EN.yaml", f"name: {name}\nderive_from: vllm\nhbm_efficiency: 0.8\n")
    for command in (["show"], ACHIEVABLE):
        line = refused(*command, path)
        assert f"{path}: field 'name': {problem} (write the profile's name)" in line
        assert "None" not in line.replace("got None", "")


def test_engine_profile_name_must_not_be_blank(tmp_path):
    path = write(tmp_path / "EE.yaml", 'name: "  "\nderive_from: vllm\n')
    line = refused("show", path)
    assert f"{path}: field 'name': is empty (give the engine profile a name)" in line


def test_engine_derive_from_must_be_a_name(tmp_path):
    path = write(tmp_path / "EL.yaml", "name: L\nderive_from: [vllm]\nhbm_efficiency: 0.8\n")
    line = refused(*ACHIEVABLE, path)
    assert f"{path}: field 'derive_from': expected an engine profile's name or file" in line


@pytest.mark.parametrize(
    "field, shown",
    [
        ("hbm_bandwidth_bytes_per_s", "hbm_bandwidth_bytes_per_s is inf"),
        ("flop_per_s", "flop_per_s.8 is inf"),
    ],
)
def test_scale_out_of_bounds_names_the_scale_field(tmp_path, field, shown):
    path = write(tmp_path / "HS.yaml", f"name: HS\nderive_from: H100\nscale: {{{field}: 1e300}}\n")
    line = refused("show", path)
    assert f"{path}: field 'scale.{field}': scaled by 1e+300, {shown} (expected" in line
