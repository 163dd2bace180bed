"""The options of the inverse analyses (``studies/inverse``): what observed API speeds and
prices imply about the serving behind them (docs/model.md Part D)."""

from __future__ import annotations

from ..model.assumptions import PRESETS
from .limits import MAX_OBSERVED, MIN_OBSERVED
from .row import OPERATING, Name, Numbers, section, setting


@section(OPERATING)
class OfferOptions:
    """An observed API offer, its speed and price, and how its price is compared with our cost
    (``studies/inverse``)."""

    observed_tokens_per_s: float | None = setting(
        None,
        help="Observed output speed of one request (instead of an observations file).",
        unit="tokens/s",
        minimum=MIN_OBSERVED,
        maximum=MAX_OBSERVED,
        flag="--speed",
    )

    observed_usd_per_mtok: float | None = setting(
        None,
        help="Observed price per million output tokens (instead of an observations file).",
        unit="$/Mtok",
        minimum=MIN_OBSERVED,
        maximum=MAX_OBSERVED,
        flag="--price",
    )

    offer_price: str = setting(
        "output",
        help="Price compared with our cost: the output-token price, or input and output blended.",
        choices=("output", "blended"),
    )

    input_tokens_per_output: float = setting(
        3.0,
        help="Blended price: input tokens per output token (Artificial Analysis blends 3:1).",
        unit="tokens",
        minimum=0,
        maximum=MAX_OBSERVED,
        flag="--blend-ratio",
    )


@section(OPERATING)
class VariantOptions:
    """The serving variants an offer is held against: weight precisions, assumption presets, with or
    without speculation (``studies.inverse.variants``)."""

    candidate_weight_bits: Numbers = setting(
        "16,8,4",
        help="Comma-separated weight precisions to try.",
        unit="bits",
        minimum=1,
        maximum=32,
        flag="--weight-bits",
        distinct=True,
    )

    candidate_assumptions: str = setting(
        "paper",
        help=f"Comma-separated assumption presets to try ({', '.join(PRESETS)}).",
        flag="--assumptions",
    )

    speculation: bool = setting(
        True,
        help="Also try speculative decoding with the draft model.",
        # --no-speculation tries no draft: a draft, acceptance or draft length would be ignored
        excludes=("draft", "acceptance", "max_draft_tokens"),
    )


@section(OPERATING)
class FeasibilityOptions:
    """What makes a variant feasible, and the noise of an observed speed
    (``studies.inverse.feasibility``, ``preference``)."""

    criterion: str = setting(
        "price",
        help="Feasible means: our cost at the observed speed is within the price (price), or the"
        " speed is reachable at all (speed).",
        choices=("price", "speed"),
    )

    log_speed_sd: float | None = setting(
        None,
        help="Noise of an observed speed, standard deviation of ln(speed) (default: estimated from"
        " the residuals).",
        minimum=0,
        exclusive_minimum=True,
        # a factor of e^10 (22,000) either way: beyond it no speed says anything about k
        maximum=10,
    )


@section(OPERATING)
class SizeOptions:
    """The architecture family scaled to bound a model's size, and the assumed markup of price over
    cost (``studies.inverse.size``)."""

    family: Name = setting(
        "Llama 3 70B",
        help="Architecture family to scale: a single-group GQA model (dense or MoE).",
    )

    experts: int | None = setting(
        None,
        help="Make the family a mixture of experts with this many experts per layer.",
        minimum=1,
        maximum=4096,
    )

    active_experts: int | None = setting(
        None,
        help="Experts active per token (with --experts).",
        minimum=1,
        maximum=4096,
    )

    depth_exponent: float = setting(
        1 / 3,
        help="Layers grow as (parameters)^this; widths take the rest.",
        minimum=0,
        maximum=1,
        exclusive_minimum=False,
    )

    markup: float = setting(
        1.0,
        help="Assumed price / cost: 1 means the provider sells at our cost (an upper bound on"
        " size).",
        # a markup of 1e-310 made the target cost overflow to infinity (a math domain error)
        minimum=MIN_OBSERVED,
        maximum=MAX_OBSERVED,
    )
