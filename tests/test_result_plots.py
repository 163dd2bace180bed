"""The public result types draw what the commands draw: ``Frontier.plot`` is the figure of
``frontier --figure``, ``Scenario.run`` / ``.plot`` and ``RunResult.plot`` the figures of
``run``, each on a notebook's own Axes when given (Agg backend: nothing is shown)."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from click.testing import CliRunner  # noqa: E402

import inference_econ as ie  # noqa: E402
from inference_econ.api.results import Frontier  # noqa: E402
from inference_econ.cli import main  # noqa: E402
from inference_econ.errors import SpecError  # noqa: E402
from inference_econ.runs.runner import RunResult  # noqa: E402

SCENARIO = (
    "title: two GPUs\nplots: [frontier, mfu]\n"
    "defaults: {model: Llama 3 8B, grid_points: 24}\n"
    "curves:\n  - {label: H100, hardware: H100-paper}\n  - {label: A100, hardware: A100-paper}\n"
)


@pytest.fixture(scope="module")
def front():
    return ie.frontier("Llama 3 8B", "H100-paper", grid_points=24)


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    path = tmp_path_factory.mktemp("scenario") / "two.yaml"
    path.write_text(SCENARIO)
    return ie.load_scenario(path)


def _spy(monkeypatch, owner, name):
    """Record each call of ``owner.name`` and let it run."""
    calls, real = [], getattr(owner, name)

    def spy(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, spy)
    return calls


def test_a_frontier_draws_itself_with_its_preference_point(front):
    assert isinstance(front, ie.Frontier)
    ax = front.plot()
    # one line, its preference point (a star) and the star's legend entry
    assert [line.get_label() for line in ax.lines] == [front.label]
    assert len(ax.collections) == 2
    assert ax.get_ylabel() == "cost per million output tokens"
    assert ax.get_yscale() == "log"
    fig, (left, right) = plt.subplots(1, 2)
    assert front.plot(ax=right, name="H100", others={"again": front}) is right
    assert [line.get_label() for line in right.lines] == ["H100", "again"]
    assert right.lines[1].get_linestyle() == "--" and not left.lines
    plt.close("all")


def test_frontier_figure_of_the_command_is_the_frontier_s_plot(monkeypatch, tmp_path):
    calls = _spy(monkeypatch, Frontier, "plot")
    out = tmp_path / "f.png"
    args = ["frontier", "Llama 3 8B", "-H", "H100-paper", "--grid-points", "24"]
    result = CliRunner().invoke(main, [*args, "--figure", str(out), "--format", "csv"])
    assert result.exit_code == 0, result.output
    assert len(calls) == 1 and out.stat().st_size > 0


def test_a_scenario_runs_and_draws_each_of_its_plots(scenario):
    assert isinstance(scenario, ie.Scenario)
    mfu = scenario.plot("mfu")
    assert [line.get_label() for line in mfu.lines] == ["H100", "A100"]
    run = scenario.run()
    # the figures run keeps are RunResult.plot's; drawn again on a given panel
    assert [line.get_label() for line in run.figures["frontier"].axes[0].lines] == [
        "H100",
        "A100",
    ]
    fig, ax = plt.subplots()
    assert run.plot(ax=ax) is ax
    assert len(ax.lines) == 2 and len(ax.collections) == 3  # two stars and the legend's
    with pytest.raises(SpecError, match="not one of the scenario's plots"):
        run.plot("breakdown")
    plt.close("all")


def test_the_figures_a_run_keeps_are_not_held_by_pyplot(scenario):
    """A run without files keeps its figures on the result, not in pyplot's registry, which
    holds every figure until closed: runs in a loop do not pile figures up, and a kept figure
    still saves."""
    import io

    plt.close("all")
    for _ in range(3):
        run = scenario.run()
    assert plt.get_fignums() == []
    png = io.BytesIO()
    run.figures["mfu"].savefig(png, format="png")
    assert png.getvalue().startswith(b"\x89PNG")


def test_the_run_command_draws_with_the_run_result_s_plot(monkeypatch, scenario):
    calls = _spy(monkeypatch, RunResult, "plot")
    result = CliRunner().invoke(main, ["run", scenario.source, "-q"])  # --out saves them
    assert result.exit_code == 0, result.output
    assert [c[1] for c in calls] == ["frontier", "mfu"]
