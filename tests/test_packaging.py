"""A non-editable install carries every YAML spec: build the wheel and look inside."""

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


#: pyproject.toml's build backend, which the wheel is built with as pip would call it.
BACKEND = "hatchling.build"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """The wheel the project's build backend makes, called in a fresh process from the
    repository root as pip calls it (PEP 517 ``build_wheel``); pip itself adds only its own
    start-up (~0.7 s of CPU) to the same files."""
    pytest.importorskip("hatchling")
    assert f'build-backend = "{BACKEND}"' in (ROOT / "pyproject.toml").read_text()
    out = tmp_path_factory.mktemp("wheel")
    code = f"import sys, {BACKEND} as backend; print(backend.build_wheel(sys.argv[1]))"
    built = subprocess.run(
        [sys.executable, "-c", code, str(out)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    )
    return out / built.stdout.strip().splitlines()[-1]


def test_wheel_contains_every_spec(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder in ("hardware", "models", "scenarios", "engines", "datasets", "priors"):
        for path in (ROOT / folder).rglob("*.yaml"):
            inside = f"inference_econ/_data/{folder}/{path.relative_to(ROOT / folder).as_posix()}"
            assert inside in names, f"{inside} missing from the wheel"
    assert "inference_econ/cli/__init__.py" in names
    assert "inference_econ/_data/scenarios/observations/paper-2025.csv" in names
    for path in (ROOT / "kernels").rglob("*.csv.gz"):  # the measured kernel tables
        assert (
            f"inference_econ/_data/kernels/{path.relative_to(ROOT / 'kernels').as_posix()}" in names
        )


def test_installed_package_finds_its_specs(wheel, tmp_path):
    zipfile.ZipFile(wheel).extractall(tmp_path / "site")
    code = (
        "import inference_econ as ie, pathlib;"
        "g = ie.load_hardware('H100');"
        "m = ie.load_model('DeepSeek-V3 (paper approximation)');"
        "s = ie.load_scenario('paper/table-2');"
        "o = ie.load_observations('paper-2025');"
        "from inference_econ.measured.mlperf import benchmarks;"
        "assert benchmarks()['llama3.1-405b'].input_mean == 9428.64;"
        "from inference_econ.specs.kernel_tables import kernel_table;"
        "assert len(kernel_table('h100_sxm', 'nccl', 'nccl-2.29.2')) == 504;"
        "print(g.source_file); print(len(ie.list_specs('models'))); print(o[0].origin.split(',')[0])"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    env.pop("INFERENCE_ECON_PATH", None)
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    source, count, offers = out.stdout.splitlines()
    assert str(tmp_path / "site") in source and int(count) >= 20
    assert offers.startswith(str(tmp_path / "site")) and offers.endswith("paper-2025.csv")
