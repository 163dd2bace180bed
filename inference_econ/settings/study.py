"""The options of a study (its cells' key points and how its cells are run) and of how every
result is printed."""

from __future__ import annotations

from .row import EXECUTION, OPERATING, OUTPUT, Numbers, section, setting

#: Work estimated to take longer than this many seconds (a study's cells, a load search) is
#: refused with its estimate unless ``yes`` is given.
CONFIRM_SECONDS = 600.0


@section(OPERATING)
class KeyPointOptions:
    """The key points a study reports of every cell's frontier (``studies.study``)."""

    at_speeds: Numbers | None = setting(
        None,
        help="Also report the cheapest configuration at least this fast (comma-separated speeds).",
        unit="tokens/s per request",
        minimum=0,
        exclusive_minimum=True,
        maximum=1e9,
        distinct=True,
    )

    preference_k: float = setting(
        3.0,
        help="Exponent k of the preference point, which maximises speed^k / price (paper Eq. 45).",
        minimum=0,
        exclusive_minimum=True,
        maximum=100,
    )


@section(EXECUTION)
class ExecutionOptions:
    """How a study's cells are run: processes or a Dask cluster, the cache, and the confirmation of
    long work (``studies.execution``)."""

    jobs: int | None = setting(
        None,
        help="Local processes computing cells at once (default: the machine's cores).",
        unit="processes",
        minimum=1,
        maximum=1024,
        # a measured file's rows under load share runs and guesses in one process, and a
        # worker pays its start (a second of CPU): one unless asked
        command_defaults=(("compare-measured", 1),),
    )

    dask: str | None = setting(
        None,
        help="Run the cells on a Dask cluster: a scheduler address, or 'local' for a local"
        " cluster.",
    )

    recompute: bool = setting(
        False,
        help="Compute every cell again, ignoring (and replacing) the cache.",
    )

    yes: bool = setting(
        False,
        help="Run work estimated to take longer than ten minutes (a study's cells, a capacity"
        " search) instead of refusing it with the estimate.",
    )


@section(OUTPUT)
class OutputOptions:
    """How results are printed."""

    format: str = setting(
        "table",
        help="How results are printed.",
        choices=("table", "csv", "json", "markdown"),
    )
