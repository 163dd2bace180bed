"""The cost vocabulary: the one home of the names of the prices every output gives.

Every command, CSV, JSON, figure, report and API result names a price by one of these columns,
and each name means one thing everywhere (docs/glossary.md, docs/model.md §A7 and §E4):

``usd_per_mtok`` (:data:`DECODE`)
    **Decode-only.** Dollars per million generated tokens for the GPU time of the decode steps
    alone: ``N·π/3600 · T_step / B`` (§A7). Prefill, idle time and queueing are not charged.
    This is the paper's cost per token, the price of ``point``, ``frontier``, ``study``, the
    paper's tables and figures, and the y axis of every frontier of decode configurations.
``usd_per_m_input_tokens`` (:data:`INPUT`)
    **Input.** Dollars per million prompt tokens: the GPU time spent on prompts (prefill
    passes; under load, the share of each mixed step the prompt chunks add, and that share of
    idle time) over the prompt tokens served.
``usd_per_m_output_tokens`` (:data:`OUTPUT`)
    **Output.** Dollars per million output tokens for the rest of the GPU time: the output half
    of a two-part price (input and output tokens priced apart). For one request it is the
    decode-only price of its decode steps; under load it also carries the decode share of idle
    time.
``usd_per_m_output_tokens_all_in`` (:data:`ALL_IN`)
    **All-in.** All of the GPU time (prompts, decoding, idle) over the output tokens: the input
    and output prices blended at the input:output ratio ``r`` of the traffic,
    ``r·input + output``. It depends on ``r``, which every output that gives it states in
    :data:`RATIO` (``input_tokens_per_output_token``).

Derived columns keep the name they derive from: an interval's ends (``usd_per_mtok_low90``),
a level's plan (``usd_per_m_output_tokens_all_in_at_90``), the ideal bound's
(``bound_usd_per_m_output_tokens_all_in``) or a study's summary
(``cheapest_usd_per_mtok_at_50_tokens_per_s``).
"""

from __future__ import annotations

#: A price per GPU-hour over this is a price per GPU-second (§A7's 3600).
SECONDS_PER_HOUR = 3600.0
#: A month of a deployment's hours: a twelfth of a 365-day year (8,760 h / 12), at which
#: ``monthly_usd`` (:data:`MONTHLY`) states its cost beside ``usd_per_hour``.
HOURS_PER_MONTH = 730.0
#: A deployment's cost a month, running every hour of it.
MONTHLY = "monthly_usd"

#: Decode-only: GPU time of decode steps per million generated tokens (the paper's $/Mtok).
DECODE = "usd_per_mtok"
#: Input: GPU time on prompts per million prompt tokens.
INPUT = "usd_per_m_input_tokens"
#: Output: the rest of the GPU time per million output tokens (two-part pricing).
OUTPUT = "usd_per_m_output_tokens"
#: Input per computed token: the prompts' GPU time per million prompt tokens actually computed
#: (those a prefix cache serves left out).
COMPUTED_INPUT = "usd_per_m_computed_input_tokens"
#: All-in: all the GPU time per million output tokens, at the stated input:output ratio.
ALL_IN = "usd_per_m_output_tokens_all_in"
#: The input:output token ratio an all-in price is blended at.
RATIO = "input_tokens_per_output_token"

#: The interval levels every expected figure carries, percent: the suffixes of its interval
#: columns (``usd_per_mtok_low80`` ... ``_high90``) and the only levels a confident plan takes.
INTERVAL_LEVELS = (80, 90)

#: Each price column and what it means (the text of docs/glossary.md's "Prices").
PRICES: dict[str, str] = {
    DECODE: "decode-only: the GPU time of decode steps per million generated tokens "
    "(prefill and idle time not charged; the paper's $/Mtok)",
    INPUT: "input: the GPU time spent on prompts per million prompt tokens",
    COMPUTED_INPUT: "input per computed token: the same GPU time per million prompt tokens "
    "computed (prefix-cache hits left out)",
    OUTPUT: "output: the rest of the GPU time per million output tokens "
    "(the output half of a two-part price)",
    ALL_IN: "all-in: all the GPU time (prompts, decoding, idle) per million output tokens, "
    f"at the input:output ratio stated as {RATIO}",
}

#: Headers of the text and Markdown tables. The decode-only price keeps the paper's "$/Mtok".
HEADERS: dict[str, str] = {
    DECODE: "$/Mtok",
    INPUT: "$/M input tok",
    COMPUTED_INPUT: "$/M computed input tok",
    OUTPUT: "$/M output tok",
    ALL_IN: "all-in $/M output tok",
    RATIO: "input:output",
}

#: How a table's title or note names each price in words.
WORDS: dict[str, str] = {
    DECODE: "decode-only $/Mtok (prefill not charged)",
    INPUT: "$ per million input tokens",
    COMPUTED_INPUT: "$ per million computed input tokens",
    OUTPUT: "$ per million output tokens",
    ALL_IN: "all-in $ per million output tokens",
}

#: Words a derived column adds before or after a price's name.
_PREFIXES = ("cheapest_", "preference_", "bound_", "n_plus_one_", "spec_", "paper_", "plan_")


def price_of(column: str) -> str | None:
    """The price a column states (one of :data:`PRICES`), or None for a column that is no
    price: ``usd_per_mtok_low90`` -> ``usd_per_mtok``,
    ``bound_usd_per_m_output_tokens_all_in`` -> ``usd_per_m_output_tokens_all_in``."""
    name = column
    for prefix in _PREFIXES:
        name = name.removeprefix(prefix)
    # the longest name first: usd_per_m_output_tokens_all_in before usd_per_m_output_tokens
    for price in sorted(PRICES, key=len, reverse=True):
        if name == price or name.startswith(price + "_"):
            rest = name[len(price) :]
            if price == OUTPUT and rest.startswith("_all_in"):
                continue
            return price
    return None
