"""Figures: what is drawn is what was computed, with the right axes; reproduce all end to end."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import named_only

import inference_econ as ie
from inference_econ.output.files import MANIFEST
from inference_econ.runs.runner import run_scenario
from inference_econ.studies.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def figure_4(tmp_path_factory, reproduced_all):
    """Figure 6's scenario, after ``reproduce all`` (reproduced_all), whose frontiers the
    figure's are: the frontier figure drawn (its tick labels set) and each figure's files
    named, not rendered (test_figures_are_fit_for_a_report draws every figure and writes it
    at 200 dpi; test_output_safety.py checks a run's written images are whole)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from inference_econ.output import plots

    def drawn(fig, stem, formats=("png", "svg")):
        if stem.name.endswith("-frontier"):
            FigureCanvasAgg(fig).draw()
        return named_only(fig, stem, formats)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plots, "save", drawn)
        return run_scenario("paper/figure-6", tmp_path_factory.mktemp("fig4"))


def test_frontier_figure_content(figure_4):
    fig = figure_4.figures["frontier"]
    ax = fig.axes[0]
    assert ax.get_yscale() == "log"
    assert ax.get_xlabel() == "tokens per second per request"
    assert "cost per million" in ax.get_ylabel()
    assert "Figure 6" in fig.get_suptitle()
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert set(lines) == {"H100 SXM", "A100 SXM", "V100 SXM"}
    for label, front in figure_4.fronts.items():
        x, y = lines[label].get_data()
        assert np.allclose(x, front.points["tokens_per_s"]) and np.allclose(
            y, front.points["usd_per_mtok"]
        )
    labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert labels and all(t.startswith("$") for t in labels)
    colours = {label: line.get_color() for label, line in lines.items()}
    mfu_lines = {
        line.get_label(): line.get_color() for line in figure_4.figures["mfu"].axes[0].get_lines()
    }
    assert mfu_lines == colours  # one colour per curve across the figures


def test_breakdown_figure_has_a_panel_per_curve(figure_4):
    fig = figure_4.figures["breakdown"]
    assert [ax.get_title() for ax in fig.axes] == ["H100 SXM", "A100 SXM", "V100 SXM"]
    assert all(len(ax.collections) == 7 for ax in fig.axes)  # seven parts of the latency


def test_breakdown_shares_are_smooth_and_add_up(figure_4):
    from inference_econ.output.plots import BREAKDOWN, breakdown_shares

    pts = figure_4.fronts["H100 SXM"].points
    shares = breakdown_shares(pts)
    assert np.allclose(sum(shares.values()), 1.0)
    # winner-take-all attribution flips between reads and arithmetic from point to point
    # (dense stripes); the overlapped time split in proportion to each side does not
    stripes = np.abs(np.diff(pts.arithmetic_s / pts.latency_s)).max()
    smooth = np.abs(np.diff(shares["arithmetic_s"])).max()
    assert stripes > 0.4 and smooth < 0.1, (stripes, smooth)
    assert [c for c, _, _ in BREAKDOWN] == list(shares)


def test_figures_are_fit_for_a_report(figure_4, tmp_path):
    """200 dpi; titles and legends inside the figure; legends never beside the axes; every
    panel labelled on both axes; no empty panel; every frontier's preference point marked."""
    import matplotlib.image as mpimg

    from inference_econ.output.plots import save, square_root_figure, tornado_figure
    from inference_econ.studies.scenario import load_scenario

    fig2 = square_root_figure(
        [m for m in load_scenario("paper/figure-2").measured], load_scenario("paper/figure-2").title
    )
    from inference_econ.studies.sensitivity import PARAMETERS

    names = [d for kind, d in PARAMETERS.values() if kind == "factor"]
    table = pd.DataFrame(
        {
            "description": names,
            "fastest_speed_elasticity": np.linspace(-0.5, 0.3, len(names)),
            "cost_at_speed_elasticity": np.linspace(-1.5, 1.0, len(names)),
            "at_speed_tokens_per_s": 76.0,
        }
    )
    tornado = tornado_figure(table, "What moves the frontier: a long title " * 4)
    for name, fig in [*figure_4.figures.items(), ("square-root", fig2), ("tornado", tornado)]:
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        canvas = FigureCanvasAgg(fig)  # the figure may have been closed after saving
        canvas.draw()
        renderer = canvas.get_renderer()
        box = fig.bbox
        labels = [a.xaxis.label for a in fig.axes] + [a.yaxis.label for a in fig.axes]
        texts = [fig._suptitle, *fig.legends, *labels]
        for artist in texts:
            extent = artist.get_window_extent(renderer)
            assert box.x0 - 1 <= extent.x0 and extent.x1 <= box.x1 + 1, f"{name}: clipped"
            assert box.y0 - 1 <= extent.y0 and extent.y1 <= box.y1 + 1, f"{name}: clipped"
        right = max(ax.get_position().x1 for ax in fig.axes)
        assert right > 0.9, f"{name}: something beside the axes squeezes them"
        for ax in fig.axes:
            assert ax.get_xlabel() and ax.get_ylabel(), f"{name}: unlabelled panel"
            assert ax.lines or ax.collections, f"{name}: empty panel"
        written = save(fig, tmp_path / name, ("png",))
        height, width = mpimg.imread(written[0]).shape[:2]
        assert (width, height) == pytest.approx(
            (fig.get_figwidth() * 200, fig.get_figheight() * 200), abs=2
        )
    ax = figure_4.figures["frontier"].axes[0]
    stars = np.vstack([c.get_offsets() for c in ax.collections if len(c.get_offsets())])
    for front in figure_4.fronts.values():
        point = front.preference_point(sampling="paper")
        assert np.isclose(stars, [point.tokens_per_s, point.usd_per_mtok]).all(axis=1).any()


def test_figure_4_fastest_points_are_table_4(figure_4):
    points = figure_4.key_points.set_index(["curve", "point"])
    assert points.loc[("H100 SXM", "fastest"), "tokens_per_s"] == pytest.approx(152.1, abs=0.1)
    assert points.loc[("V100 SXM", "fastest"), "tokens_per_s"] == pytest.approx(105.5, abs=0.1)
    assert {p.name for p in figure_4.files} >= {
        "figure-6-frontier.png",
        "figure-6-frontier.svg",
        "figure-6-points.csv",
    }


def test_figure_6_preference_points_are_table_6(reproduced_all):
    result = run_scenario("paper/figure-8")
    pref = result.key_points[result.key_points.point == "preference"].set_index("curve")
    assert pref.loc["16-bit weights", "tokens_per_s"] == pytest.approx(82.5, abs=0.1)
    assert pref.loc["4-bit weights", "usd_per_mtok"] == pytest.approx(0.233, abs=0.001)


def test_deepseek_is_about_six_times_cheaper_than_mistral_at_100k():
    from inference_econ.runs.runner import curve_frontier

    def long_context(name):  # the one curve compared (the figures are drawn elsewhere)
        curves = {c.label: c for c in load_scenario(name).curves}
        return curve_frontier(curves["Long context (100K)"])

    mistral, deepseek = long_context("paper/figure-9"), long_context("paper/figure-10")
    speeds = np.array([2.0, 5.0, 10.0, 20.0])
    ratio = mistral.cost_at_speed(speeds) / deepseek.cost_at_speed(speeds)
    assert np.all((ratio > 5) & (ratio < 7)), ratio


def test_measured_points_overlay(tmp_path):
    csv = tmp_path / "m.csv"
    pd.DataFrame({"label": ["API"], "tokens_per_s": [100.0], "usd_per_mtok": [0.9]}).to_csv(
        csv, index=False
    )
    result = run_scenario("paper/figure-8", measured_csv=csv)
    ax = result.figures["frontier"].axes[0]
    offsets = [c.get_offsets() for c in ax.collections]
    assert any(np.allclose(o, [[100.0, 0.9]]) for o in offsets)


def _same_values(a, b) -> bool:
    """JSON trees equal, floats to 1e-12 relative (the last bit of a double)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_values(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_values(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return a == pytest.approx(b, rel=1e-12, abs=1e-300)
    return type(a) is type(b) and a == b


def test_reproduce_all_regenerates_the_committed_outputs(reproduced_all):
    # every figure is drawn, and its files named but not rendered: the images are not compared
    # here (test_figures_are_fit_for_a_report checks the 200 dpi files), the tables byte for byte
    tmp_path, result, _ = reproduced_all
    assert result.exit_code == 0, result.output
    verdicts = {
        line.split()[0]: line.split()[-1]
        for line in result.output.splitlines()
        if line.startswith("table-")
    }
    assert verdicts == {f"table-{i}": "no" if i == 5 else "yes" for i in range(1, 7)}
    made = {p.name for p in tmp_path.iterdir()}
    committed = {p.name for p in (ROOT / "figures").iterdir()}
    assert made == committed
    for name in sorted(made - {MANIFEST}):
        if name.endswith((".csv", ".md")):
            assert (tmp_path / name).read_text() == (ROOT / "figures" / name).read_text(), name
        elif name.endswith(".json"):  # the same values; a float's last bit may differ between
            # numpy/scipy builds (a continuous optimum's 7.997973550481787 against ...786)
            made_json = json.loads((tmp_path / name).read_text())
            committed_json = json.loads((ROOT / "figures" / name).read_text())
            assert _same_values(made_json, committed_json), name
    # the record of what the tool wrote names the same files (its stamps, the files' sizes
    # and hashes, differ here: the images were not rendered)
    recorded = json.loads((ROOT / "figures" / MANIFEST).read_text())["files"]
    assert json.loads((tmp_path / MANIFEST).read_text())["files"] == recorded


def test_measured_figure_never_mixes_units_on_an_axis():
    # never tok/s and ms on one axis: each quantity is its own panel, labelled with its unit
    import pandas as pd

    from inference_econ.output.plots import measured_figure, quantity

    rows = pd.DataFrame(
        {
            "status": "ok",
            "kind": "end-to-end",
            "source_group": ["a", "a", "b", "b"],
            "unit": ["output tok/s (system)", "tok/s/user", "ms", "ms"],
            "measured": [5000.0, 40.0, 25.0, 300.0],
            "predicted": [5500.0, 38.0, 24.0, 330.0],
        }
    )
    assert [quantity(u) for u in rows["unit"]] == ["token rate (tok/s)"] * 2 + ["latency (ms)"] * 2
    fig = measured_figure(rows)
    labels = [(ax.get_xlabel(), ax.get_title()) for ax in fig.axes]
    assert labels == [  # the most rows first, then by name
        ("measured, latency (ms)", "latency (ms): 2 rows"),
        ("measured, token rate (tok/s)", "token rate (tok/s): 2 rows"),
    ]
    assert fig.axes[0].get_xlim()[1] < 1000 < fig.axes[1].get_xlim()[1]  # one unit per axis


def test_measured_figure_draws_an_interval_that_lies_above_its_expected_figure():
    # a class whose every residual was measured faster than predicted has an interval above
    # the expected figure (Mixtral 8x7B's throughputs on H100: x1.04 to x1.42); its bar spans
    # the interval's own ends instead of failing as a negative error bar
    import pandas as pd

    from inference_econ.output.plots import measured_figure

    rows = pd.DataFrame(
        {
            "status": "ok",
            "kind": "end-to-end",
            "source_group": ["a", "a"],
            "unit": ["output tok/s (system)"] * 2,
            "measured": [25000.0, 5000.0],
            "predicted": [24000.0, 5100.0],
            "predicted_low90": [24900.0, 4000.0],
            "predicted_high90": [34000.0, 6000.0],
        }
    )
    (ax,) = measured_figure(rows).axes
    (bars,) = [c for c in ax.collections if hasattr(c, "get_segments")]
    spans = sorted((seg[0][1], seg[1][1]) for seg in bars.get_segments())
    assert spans == [(4000.0, 6000.0), (24900.0, 34000.0)]


def test_a_preference_point_s_interval_beside_it_is_drawn_from_its_own_ends():
    # an expected frontier's preference point whose 90 % intervals lie beside it (a class
    # measured biased) gets bars from the intervals' ends, not negative error bars
    import matplotlib.pyplot as plt

    from inference_econ.output.plots import _preference_marks

    class Front:
        empty = False

        def preference_point(self, sampling=None):
            return {
                "tokens_per_s": 50.0, "tokens_per_s_low90": 52.0, "tokens_per_s_high90": 70.0,
                "usd_per_mtok": 2.0, "usd_per_mtok_low90": 1.2, "usd_per_mtok_high90": 1.8,
            }  # fmt: skip

    fig, ax = plt.subplots()
    _preference_marks(ax, {"a": Front()}, {"a": "C0"})
    segments = sorted(
        tuple(map(tuple, seg)) for c in ax.collections if hasattr(c, "get_segments")
        for seg in c.get_segments()
    )  # fmt: skip
    assert segments == [((50.0, 1.2), (50.0, 1.8)), ((52.0, 2.0), (70.0, 2.0))]
    plt.close(fig)


def test_a_tornado_says_where_a_factor_has_no_elasticity():
    # a factor whose x0.5 run never reaches the speed has no cost elasticity (blank in the
    # table, null in JSON): its bar is labelled n/a, not drawn as an empty, zero-looking bar
    import matplotlib.pyplot as plt

    from inference_econ.output.plots import tornado_figure

    table = pd.DataFrame(
        {
            "description": ["HBM bandwidth", "GPU price per hour"],
            "fastest_speed_elasticity": [0.3, 0.0],
            "cost_at_speed_elasticity": [np.nan, 1.0],
            "at_speed_tokens_per_s": 400.0,
        }
    )
    fig = tornado_figure(table, "t")
    speed, cost = ([t.get_text() for t in ax.texts] for ax in fig.axes)
    assert speed == [] and cost == [" n/a (does not reach the speed)"]
    plt.close(fig)


def test_study_heatmaps_have_a_colour_bar_in_the_metrics_units(help_example_runs):
    import pandas as pd

    from inference_econ.output.study_plots import summary_figure
    from inference_econ.studies.study import load_study

    folder, _ = help_example_runs  # examples/study.yaml, run by its --help example
    keys = pd.read_csv(folder / "out" / "study" / "key_points.csv", comment="#")
    fig = summary_figure(keys, load_study(folder / "examples" / "study.yaml"))
    heatmap, bar = fig.axes  # one panel, and its colour bar
    ticks = [t.get_text() for t in bar.get_yticklabels()]
    assert ticks and all(t.startswith("$") for t in ticks), ticks
    assert "$ per million tokens" in bar.get_ylabel()


def test_a_notebook_draws_what_the_commands_draw():
    """``ie.frontier_plot`` is the figure ``frontier --figure`` writes: under an engine
    profile the expected frontier and the ideal bound's, dashed; under the paper's preset the
    frontier alone. ``ie.run_scenario`` keeps each figure of the scenario's plots."""
    fig = ie.frontier_plot("Llama 3 8B", "H100", assumptions="achievable", grid_points=30)
    ax = fig.axes[0]
    lines = {ln.get_label(): ln for ln in ax.get_lines() if not ln.get_label().startswith("_")}
    assert "expected (achievable, engine trtllm)" in lines
    assert lines["ideal bound (refined)"].get_linestyle() == "--"
    assert ax.get_xlabel() == "tokens per second per request"
    paper = ie.frontier_plot("Llama 3 8B", "H100-paper", grid_points=30).axes[0]
    drawn = [ln.get_label() for ln in paper.get_lines() if not ln.get_label().startswith("_")]
    assert drawn[0] == "ideal bound (paper)" and "expected" not in " ".join(drawn)
    run = ie.run_scenario("paper/figure-2")
    assert set(run.figures) == {"square-root-law"} and run.files == []
