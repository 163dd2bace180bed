"""inference-econ: the roofline model of LLM inference economics.

Given a model architecture and a GPU, find the cost per token and the serial speed (tokens/s
per request) of every parallel layout and batch size, and the Pareto frontier between them.
The model is the one of "Inference economics of language models" (MODEL.md Part A), with
named refinements beyond it (Part B).

Specs (``load_model``, ``load_hardware``) -> cost model (``workload``, ``collectives``,
``latency``) -> optimiser (``frontier``) -> reports (``tables``, ``report``, ``cli``).
"""

from .api import frontier, hardware_summary, list_specs, model_summary, point, points
from .architecture import Architecture, Precision, load_model
from .assumptions import PAPER, Assumptions, preset
from .errors import InfeasibleError, InferenceEconError, SpecError
from .frontier import Frontier
from .hardware import GPU, derive, load_hardware

# beyond decoding: prefill and requests, what-if studies, real data (modules keep their names)
from .hfimport import import_config as import_hf_config  # noqa: E402
from .measured import calibrate, calibrated_yaml  # noqa: E402
from .measured import compare as compare_measured  # noqa: E402
from .optimiser import Setting, make_setting
from .prefill import prefill as prefill_pass  # noqa: E402
from .prefill import price_ratio  # noqa: E402
from .prefill import request as request_view  # noqa: E402
from .scenario import Scenario, load_scenario
from .sensitivity import elasticities, sweep  # noqa: E402
from .specdec import SpecDecoding
from .tables import run_table

__version__ = "0.1.0"

__all__ = [
    "PAPER",
    "GPU",
    "Architecture",
    "Assumptions",
    "Frontier",
    "InfeasibleError",
    "InferenceEconError",
    "Precision",
    "Scenario",
    "Setting",
    "SpecDecoding",
    "SpecError",
    "derive",
    "frontier",
    "hardware_summary",
    "list_specs",
    "load_hardware",
    "load_model",
    "load_scenario",
    "make_setting",
    "model_summary",
    "point",
    "points",
    "preset",
    "run_table",
    "calibrate",
    "calibrated_yaml",
    "compare_measured",
    "elasticities",
    "import_hf_config",
    "prefill_pass",
    "price_ratio",
    "request_view",
    "sweep",
]
