"""Export: a configuration as the engine launches it, and the benchmark that checks it
(``export/``): a point, a frontier point, a capacity plan or a disaggregated plan."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import settings as table
from ..errors import InfeasibleError, SpecError, short
from .problem import setting_of

if TYPE_CHECKING:  # imported on first use: the command line starts without them
    from ..export.launch import LaunchPlan
    from ..serving.setting import Setting

#: What an export can start from.
EXPORT_PLANS = ("point", "frontier", "capacity", "disagg")
#: Frontier points an export can pick by name (or ``speed``: the cheapest at that speed).
FRONTIER_PICKS = ("fastest", "cheapest", "preference")
#: Options of the launch itself, not of what is served.
LAUNCH_OPTIONS = ("max_model_len", "checkpoint")


def export(
    model,
    hardware=None,
    *,
    engine: str,
    plan: str = "point",
    gpus=None,
    batch=None,
    prompt_tokens=None,
    output_tokens=None,
    prefill_gpus=None,
    pick: str | None = None,
    speed=None,
    progress=None,
    **settings,
) -> LaunchPlan:
    """A configuration as the engine launches it.

    A ``point`` (``gpus``, ``batch``), a ``frontier`` point (``pick`` fastest/cheapest/
    preference, or the cheapest at ``speed`` tokens/s per request; whole layouts), a
    ``capacity`` plan (the load settings and targets, ``disaggregated=True`` for pools) or a
    ``disagg`` plan (``gpus``, ``batch``, ``prefill_gpus``), for ``engine`` (vllm, sglang,
    trtllm). Every worker's memory is checked under the engine's profile: one that does not
    fit is refused with its numbers (``InfeasibleError``). Unless ``assumptions`` is given the
    figures are the achievable preset's under ``engine``.

    Parameters
    ----------
    model : str or Architecture
        The model served (not a ``Setting``: an export builds its own).
    hardware : str, GPU or list of them, optional
        The GPU (a list: the GPUs a capacity plan searches).
    engine : {"vllm", "sglang", "trtllm"}
        The engine launched.
    plan : {"point", "frontier", "capacity", "disagg"}
        What the export starts from.
    gpus, batch, prefill_gpus : float, optional
        The point's (or the disaggregated plan's decode pool's) GPUs and batch, and the
        prefill pool's GPUs.
    prompt_tokens, output_tokens : float, optional
        The request's tokens in and out (point, frontier, disagg; a capacity plan's traffic's).
    pick : {"fastest", "cheapest", "preference"}, optional
        The frontier point exported (or ``speed``).
    speed : float, optional
        Export the frontier's cheapest point at this many tokens/s per request.
    progress : callable, optional
        Called with a line of text as the work goes.
    **settings
        Settings of what is served, load settings of a capacity plan, and the launch's own
        ``max_model_len`` and ``checkpoint``.

    Returns
    -------
    LaunchPlan
        Everything the export writes (``export.launch.LaunchPlan``).
    """
    from ..export import launch

    _check_export(engine, plan, settings, hardware, model)
    _plan_arguments(plan, gpus=gpus, batch=batch, prefill_gpus=prefill_gpus, pick=pick, speed=speed)
    launch_options = _launch_options(settings)
    settings.setdefault("assumptions", table.default("assumptions", "export"))
    if settings["assumptions"] == "achievable":  # priced as the version it launches runs
        settings.setdefault("engine", f"{engine}@{launch.engine_names(engine)['version']}")
    _exported_clock(engine, hardware, settings)
    if plan == "capacity":  # the request's lengths are its traffic's, as under a load
        settings |= {"prompt_tokens": prompt_tokens, "output_tokens": output_tokens}
        return _capacity_export(model, hardware, engine, progress, settings, launch_options)
    setting = _request_setting(
        model, hardware, prompt_tokens, output_tokens, launch_options["max_model_len"], settings
    )
    source = {}
    if plan == "frontier":
        gpus, batch, label = _frontier_pick(setting, float(prompt_tokens), pick, speed)
        source = {"source": label}
    _given_point(plan, gpus, batch)
    request = (setting, engine, gpus, batch, prompt_tokens, output_tokens)
    if plan == "disagg":
        return _clock_noted(launch.disagg_plan(*request, prefill_gpus, **launch_options))
    return _clock_noted(launch.point_plan(*request, **source, **launch_options))


def _launch_options(settings: dict) -> dict:
    """The launch's own options (``LAUNCH_OPTIONS``), taken out of ``settings`` and checked as
    the command line checks them: ``max_model_len`` a whole number of tokens, ``checkpoint``
    text (a number or a list had reached the launch as it was, or failed in a comparison)."""
    from ..specs.schema import check_number

    options = {name: settings.pop(name, None) for name in LAUNCH_OPTIONS}
    if options["max_model_len"] is not None:
        options["max_model_len"] = check_number(
            options["max_model_len"], "argument", "max_model_len",
            minimum=1, maximum=table.MAX_TOKENS, integer=True, unit="tokens",
        )  # fmt: skip
    if options["checkpoint"] is not None and not isinstance(options["checkpoint"], str):
        raise SpecError(
            "argument", "checkpoint", f"expected text, got {short(options['checkpoint'])}",
            "give a Hugging Face repository id (org/model) or a path (./model)",
        )  # fmt: skip
    return options


def _exported_gpus(hardware) -> list:
    """The GPUs an export may run on, loaded ([] where one cannot be: the setting's own checks
    refuse it, with its message)."""
    from ..specs.hardware import GPU, load_hardware

    parts = hardware if isinstance(hardware, (list, tuple)) else [hardware]
    try:
        return [h if isinstance(h, GPU) else load_hardware(h) for h in parts if h]
    except SpecError:
        return []


def _exported_platform(hardware) -> None:
    """Refuse a part whose platform no launch here is written for: the launches, images and
    device resources are CUDA's and ROCm's (a TPU or an Intel GPU would be handed CUDA's)."""
    from ..specs.platforms import SHOWN, platform_of

    for gpu in _exported_gpus(hardware):
        kind = platform_of(gpu)
        if kind not in ("cuda", "rocm"):
            raise SpecError(
                "argument", "hardware",
                f"{gpu.name} runs {SHOWN[kind]}; export writes launches for CUDA and ROCm "
                "parts only (their commands, images and device resources)",
                "plan it with frontier or capacity, which price it, and launch it with the "
                "engine's own instructions for that platform",
            )  # fmt: skip


def _exported_clock(engine: str, hardware, settings: dict) -> None:
    """Price the plan on the kernel clock where a result of its benchmark would be: an export
    names its engine's version (``launch_flags.yaml``), and a measured row stating a version
    whose kernels the tables time, on a part the clock prices unasked (``AUTO_CLOCK_FOLDERS``),
    is priced so
    (docs/model.md, "Which clock prices a measured row"); every GPU the plan may run on must
    have them. A clock given (engine or kernel) is kept."""
    from ..export.launch import engine_names
    from ..measured.predicting import reads_kernel_tables
    from ..specs.engine import load_engine

    if settings.get("clock") not in (None, "auto") or settings["assumptions"] != "achievable":
        return
    gpus = _exported_gpus(hardware)
    try:
        profile = load_engine(settings["engine"])
    except SpecError:
        return  # the setting's own checks refuse it, with its message
    version = str(engine_names(engine)["version"])
    if gpus and all(reads_kernel_tables(profile, version, g) for g in gpus):
        settings["clock"] = "kernel"


def _clock_noted(plan):
    """The plan, with a line where the kernel clock priced it (``_exported_clock``)."""
    import dataclasses

    if not plan.setting.assumptions.kernel_tables:
        return plan
    line = (
        f"Priced on the kernel clock: {plan.engine} {plan.version}'s kernels on the "
        f"{plan.setting.gpu.name} are in the measured tables (kernels/), as compare-measured "
        "prices a result that states that version; --clock engine prices it by the profile's "
        "terms."
    )
    # after the line that says what the expected figures are
    return dataclasses.replace(plan, notes=(*plan.notes[:1], line, *plan.notes[1:]))


def _request_setting(
    model, hardware, prompt_tokens, output_tokens, max_model_len, settings: dict
) -> Setting:
    """The setting of a point, frontier or disaggregated export at its request's decode
    context; requests beyond the model's window (or the given max model length) are refused
    here, before any figure is priced (each pricing would warn of its context once more)."""
    from ..export.refusals import longest_request

    context = _decode_context(prompt_tokens, output_tokens)
    if settings.get("ttft_max_s") is not None:  # the limit is on the export's own prompt
        settings = {"prompt_tokens": prompt_tokens, **settings}
    setting = setting_of(model, hardware, context_tokens=context, **settings)
    longest_request(max_model_len, float(prompt_tokens) + float(output_tokens), setting)
    return setting


def _given_point(plan: str, gpus, batch) -> None:
    """A point or disaggregated export names its GPUs and batch (a frontier's pick gives them)."""
    for (name, noun), value in ((("gpus", "GPUs"), gpus), (("batch", "requests"), batch)):
        if value is None:
            raise SpecError(
                "argument", name, "is missing", f"a {plan} export needs --gpus and --batch"
            )
        if not _whole(value):  # an engine launches whole GPUs and requests
            raise SpecError(
                "argument", name, f"is {value:g}; an engine launches whole {noun}",
                f"give a whole number of {noun}",
            )  # fmt: skip


def _whole(value) -> bool:
    """Whether ``value`` is a whole number; True for a value that is not a number at all,
    or a whole one too large for a float, which are refused where the setting is read."""
    try:
        return float(value).is_integer()
    except (TypeError, ValueError, OverflowError):
        return True


#: The arguments of ``export`` each plan uses: one given to a plan that ignores it is refused.
_PLAN_ARGUMENTS = {
    "point": ("gpus", "batch"),
    "frontier": ("pick", "speed"),
    "capacity": (),
    "disagg": ("gpus", "batch", "prefill_gpus"),
}


def _plan_arguments(plan: str, **given) -> None:
    """Refuse an argument the plan does not use (``pick`` on a point, ``gpus`` on a capacity
    plan, which searches them): it would be silently ignored."""
    for name, value in given.items():
        if value is not None and name not in _PLAN_ARGUMENTS[plan]:
            users = [p for p, names in _PLAN_ARGUMENTS.items() if name in names]
            raise SpecError(
                "argument",
                name,
                f"is not used by a {plan} plan",
                f"drop {name}, or give plan={' or '.join(repr(u) for u in users)}",
            )


def _decode_context(prompt_tokens, output_tokens) -> float:
    """The mean context of a request's decode steps, n_in + n_out/2 (§B10); both given."""
    for name, value in (("prompt_tokens", prompt_tokens), ("output_tokens", output_tokens)):
        if value is None:
            raise SpecError(
                "argument", name, "is missing", "give the request's prompt and output tokens"
            )
    table.check_each({"prompt_tokens": prompt_tokens, "output_tokens": output_tokens})
    return float(prompt_tokens) + float(output_tokens) / 2.0


def _check_exported(settings: dict) -> None:
    """Refuse a setting the launch would not carry (a plan exported without it)."""
    if settings.get("kv_offload_gb") is not None or settings.get("kv_disk_gb") is not None:
        raise SpecError(
            "argument",
            "kv_offload_gb",
            "is not exported: the launch sets no KV-cache offloading (LMCache, vLLM's"
            " --kv-offloading-size)",
            "drop --kv-offload-gb to export",
        )


def _check_export(engine: str, plan: str, settings: dict, hardware=None, model=None) -> None:
    """An export names an engine it launches and a plan it starts from, on parts whose
    platform it writes launches for, and schedules every step; it builds its own setting."""
    from ..export.launch import ENGINES
    from ..serving.setting import Setting

    if plan in ("point", "disagg") and settings.get("ttft_max_s") is not None:
        raise SpecError(
            "argument", "ttft_max_s",
            f"limits the points a frontier export picks from; a {plan} export is given its "
            "GPUs and batch",
            "use plan='frontier' with pick or speed, or drop ttft_max_s",
        )  # fmt: skip
    if plan != "capacity":  # a load's settings: the capacity plan's, not a point's
        given = [k for k in table.names(table.LOAD) if settings.get(k) not in (None, False)]
        if given:
            raise SpecError(
                "argument",
                given[0],
                f"is a load setting, read by plan='capacity' only (a {plan} export is planned "
                "for its GPUs and batch, at the engine's own limits)",
                f"drop {given[0]}, or give plan='capacity' with a rate and targets",
            )
    if isinstance(model, Setting):  # priced at the engine version it launches (its own)
        raise SpecError(
            "argument", "model",
            "is a Setting; an export builds its own, priced at the engine version it launches",
            f"give the model's name ({short(model.model.name)}), the GPU and the setting's "
            "options (weight_bits=...) instead",
        )  # fmt: skip

    if engine not in ENGINES:
        from ..errors import did_you_mean

        raise SpecError(
            "argument",
            "engine",
            f"no launch configuration for {engine!r}",
            did_you_mean(str(engine), ENGINES) or f"choose {', '.join(ENGINES)}",
        )
    if plan not in EXPORT_PLANS:
        raise SpecError(
            "argument", "plan", f"unknown {plan!r}", f"choose {', '.join(EXPORT_PLANS)}"
        )
    _check_exported(settings)
    _exported_platform(hardware)
    scheduler_steps = settings.get("scheduler_steps")
    if scheduler_steps not in (None, 1):
        # the engine versions an export targets (export/launch_flags.yaml) have no multi-step
        # scheduling: vLLM removed it with its V0 engine in 0.11
        raise SpecError(
            "argument",
            "scheduler_steps",
            f"is {scheduler_steps}: the engines an export targets (vLLM 0.11, "
            "SGLang, TensorRT-LLM) schedule every step",
            "drop --scheduler-steps to export",
        )


def _capacity_export(model, hardware, engine: str, progress, settings: dict, options: dict):
    """The launch of a capacity plan, under the plan's own traffic and scheduler limits (a
    request's ``prompt_tokens`` and ``output_tokens`` its lengths: ``load_inputs``)."""
    from ..export.capacity_launch import capacity_plan as capacity_launch
    from ..export.capacity_launch import refuse_past_window
    from ..export.refusals import capacity_speculation
    from .load import capacity
    from .load_setup import REQUEST_LENGTHS, load_inputs, settings_per_gpu

    for flag in ("draft", "draft_heads"):  # refused before the plan's search
        if settings.get(flag) is not None:
            raise capacity_speculation(flag)
    load = {k: v for k, v in settings.items() if k in (*table.names(table.LOAD), *REQUEST_LENGTHS)}
    inputs = load_inputs(load, settings.get("traffic"), None, settings.get("config"), sized=True)
    # requests past the model's window are refused before the plan's search, not after it
    typed = [settings.get(k) for k in ("traffic", "targets", "config")]
    own = ("traffic", "targets", "config", "sizes", "yes")  # capacity's own arguments
    flat = {k: v for k, v in settings.items() if k not in own}
    problem = load_inputs(flat, *typed, sized=True).problem
    refuse_past_window(inputs.traffic, settings_per_gpu(model, hardware, problem)[0])
    capacity_plan = capacity(model, hardware, progress=progress, **settings)
    config = capacity_plan.config or inputs.config  # a searched step budget is launched
    return _clock_noted(capacity_launch(capacity_plan, engine, inputs.traffic, config, **options))


def _frontier_pick(
    setting: Setting, prompt_tokens: float, pick: str | None, speed
) -> tuple[Any, Any, str]:
    """(gpus, batch, label) of the frontier point an export picks: by name, or the cheapest
    at ``speed`` (whole layouts)."""
    if (pick is None) == (speed is None):
        raise SpecError(
            "argument",
            "pick",
            "give one of pick or speed",
            f"pick {', '.join(FRONTIER_PICKS)}, or speed in tokens/s per request",
        )
    if speed is not None:  # the bounds of at_speed, the same quantity, named as given here
        speed = table.option("at_speed").check(speed, "argument", "speed")
    from ..optimise.method import make_method
    from ..optimise.optimiser import frontier

    front = frontier(setting.replace(prompt_tokens=prompt_tokens), make_method("discrete"))
    if speed is not None:
        row = front.cheapest_at_speed(float(speed))
        if row is None:
            raise InfeasibleError(f"no configuration reaches {float(speed):g} tokens/s per request")
        label = f"frontier (cheapest at {float(speed):g} tokens/s)"
    elif pick in FRONTIER_PICKS:
        row = {
            "fastest": front.fastest,
            "cheapest": front.cheapest,
            "preference": front.preference_point,
        }[pick]()
        label = f"frontier ({pick})"
    else:
        raise SpecError(
            "argument", "pick", f"unknown {pick!r}", f"choose {', '.join(FRONTIER_PICKS)}"
        )
    return row["gpus"], row["batch"], label


def launch_files(plan: LaunchPlan) -> dict[str, str]:
    """The files an export writes: the engine's launch files and the benchmark that checks
    the plan (``benchmark.md``).

    Parameters
    ----------
    plan : LaunchPlan
        ``export``'s plan.

    Returns
    -------
    dict
        {file name: text}.
    """
    from ..export.benchmark_commands import benchmark_text
    from ..export.bundle import render

    files = render(plan)
    files["benchmark.md"] = benchmark_text(plan)
    return files


def write_launch_files(plan: LaunchPlan, folder) -> list[str]:
    """Write an export's files into ``folder`` and remove those an earlier export wrote there
    that this one does not (another engine's configs would otherwise sit beside the new plan).

    Parameters
    ----------
    plan : LaunchPlan
        ``export``'s plan.
    folder : str or Path
        The folder (made when missing).

    Returns
    -------
    list of str
        The names written, sorted.
    """
    from pathlib import Path

    from ..export.bundle import EXPORT_FILES
    from ..output.files import check_owned_file, write_atomic

    files = launch_files(plan)
    folder = Path(folder)
    stale = []
    for name in EXPORT_FILES:
        path = folder / name
        if name in files or not path.is_file():
            continue
        try:  # only a file the toolkit wrote and nobody changed since; a user's stays
            check_owned_file(path, "--out")
        except SpecError:
            continue
        stale.append(path)
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        write_atomic(folder / name, text)
    for path in stale:
        path.unlink(missing_ok=True)
    return sorted(files)


def plan_record(plan: LaunchPlan) -> dict[str, Any]:
    """An export's plan as a record: its engine, source, workers and expected figures.

    Parameters
    ----------
    plan : LaunchPlan
        ``export``'s plan.

    Returns
    -------
    dict
        The record (``workers``: one entry per kind of worker).
    """
    from ..export.bundle import plan_record as record

    return record(plan)
