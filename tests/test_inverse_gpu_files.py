"""The infer commands price a GPU given as a file or a spec as given: a derived GPU whose name
is not shipped is tried, and one whose name is a shipped GPU's keeps its own figures (it had
been looked up again by its name: refused, or silently priced as the shipped part)."""

import pytest
from click.testing import CliRunner

import inference_econ as ie
from inference_econ.cli import main

GRID = 60
DOUBLE_HBM = "derive_from: H100-paper\nname: H100 2x HBM\nscale: {hbm_bandwidth_bytes_per_s: 2}\n"
NAMED_AS_SHIPPED = "derive_from: H100-paper\nname: H100-SXM\nprice_usd_per_hour: 9\n"


def offer():
    return ie.observation(158, 0.9, "Llama 3 70B")


def test_margin_tries_a_derived_gpu_file(tmp_path):
    path = tmp_path / "fast.yaml"
    path.write_text(DOUBLE_HBM)
    result = ie.margin(offer(), hardware=[str(path)], weight_bits="8", draft=None,
                       grid_points=GRID)  # fmt: skip
    (row,) = result.rows
    assert row.variant.hardware == "H100 2x HBM"
    base = ie.margin(offer(), weight_bits="8", draft=None, grid_points=GRID).rows[0]
    assert row.fastest_tokens_per_s > 1.2 * base.fastest_tokens_per_s


def test_a_gpu_named_as_a_shipped_one_keeps_its_own_figures(tmp_path):
    path = tmp_path / "dear.yaml"
    path.write_text(NAMED_AS_SHIPPED)
    result = ie.margin(offer(), hardware=["H100-SXM", str(path)], weight_bits="8", draft=None,
                       grid_points=GRID)  # fmt: skip
    shipped, own = result.rows
    assert shipped.gpu_usd_per_hour == pytest.approx(2.1)
    assert own.gpu_usd_per_hour == pytest.approx(9.0)


def test_infer_preference_fits_on_a_derived_gpu_spec():
    fast = ie.derive("H100-paper", name="H100 2x HBM", scale={"hbm_bandwidth_bytes_per_s": 2})
    fit = ie.fit_preference(offer(), hardware=fast, weight_bits=8, draft=None, grid_points=GRID)
    assert fit.points[0].fitted_tokens_per_s == pytest.approx(158, rel=0.01)
    assert any("frontiers: H100 2x HBM, paper preset" in note for note in fit.notes)


def test_infer_size_command_takes_a_gpu_file(tmp_path):
    path = tmp_path / "fast.yaml"
    path.write_text(DOUBLE_HBM)
    args = ["infer", "size", "--speed", "110", "--price", "8", "--weight-bits", "8",
            "--no-speculation", "--grid-points", "60", "-H", str(path), "--format", "csv"]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "H100 2x HBM,paper,8,none," in result.output
