"""inference-econ: the roofline model of LLM inference economics.

Given a model architecture and a GPU, find the cost per token and the serial speed (tokens/s
per request) of every parallel layout and batch size, and the Pareto frontier between them.
The model is the one of "Inference economics of language models" (docs/model.md Part A), with
named refinements beyond it (Part B) and hardware, models and speculation beyond it (Part C).

The package is layered (docs/architecture.md): ``specs`` (YAML -> frozen specs) -> ``model``
(the pure cost model) -> ``settings`` (the one table of options) -> ``serving`` (decode,
speculation, prefill, requests) -> ``optimise`` (the frontier search) -> ``studies``
(scenarios, tables, what-ifs, measured data) -> ``output`` (tables, figures, files) -> ``api``
and ``cli``. Names below are imported on first use, so ``import inference_econ`` is cheap.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

#: Public name -> (module, attribute), imported lazily (PEP 562).
_EXPORTS = {
    "frontier": ("api", "frontier"),
    "point": ("api", "point"),
    "points": ("api", "points"),
    "operations": ("api", "operations"),
    "study": ("api", "study"),
    "load_study": ("studies.study", "load_study"),
    "model_summary": ("api", "model_summary"),
    "hardware_summary": ("api", "hardware_summary"),
    "engine_summary": ("api", "engine_summary"),
    "spec_kind": ("api", "spec_kind"),
    "list_specs": ("api", "list_specs"),
    "Architecture": ("specs.architecture", "Architecture"),
    "Precision": ("specs.architecture", "Precision"),
    "load_model": ("specs.architecture", "load_model"),
    "GPU": ("specs.hardware", "GPU"),
    "derive": ("specs.hardware", "derive"),
    "load_hardware": ("specs.hardware", "load_hardware"),
    "import_hf_config": ("specs.hf_import", "import_config"),
    "import_hf_repo": ("specs.hf_import", "import_repo"),
    "resolve_system_name": ("specs.catalog", "resolve_system_name"),
    "PAPER": ("model.assumptions", "PAPER"),
    "Assumptions": ("model.assumptions", "Assumptions"),
    "preset": ("model.assumptions", "preset"),
    "InferenceEconError": ("errors", "InferenceEconError"),
    "InferenceEconWarning": ("errors", "InferenceEconWarning"),
    "InfeasibleError": ("errors", "InfeasibleError"),
    "SpecError": ("errors", "SpecError"),
    "Setting": ("serving.setting", "Setting"),
    "make_setting": ("serving.setting", "make_setting"),
    "SpecDecoding": ("serving.speculative", "SpecDecoding"),
    "DraftHeads": ("serving.speculative", "DraftHeads"),
    "mtp_heads": ("serving.speculative", "mtp_heads"),
    "eagle_head": ("serving.speculative", "eagle_head"),
    "prefill_pass": ("serving.prefill", "prefill"),
    "request_view": ("serving.requests", "request"),
    "Frontier": ("api.results", "Frontier"),
    "Method": ("optimise.method", "Method"),
    "Scenario": ("api.results", "Scenario"),
    "load_scenario": ("api", "load_scenario"),
    "run_table": ("studies.tables", "run_table"),
    "price_ratio": ("studies.prices", "price_ratio"),
    "sweep": ("studies.sensitivity", "sweep"),
    "elasticities": ("studies.sensitivity", "elasticities"),
    "compare_measured": ("measured.comparison", "compare"),
    "calibrate": ("measured.calibration", "calibrate"),
    "calibrated_yaml": ("measured.calibration_report", "calibrated_yaml"),
    "load_engine": ("specs.engine", "load_engine"),
    "EngineProfile": ("specs.engine", "EngineProfile"),
    # inverse economics: what observed API speeds and prices imply (docs/model.md Part D)
    "Observation": ("studies.observations", "Observation"),
    "observation": ("studies.observations", "observation"),
    "load_observations": ("studies.observations", "load_observations"),
    "feasibility": ("studies.inverse.feasibility", "feasibility"),
    "FeasibilityResult": ("studies.inverse.feasibility", "FeasibilityResult"),
    "margin": ("studies.inverse.margin", "margin"),
    "MarginResult": ("studies.inverse.margin", "MarginResult"),
    "fit_preference": ("studies.inverse.preference", "fit_preference"),
    "PreferenceFit": ("studies.inverse.preference", "PreferenceFit"),
    "implied_size": ("studies.inverse.size", "implied_size"),
    "scaled_architecture": ("studies.inverse.size", "scaled_architecture"),
    "SizeResult": ("studies.inverse.size", "SizeResult"),
    # serving under load (docs/model.md Part E)
    "simulate_load": ("api", "simulate_load"),
    "max_load": ("api", "max_load"),
    "capacity": ("api", "capacity"),
    "load_frontier": ("api", "load_frontier"),
    "frontier_plot": ("api", "frontier_plot"),
    "run_scenario": ("api", "run_scenario"),
    # power, owning and demand curves (docs/model.md Part G)
    "demand_plan": ("api", "demand_plan"),
    "fleet_plan": ("api", "fleet_plan"),
    "power_plan": ("api", "power_plan"),
    "FleetPlan": ("optimise.fleet", "FleetPlan"),
    "PowerPlan": ("optimise.power_cap", "PowerPlan"),
    "autoscale_plan": ("api", "autoscale_plan"),
    "AutoscalePlan": ("optimise.autoscale", "AutoscalePlan"),
    # the flat load settings (arrival_rate_per_s=..., slo_ttft_p99_s=...) as typed objects
    "load_inputs": ("api", "load_inputs"),
    "LoadInputs": ("api", "LoadInputs"),
    "DemandPlan": ("optimise.demand", "DemandPlan"),
    "load_demand": ("load.demand", "load_demand"),
    "load_costs": ("specs.costs", "load_costs"),
    "demand_figure": ("output.load_plots", "demand_figure"),
    "autoscale_figure": ("output.autoscale_plot", "autoscale_figure"),
    "Targets": ("load.targets", "Targets"),
    "Traffic": ("load.arrivals", "Traffic"),
    "make_traffic": ("load.arrivals", "make_traffic"),
    "load_trace": ("load.trace_file", "load_trace"),
    "Deployment": ("load.deployment", "Deployment"),
    "EngineConfig": ("load.engine", "EngineConfig"),
    "LoadResult": ("load.results", "LoadResult"),
    "MaxLoad": ("optimise.load_search", "MaxLoad"),
    "CapacityPlan": ("optimise.capacity_plan", "CapacityPlan"),
    "LoadFrontier": ("optimise.load_frontier", "LoadFrontier"),
    "latency_load_figure": ("output.load_plots", "latency_load_figure"),
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    try:
        module, attr = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'inference_econ' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f".{module}", __name__), attr)
    globals()[name] = value
    return value


def __dir__():
    # the public names and the module's dunders; not the imports this file works with
    own = [n for n in globals() if n.startswith("__")]
    return sorted(set(own + list(_EXPORTS)))
