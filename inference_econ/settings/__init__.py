"""The one table of settings: every option a user can give, once.

Each option is a typed field of a small dataclass of the options read together (``problem``:
what is served, speculation, scope, prices, the search method; ``operating``: a given
configuration, sweeps, the inverse analyses; ``load``: traffic, targets, the scheduler, the
deployment; ``study``: key points, execution, output), with its default, unit, bounds, help
text and the layer that reads it (``row.setting``). The table (``SETTINGS``) is derived from
those fields: the Python API checks its keyword arguments against it, scenario files validate
their curve fields with it, and the command line generates its options from it, so a new
option is one new field (docs/architecture.md, "How to add a setting").

This package is plain Python (no numpy), so the command line can build its help without
importing the numeric stack.
"""

from .limits import (
    MAX_GPUS,
    MAX_ITEMS,
    MAX_OBSERVED,
    MAX_SECONDS,
    MAX_TOKENS,
    MIN_OBSERVED,
)
from .problem import LOAD_ASSUMPTIONS
from .row import (
    EXECUTION,
    INFER,
    LOAD,
    METHOD,
    OPERATING,
    OUTPUT,
    PROBLEM,
    REQUIRED,
    Option,
)
from .study import CONFIRM_SECONDS
from .table import (
    BY_NAME,
    SETTINGS,
    check,
    check_each,
    check_needs,
    conflicts,
    default,
    defaults,
    given_names,
    group,
    names,
    option,
    takes,
    unknown_hint,
    unmet_needs,
)

__all__ = [
    "BY_NAME",
    "CONFIRM_SECONDS",
    "EXECUTION",
    "INFER",
    "LOAD",
    "LOAD_ASSUMPTIONS",
    "MAX_GPUS",
    "MAX_ITEMS",
    "MAX_OBSERVED",
    "MAX_SECONDS",
    "MAX_TOKENS",
    "METHOD",
    "MIN_OBSERVED",
    "OPERATING",
    "OUTPUT",
    "PROBLEM",
    "REQUIRED",
    "SETTINGS",
    "Option",
    "check",
    "check_each",
    "check_needs",
    "conflicts",
    "default",
    "defaults",
    "given_names",
    "group",
    "names",
    "option",
    "takes",
    "unknown_hint",
    "unmet_needs",
]
