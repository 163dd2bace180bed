"""The public result types that draw themselves as the commands draw them: a ``Frontier``
(``frontier --figure``) and a ``Scenario`` (``run``), each the lower layer's type with a
``plot`` method that reaches ``output/`` on first use (the lower layers never import it)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from ..optimise.frontier import Frontier as FrontierPoints
from ..studies.scenario import Scenario as ScenarioFile

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from ..runs.runner import RunResult


@dataclasses.dataclass(eq=False)
class Frontier(FrontierPoints):
    """The Pareto frontier of one setting (``optimise.frontier.Frontier``) that draws itself:
    ``plot`` is the figure ``frontier --figure`` writes."""

    @classmethod
    def of(cls, front: FrontierPoints) -> Frontier:
        """The same frontier (its points not copied) as this type."""
        if isinstance(front, cls):
            return front
        return cls(**{f.name: getattr(front, f.name) for f in dataclasses.fields(front)})

    def plot(
        self,
        ax: Axes | None = None,
        *,
        name: str | None = None,
        others: dict[str, FrontierPoints] | None = None,
        title: str | None = None,
    ) -> Axes:
        """Cost per million output tokens against tokens/s per request, as ``frontier
        --figure`` draws it (``output.plots.frontier_figure``): the frontier with its
        preference point, its 80 % and 90 % bands where it has them, and ``others`` dashed
        beside it (the command: the ideal bound).

        Parameters
        ----------
        ax : matplotlib Axes, optional
            Where to draw (default: a new figure, the command's).
        name : str, optional
            The frontier's legend label (default: its ``label``).
        others : dict, optional
            {label: Frontier} drawn dashed beside it.
        title : str, optional
            The title (default: the label's "cost against speed per request").

        Returns
        -------
        matplotlib.axes.Axes
            The axes drawn on (``ax.figure.savefig("f.png")`` writes the figure).
        """
        from ..output.plots import frontier_figure

        others = dict(others or {})
        fronts = {name or self.label: self, **others}
        styles = dict.fromkeys(others, "dashed")
        title = title or f"{self.label}: cost against speed per request"
        fig = frontier_figure(fronts, title, styles=styles, ax=ax)
        return ax if ax is not None else fig.axes[0]


@dataclasses.dataclass(frozen=True)
class Scenario(ScenarioFile):
    """A scenario file (``studies.scenario.Scenario``) that runs and draws itself: ``run`` is
    the ``run`` command's work, ``plot`` one of its figures."""

    @classmethod
    def of(cls, scenario: ScenarioFile) -> Scenario:
        """The same scenario as this type."""
        if isinstance(scenario, cls):
            return scenario
        fields = dataclasses.fields(scenario)
        return cls(**{f.name: getattr(scenario, f.name) for f in fields})

    def run(self, out_dir=None, **options) -> RunResult:
        """Its frontiers, key points and figures (``runs.runner.run_scenario``, as
        ``api.run_scenario``; files written into ``out_dir`` when given); ``RunResult.plot``
        draws a figure again, on a given Axes."""
        from ..runs.runner import run_scenario

        return run_scenario(self, out_dir, **options)

    def plot(self, name: str | None = None, ax: Axes | None = None, **options) -> Axes:
        """Run it (``options`` as ``run``) and draw one of its ``plots`` (default the first)
        as ``run`` writes it, on ``ax`` when given; returns the axes drawn on."""
        return self.run(**options).plot(name, ax)
