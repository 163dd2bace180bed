"""The expert slots or redundant experts a measured row states its engine's expert-parallel load
balancer (EPLB) held (docs/model-part-f.md §F7): TensorRT-LLM's slots, the experts and their
copies ("num_slots: 288", "288 expert slots", "EPLB 288"); SGLang's and vLLM's copies
("--ep-num-redundant-experts 32", "num_redundant_experts: 32", "32 redundant experts"). A count
is read whole or not at all: a sign, a decimal or an exponent ("-32", "288.5", "2.88e2") is the
row's ``SpecError``, never the digits after it."""

from __future__ import annotations

import re

from ..errors import SpecError, short
from ..model.moe import fewest_copies
from ..specs.architecture import MOST_REDUNDANT_EXPERTS
from .semantics import scenario_part

#: A count as a row may write it, all of it: a sign, thousands separators ("1,024"), decimals
#: and an exponent, so that one that is not a whole number is refused, not read in part.
_COUNT = r"([-+]?\d+(?:[.,]\d+)*(?:e[-+]?\d+)?)(?!\w|[.,]\d)"
#: Where a count written before its words starts: not inside a word or another number.
_START = r"(?<![\w.,])"
_SLOTS = re.compile(
    rf"(?:num[\s_-]*slots['\"]?\s*[:=]?\s*['\"]?|\bEPLB[\s_-]*){_COUNT}"
    rf"|{_START}{_COUNT}\s+expert\s+slots\b",
    re.I,
)
_COPIES = re.compile(
    rf"num[\s_-]*redundant[\s_-]*experts['\"]?\s*[:=]?\s*['\"]?{_COUNT}"
    rf"|{_START}{_COUNT}\s+redundant\s+experts\b",
    re.I,
)
#: How a row states its balancer's slots or copies, for the fix of one that cannot be read.
_EXAMPLE = "such as 'num_slots: 288' or '32 redundant experts'"


def _count(text: str, what: str, most: int, where: str, field: str) -> int:
    """A count a row states of ``what``: a whole number from 0 to ``most``, with or without
    thousands separators; anything else is the row's ``SpecError``."""
    digits = text.replace(",", "") if re.fullmatch(r"\d{1,3}(?:,\d{3})+", text) else text
    if not re.fullmatch(r"\d+", digits):
        raise SpecError(
            where,
            field,
            f"states {what} {short(text)}, not a whole number",
            f"give the {what} the engine held as a whole number, {_EXAMPLE}",
        )
    if len(digits) > len(str(most)) or int(digits) > most:
        raise SpecError(
            where,
            field,
            f"states {what} {short(text)}, more than the {most:,} a layer is read with",
            f"give the {what} the engine held, {_EXAMPLE}",
        )
    return int(digits)


def _splits_unevenly(engine: str | None) -> bool:
    """Whether an engine splits experts unevenly where its expert degree does not divide
    them (vLLM), rather than running balanced slots (TensorRT-LLM, SGLang, and no engine
    named: the preset's TensorRT-LLM)."""
    return engine is not None and engine.lower().startswith("vllm")


def needed_copies(experts: int, layout, engine: str | None, where: str = "row") -> int:
    """The redundant experts a row's layout (``layouts.Layout``; None: not stated) needs
    beside ``experts`` for its stated expert degree on an engine whose balancer splits its
    slots evenly (TensorRT-LLM's ``num_slots % ep_size``, SGLang's ``num_physical_experts %
    ep_size``; no engine named: the preset's TensorRT-LLM): the fewest
    (``moe.fewest_copies``). vLLM splits such experts unevenly instead (3 or 4 a rank of
    DeepSeek's 256 over EP72), which the model does not price: the row's ``SpecError``."""
    degree = None if layout is None else layout.expert
    fewest = fewest_copies(experts, degree) if degree else 0
    if fewest and _splits_unevenly(engine):
        raise SpecError(
            where,
            "parallelism",
            f"splits {experts} experts over EP{degree} unevenly, as vLLM runs it "
            f"({experts // degree} or {experts // degree + 1} a rank), which the model does "
            "not price",
            f"state the redundant experts the run held (e.g. '{fewest} redundant experts': "
            f"{experts + fewest} slots) or an expert degree that divides {experts}",
        )
    return fewest


def check_stated_slots(experts: int, copies: int, layout, engine: str | None, where: str) -> None:
    """Refuse a row whose stated slots (``experts`` and ``copies``) its stated expert degree
    does not split evenly on an engine whose balancer needs it (``needed_copies``'s engines:
    TensorRT-LLM's ``num_slots % ep_size``, SGLang's ``num_physical_experts % ep_size``), which
    that engine does not launch: 272 slots of DeepSeek-R1 over EP72 (its fewest, 288)."""
    degree = None if layout is None else layout.expert
    if not degree or _splits_unevenly(engine):
        return
    slots = experts + copies
    if experts <= 1 or slots % degree == 0:
        return
    fewest = fewest_copies(experts, degree)
    raise SpecError(
        where,
        "notes",
        f"states {slots} expert slots ({copies} redundant experts), which its expert degree "
        f"{degree} does not split evenly, as {engine or 'trtllm'} splits them (its balancer "
        "needs the slots a multiple of the expert degree)",
        f"state the slots the engine ran: {experts + fewest} ({fewest} redundant experts) is "
        "the fewest",
    )


def redundant_experts_of(text, scenario, notes: str, where: str, experts: int) -> int | None:
    """The redundant experts a row states its engine held beside the model's ``experts`` a
    layer (EPLB: copies, or slots less the experts), in ``batch_or_concurrency`` or else the
    notes (the row's scenario part); None where it does not say. A count that is not a whole
    number, more than ``MOST_REDUNDANT_EXPERTS`` copies, fewer slots than experts, or two
    counts for one scenario, is the row's ``SpecError``."""
    for field, cell in (("batch_or_concurrency", text), ("notes", notes)):
        part = scenario_part(cell, scenario).text
        found = set()
        for m in _COPIES.finditer(part):
            copies = m.group(1) or m.group(2)
            found.add(_count(copies, "redundant experts", MOST_REDUNDANT_EXPERTS, where, field))
        for m in _SLOTS.finditer(part):
            most = experts + MOST_REDUNDANT_EXPERTS
            slots = _count(m.group(1) or m.group(2), "expert slots", most, where, field)
            if slots < experts:
                raise SpecError(
                    where,
                    field,
                    f"states {slots} expert slots, fewer than the model's {experts} experts",
                    "give the slots (the experts and their copies) or the redundant experts",
                )
            found.add(slots - experts)
        if len(found) > 1:
            raise SpecError(
                where,
                field,
                f"states redundant experts twice, differently, for the {scenario} scenario",
                "state it once for each scenario",
            )
        if found:
            return found.pop()
    return None
