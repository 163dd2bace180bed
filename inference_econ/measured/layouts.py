"""The layouts measured rows state: tensor, pipeline, expert and attention data-parallel
degrees and replicas read from a row's parallelism cell, notes or launch flags, and whether
(and how) a row's run is disaggregated into prefill and decode workers. A cell that cannot be
read raises ``SpecError`` naming the field."""

from __future__ import annotations

import numbers
import re
from dataclasses import dataclass

from ..errors import SpecError
from .semantics import MLPERF_SCENARIO_WORD, is_missing, number, said_off, scenario_part

# --- layouts ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """A layout a row states: tensor, pipeline and expert degrees, the attention's
    data-parallel ranks within the tensor group (1: tensor-parallel attention; ``tensor``: each
    GPU attends alone; "TP8 DP2 attn-DP": 2 ranks of attention TP4) and replicas (None where
    the row does not say)."""

    tensor: int
    pipeline: int = 1
    expert: int | None = None
    attention_ranks: int = 1
    replicas: int = 1

    def __post_init__(self) -> None:
        check_attention_ranks(self.tensor, self.attention_ranks)

    @property
    def attention_dp(self) -> bool:
        """Whether the attention is data-parallel (over some or all of the tensor group)."""
        return self.attention_ranks > 1

    @property
    def gpus(self) -> int:
        return self.tensor * self.pipeline * self.replicas

    def label(self) -> str:
        parts = [f"TP{self.tensor}"]
        if self.pipeline > 1:
            parts.append(f"PP{self.pipeline}")
        if self.expert:
            parts.append(f"EP{self.expert}")
        parts += attention_words(self.tensor, self.attention_ranks)
        text = " ".join(parts)
        return f"{self.replicas} x {text}" if self.replicas > 1 else text


def check_attention_ranks(tensor: int, ranks) -> None:
    """Refuse attention ranks that are not a whole number >= 1 dividing the tensor degree."""
    whole = isinstance(ranks, numbers.Integral) and not isinstance(ranks, bool)
    if not whole or ranks < 1 or tensor % ranks:
        raise ValueError(f"attention_ranks {ranks!r} is not a whole divisor of TP{tensor}")


def attention_words(tensor: int, ranks: int) -> list[str]:
    """How a layout's text states its attention's data-parallel ranks: nothing for
    tensor-parallel attention, "attn-DP" over the whole tensor group, "DP2 attn-DP" over part
    of it (what ``layout_of`` reads back)."""
    if ranks <= 1:
        return []
    return ["attn-DP"] if ranks == tensor else [f"DP{ranks}", "attn-DP"]


#: Attention data parallelism: "attn-DP", "attention-DP", "attention data parallel",
#: "DP-attention", "DP8 attention", "DPA", "ADP8" (TensorRT-LLM's attention DP),
#: "--enable-dp-attention" (SGLang); a degree written with it is the attention's.
_ATTENTION_DP = re.compile(
    r"(?:attn|attention)[\s_-]*(?:dp|data[\s_-]*parallel(?:ism)?)"
    # a degree after it ("attention-DP 8"), not a count of copies ("attn-DP 2 instances")
    r"(?:\s*(\d+)(?!\d|\s*(?:[x×]|instances?\b|replicas?\b|copies\b|engines?\b)))?"
    r"|dp\s*(\d*)[\s_-]*(?:attn|attention)|\bdpa\b"
    r"|(?<![A-Za-z])adp(?:\s*(\d+)(?!\d|\s*(?:[x×]|instances?\b|replicas?\b|copies\b)))?(?![A-Za-z])",
    re.IGNORECASE,
)

#: TensorRT-LLM's wide expert parallelism ("WideEP 32", "wide-EP", its WIDEEP MoE backend),
#: which runs with attention data parallelism only (WideEPMoE: "Attention DP should be used
#: with WideEP", tensorrt_llm/_torch/modules/fused_moe/fused_moe_wide_ep.py): read as an
#: expert degree ("EP 32") with attention DP.
_WIDE_EP = re.compile(r"(?<![A-Za-z])wide[\s_-]*ep(?![A-Za-z])", re.IGNORECASE)
#: Launch flags naming degrees: "--tp 8", "--tensor-parallel-size 8", "tp_size=8".
_FLAGS = {
    "TP": r"tp|tp[-_]size|tensor[\s_-]parallel(?:ism)?(?:[\s_-]size)?",
    "PP": r"pp|pp[-_]size|pipeline[\s_-]parallel(?:ism)?(?:[\s_-]size)?",
    "DP": r"dp|dp[-_]size|data[\s_-]parallel(?:ism)?(?:[\s_-]size)?",
    "EP": r"ep|ep[-_]size|expert[\s_-]parallel(?:ism)?(?:[\s_-]size)?",
}
#: A degree written "8-way": "8-way tensor parallel", "8-way EP" (as "tensor parallel 8", "EP8").
_WAY = re.compile(
    r"(\d+)[\s-]*way\s+(tensor|pipeline|expert|data|TP|PP|EP|DP)\b(?:[\s_-]*parallel(?:ism)?)?",
    re.IGNORECASE,
)
_FLAG = re.compile(
    r"(?:--?|\b)(?:"
    + "|".join(f"(?P<{k}>{v})" for k, v in _FLAGS.items())
    + r")(?:\s*[=:]\s*|\s+)(?P<n>\d+)",
    re.IGNORECASE,
)
#: Experts across every GPU of the instance: vLLM's --enable-expert-parallel; SGLang's
#: --enable-ep-moe, --enable-deepep-moe and an all-to-all --moe-a2a-backend, each of which sets
#: its ep_size to its tp_size (python/sglang/srt/server_args.py, 0.4-0.5).
_EXPERTS_ACROSS = re.compile(
    r"enable[-_]expert[-_]parallel|enable[-_](?:deep)?ep[-_]moe"
    r"|moe[-_]a2a[-_]backend['\"]?\s*[=:]?\s*['\"]?(?!none\b)[a-z]",
    re.IGNORECASE,
)
#: An expert-parallel word without its degree ("TP8 EP", "DP8 + EP", "-tp 8 -ep"): experts
#: across the instance, as vLLM's --enable-expert-parallel.
_BARE_EP = re.compile(r"(?<![A-Za-z0-9])-{0,2}ep(?![A-Za-z0-9])(?!\s*[=:]?\s*\d)", re.IGNORECASE)
#: Degrees written as tokens: "TP2xPP2", "TP8 (EP8)", TensorRT-LLM's "DEP8" (attention DP and
#: expert parallelism over 8 GPUs) and "TEP8" (tensor and expert parallelism).
_DEGREE = re.compile(r"(?<![A-Za-z])(DEP|TEP|TP|PP|EP|DP|CP|SP)\s*(?:[-_]\s*)?(\d+)", re.IGNORECASE)
_LEADING_COPIES = re.compile(r"^\s*(\d+)\s*[x×]\s*(?=[(A-Za-z])")
_COPIES = re.compile(
    r"(?<![\w.])[x×]\s*(\d+)\b|(\d+)\s*(?:instances|replicas|copies|engines)\b", re.I
)


def _degrees(
    raw: str, where: str, field: str = "parallelism"
) -> tuple[dict[str, int], bool, int | None]:
    """(degrees, attention data parallel, replica count or None) a text names: TP/PP/EP/DP
    tokens, TensorRT-LLM's DEP/TEP and launch flags. A degree below 1 or one the model does
    not read (context or sequence parallelism) is an error."""
    text = re.sub(r"(\d)\s*[x×]\s*(?=[A-Za-z])", r"\1 x ", raw)
    text = _WAY.sub(lambda m: f" {m.group(2)[0]}P{m.group(1)} ", text)
    text, attention, found = _attention_words(text)
    for m in _FLAG.finditer(text):
        found.append((next(k for k in _FLAGS if m.group(k)), int(m.group("n"))))
    text = _FLAG.sub(" ", text)
    found += [(key.upper(), int(value)) for key, value in _DEGREE.findall(text)]
    degrees: dict[str, int] = {}
    for key, v in found:
        if v < 1:
            raise SpecError(where, field, f"{key}{v} in {raw!r}", "degrees are >= 1")
        if key in ("CP", "SP"):
            if v > 1:
                raise SpecError(
                    where,
                    field,
                    f"{key}{v} in {raw!r}: context or sequence parallelism is not modelled",
                    "give the row's tensor, pipeline and expert degrees",
                )
        else:
            # DEP8: tensor, experts and the attention's ranks over 8 GPUs; TEP8: the first two
            keys = {"DEP": ("TP", "EP", "DP"), "TEP": ("TP", "EP")}.get(key, (key,))
            for k in keys:  # one degree of each kind: "TP8 TP4" is not a layout
                if degrees.get(k, v) != v:
                    raise SpecError(
                        where,
                        field,
                        f"{raw!r} names two {k} degrees ({degrees[k]} and {v})",
                        "give each degree once"
                        if field != "notes"
                        else "state the row's layout in its parallelism field",
                    )
                degrees[k] = v
            attention = attention or key == "DEP"
    rest = _DEGREE.sub(" ", _FLAG.sub(" ", text))
    bare = degrees and any(not _negated(m) for m in _BARE_EP.finditer(rest))
    if bare or any(not _negated(m) for m in _EXPERTS_ACROSS.finditer(raw)):
        degrees.setdefault("EP", 0)
    lead = _LEADING_COPIES.match(raw)
    rest = _COPIES.search(_DEGREE.sub(" ", _FLAG.sub(" ", text)))
    copies = lead.group(1) if lead else (next(g for g in rest.groups() if g) if rest else None)
    return degrees, attention, None if copies is None else int(copies)


def _negated(m: re.Match) -> bool:
    """Whether the words beside a match say its feature is off (``semantics.said_off``)."""
    return said_off(m.string, m.start(), m.end())


def _attention_words(text: str) -> tuple[str, bool, list[tuple[str, int]]]:
    """(``text`` without its attention-DP and wide-EP words, whether they state attention DP,
    the DP degrees they give): "ADP8", "attn-DP", "DP8 attention", "WideEP 8" (read as "EP 8"
    with attention DP); a word said to be off ("ADP off", "no WideEP") states nothing."""
    attention, found = False, []

    def wide(m: re.Match) -> str:
        nonlocal attention
        attention = attention or not _negated(m)
        return " " if _negated(m) else " EP"

    text = _WIDE_EP.sub(wide, text)
    for m in _ATTENTION_DP.finditer(text):
        if _negated(m):
            continue
        attention = True
        degree = m.group(1) or m.group(2) or m.group(3)
        if degree:
            found.append(("DP", int(degree)))
    return _ATTENTION_DP.sub(" ", text), attention, found


def _shape(degrees: dict[str, int], attention_dp: bool) -> tuple[int, int, int, int]:
    """(tensor, pipeline, data-parallel replicas, attention ranks) of stated degrees, before
    the row's GPUs say how many replicas run (``layout_of``)."""
    pp, dp, ep = degrees.get("PP", 1), degrees.get("DP", 1), degrees.get("EP")
    # an expert degree with no tensor degree: the engines split experts within the tensor group
    # (TensorRT-LLM's moe_expert_parallel_size, SGLang's --ep-size), so "EP8" is TP8 EP8 and
    # "ADP8 EP8" attention DP over it; "DP4 TP2 EP8" keeps its TP2 (vLLM's ranks, below)
    alone = bool(ep) and (attention_dp or "DP" not in degrees)
    tp = degrees.get("TP") or (ep if alone else 1)
    ranks = 1
    if attention_dp:  # a DP degree stated with it is the attention's ranks, else the whole group
        ranks = dp if "DP" in degrees else tp
        tp, dp = max(tp, dp), 1
    elif dp > 1 and (ep == 0 or (ep and ep > tp * pp)):
        # vLLM's --data-parallel-size with --enable-expert-parallel, or data-parallel ranks with
        # more experts split than one rank's GPUs ("DP8 EP8", "DP4 TP2 EP8"): ranks of attention
        # TP each, sharing their experts over them all
        tp, dp, ranks = tp * dp, 1, dp
    return tp, pp, dp, ranks


def layout_of(
    text, gpus: int, where: str, field: str = "parallelism", whole: str = "the row"
) -> Layout | None:
    """The layout a text states (None: not given). "TP2", "TP4PP2", "TP2xPP2 x2", "TP1 x8"
    (eight replicas), "TP8 (EP8, attn-DP)", "TP8 DP2 attn-DP", "DP2 TP4", "DEP8", "--tp 8 --dp 8
    --enable-dp-attention". With attention data parallelism a DP degree is the attention's ranks
    (an instance spans max(TP, DP) GPUs; "TP8 DP2 attn-DP": two ranks of attention TP4; without
    a DP degree every GPU attends alone), otherwise DP counts replicas, unless more experts are
    split than one replica's GPUs ("DP8 EP8", "DP4 TP2 EP8": ranks sharing their experts, as
    vLLM's data parallelism with expert parallelism runs). An expert degree alone is the tensor
    group's ("EP8": TP8 EP8; "ADP8 EP8", "WideEP 8": with attention DP). Without a replica count
    an instance is repeated over the row's GPUs. Degrees must be whole numbers >= 1 that fit the
    row's GPUs: anything else is an error naming the field."""
    if is_missing(text):
        return None
    raw = str(text)
    degrees, attention_dp, copies = _degrees(raw, where, field)
    if not {"TP", "PP", "EP", "DP"} & set(degrees):
        if re.search(r"(?<![A-Za-z])(TP|PP|EP)\b(?!\s*\d)", _ATTENTION_DP.sub(" ", raw)):
            raise SpecError(
                where, field, f"{raw!r} names a degree without its number", "write e.g. TP8"
            )
        return None  # free text ("n/a (see configs)", "world size 8"): the operator's choice
    tp, pp, dp, ranks = _shape(degrees, attention_dp)
    if tp % ranks:
        raise SpecError(
            where,
            field,
            f"{raw!r} splits the attention of TP{tp} into {ranks} data-parallel ranks",
            f"the attention's DP degree divides the tensor degree, e.g. TP{tp} DP{_divisor_below(tp, ranks)} attn-DP",
        )
    instance = tp * pp
    expert = degrees.get("EP") or (instance if "EP" in degrees else None)
    if copies is None and dp == 1 and gpus % instance == 0:
        replicas = gpus // instance  # "TP8" on 16 GPUs: two instances
    else:
        replicas = dp * (copies or 1)
    layout = Layout(tp, pp, expert, ranks, replicas)
    if layout.gpus != gpus and "DP" in degrees and "EP" in degrees and ranks == 1 and tp % dp == 0:
        # SGLang's "--tp 8 --dp 8 --ep 8": the DP ranks within the tensor group (its DP
        # attention), where that is the one reading that fits the row's GPUs (without experts
        # split, "TP8 DP2" is vLLM's replicas: on 8 GPUs an error)
        within = Layout(tp, pp, expert, dp, copies or 1)
        layout = within if within.gpus == gpus else layout
    if layout.gpus != gpus:
        raise SpecError(
            where,
            field,
            f"{raw!r} uses {layout.gpus} GPUs but {whole} has {gpus}",
            f"the degrees (TP x PP x replicas) must multiply to the GPUs {whole} has",
        )
    if layout.expert is not None and layout.expert > instance:
        raise SpecError(
            where,
            field,
            f"EP{layout.expert} in {raw!r} is larger than the instance's {instance} GPUs",
            "the expert degree spans GPUs of one instance",
        )
    return layout


def _divisor_below(n: int, k: int) -> int:
    """The largest divisor of ``n`` not above ``k``."""
    return max(d for d in range(1, min(n, k) + 1) if n % d == 0)


def row_layout(parallelism, notes: str, scenario: str | None, gpus: int, where: str):
    """The layout of a row for its scenario: the ``parallelism`` cell's part for the scenario,
    else degrees or launch flags in the notes; None where neither states one. A cell that
    names layouts for other scenarios only is an error (the row's own is not stated)."""
    part = scenario_part(parallelism, scenario)
    if part.others_only:
        raise SpecError(
            where,
            "parallelism",
            f"{str(parallelism)!r} names layouts for {', '.join(part.labelled)} only, "
            f"not for this {scenario or 'unstated'} row",
            "give the row's own layout (e.g. 'Server: TP4 x2; Offline: TP8')",
        )
    layout = layout_of(part.text, gpus, where) if part.text else None
    if layout is None and notes:
        stated = notes_layout(scenario_part(notes, scenario).text)
        layout = layout_of(stated, gpus, where, "notes") if stated else None
    return layout


_NOTES_LAYOUT = re.compile(r"\b(?:layout|parallelism)\s*[:=]\s*([^;|]+)", re.IGNORECASE)
#: Launch flags (the degree flags of ``_FLAGS`` written with their dashes).
_LAUNCH = re.compile(
    r"--(?:" + "|".join(_FLAGS.values()) + r")(?:\s*[=:]\s*|\s+)\d+"
    r"|--enable-dp-attention|--enable-expert-parallel|--enable-(?:deep)?ep-moe",
    re.IGNORECASE,
)


def notes_layout(notes: str) -> str:
    """The layout free-text notes state: a part labelled "layout:" or "parallelism:", else
    their launch flags ("--tp 8 --enable-dp-attention"); "" when they state none (other
    numbers in notes, "18 nodes x 4 accelerators", are not a layout)."""
    m = _NOTES_LAYOUT.search(notes)
    if m:
        return m.group(1)
    return " ".join(_LAUNCH.findall(notes))


# --- disaggregation -----------------------------------------------------------------------------

_ROLE = re.compile(
    r"^\s*(prefill|context|ctx|p|decode|generation|gen|d)\s*[:=]\s*(.*)$", re.IGNORECASE
)
#: The labels of a prefill part (the rest label a decode part).
_PREFILL = ("prefill", "context", "ctx", "p")
#: A "," before a part's label ("Prefill: TP4 x2, Decode: DEP8"), beside ";" and "|".
_COMMA_PARTS = re.compile(
    r"\s*,(?=\s*(?:prefill|context|ctx|p|decode|generation|gen|d)\s*[:=])\s*", re.IGNORECASE
)
#: Both parts named by a full label, with or without ":" ("prefill 2xTP4 / decode 1xDEP8",
#: "decode DEP8, prefill TP4 x2", "Prefill: TP8 (EP8, attn-DP) / Decode: DEP8"): a part runs to
#: the "/", ";", "|" or "," that the other label follows, and each must state a layout degree
#: (``_PART_DEGREE``), so "prefill 8192 / decode 1024" or "prefill/decode on TP8" is no part.
_WORDED_PARTS = re.compile(
    r"^\s*(?P<first>prefill|context|decode|generation)\b\s*[:=]?\s*(?P<a>.+?)\s*[/;|,]"
    r"\s*(?P<second>prefill|context|decode|generation)\b\s*[:=]?\s*(?P<b>.+?)\s*$",
    re.IGNORECASE,
)
#: Words that count nodes or GPUs in a layout cell ("TP16 (2 nodes x 8)"): a count of its own.
_COUNT_WORDS = re.compile(r"\b(?:nodes?|gpus?|cards?|accelerators?)\b", re.IGNORECASE)
#: A layout degree as the layout cells write one ("TP4", "DEP8", "EP 8", "2xTP4", "PP2").
_PART_DEGREE = re.compile(
    r"(?:(?<![a-z])|(?<=\dx))(?:d?ep|tep|tp|pp|dp|adp)[\s-]*\d", re.IGNORECASE
)
#: TensorRT-LLM's names of its disaggregated configurations ("ctx1dep4-gen2dep4",
#: "c4dep4_g1dep4"): so many context and generation servers, each of one layout.
_SERVERS = re.compile(
    r"(?<![A-Za-z])(?:ctx|c)(\d+)((?:dep|tep|tp)\d+)[-_]+(?:gen|g)(\d+)((?:dep|tep|tp)\d+)",
    re.IGNORECASE,
)
#: Prefill and decode instances by count alone ("2P1D", "1P1D", "P4D9"): disaggregated, its
#: parts' layouts unstated.
_COUNTS_ONLY = re.compile(r"(?<![A-Za-z0-9])(?:\d+P\d+D|P\d+D\d+)(?![A-Za-z0-9])", re.IGNORECASE)
#: Workers described in words: "2 prefill worker(s) of 4 GPUs each (tp 4, ep 4, attention data
#: parallel); 4 decode workers of 16 GPUs each (tp 16, ep 16)".
_WORKERS = re.compile(
    r"(?P<count>\d+)\s+(?P<role>prefill|context|ctx|decode|generation|gen)\s+"
    r"(?:worker|instance|server|engine)s?(?:\(s\))?\s+of\s+(?P<gpus>\d+)\s+"
    r"(?:gpus?|accelerators?)(?:\s+each)?(?:\s*\((?P<layout>[^)]*)\))?",
    re.IGNORECASE,
)
_DECODE_BASIS = re.compile(r"per[\s-]+decode[\s_-]*gpu|/\s*decode[\s_-]*gpu", re.IGNORECASE)


def _says_disaggregated(notes: str, scenario: str | None) -> bool:
    """Whether notes say the row's run is disaggregated: "disaggregated" not tied to another
    scenario ("colocated Offline/Server ..., while disaggregated Interactive ..." says it of
    Interactive rows only)."""
    for m in _DISAGGREGATED.finditer(notes):
        at = m.start() + m.group(0).lower().find("disagg")
        word = re.match(r"disagg\w*", notes[at:], re.IGNORECASE)
        if word and said_off(notes, at, at + len(word.group(0))):
            continue  # "not disaggregated", "non-disagg"
        named = {w.lower() for w in MLPERF_SCENARIO_WORD.findall(m.group(0))}
        if not named or scenario in named:
            return True
    return False


#: "disaggregated" with the word before it and the three after it (where a scenario it is
#: said of would be: "Interactive disaggregated", "disaggregated prefill/decode Interactive").
_DISAGGREGATED = re.compile(r"(?:[\w/-]+\s+)?disagg\w*(?:\s+[\w/-]+){0,3}", re.IGNORECASE)


def disaggregation_of(
    row: dict, context: str, unit: str, gpus: int, where: str, scenario: str | None = None
):
    """(disaggregated, decode GPUs, decode layout text) of a row. A row is disaggregated when
    its ``disaggregated`` column is true, its notes say so or its parallelism gives prefill and
    decode parts ("prefill: TP4 x2; decode: TP8"; or in the notes "2 prefill workers of 4 GPUs
    each (tp 4); 4 decode workers of 16 GPUs each (tp 16, ep 16)"). Its decode GPUs come from a
    ``decode_gpus`` column, those parts, or "per decode GPU" in the unit or notes (then
    ``n_gpus`` counts the decode GPUs only); None when it does not say."""
    flag = str(row.get("disaggregated") or "").strip().lower() in ("1", "true", "yes", "y")
    parallelism = "" if is_missing(row.get("parallelism")) else str(row.get("parallelism"))
    roles, sizes = _roles(parallelism, context)
    shorthand = _COUNTS_ONLY.search(parallelism)
    disaggregated = flag or bool(roles) or bool(shorthand)
    disaggregated = disaggregated or _says_disaggregated(context, scenario)
    if not disaggregated:
        return False, None, None
    given = row.get("decode_gpus")
    if not is_missing(given):
        from ..specs.schema import check_number

        value = check_number(number(given), where, "decode_gpus", minimum=1, integer=True)
        if value > gpus:
            raise SpecError(where, "decode_gpus", f"is {value} of {gpus} GPUs", "at most n_gpus")
        return True, int(value), roles.get("decode")
    if _DECODE_BASIS.search(f"{unit} {context}"):
        return True, gpus, roles.get("decode")
    if "decode" in roles:
        span = {r: sizes.get(r) or _instance_gpus(text, where) for r, text in roles.items()}
        parts = {r: layout_of(text, span[r], where) for r, text in roles.items()}
        for role, part in parts.items():
            if part is None:
                raise SpecError(
                    where,
                    "parallelism",
                    f"{roles[role]!r}: the {role} part states no degrees",
                    "give each part's degrees and replicas (e.g. 'prefill: TP4 x2; decode: TP8 x1')",
                )
        decode = parts["decode"]
        prefill_gpus = parts["prefill"].gpus if "prefill" in parts else 0
        if decode is not None and decode.gpus + prefill_gpus == gpus:
            return True, decode.gpus, roles["decode"]
        raise SpecError(
            where,
            "parallelism",
            f"{parallelism!r}: prefill and decode GPUs do not add up to the row's {gpus}",
            "give each part's degrees and replicas (e.g. 'prefill: TP4 x2; decode: TP8 x1')",
        )
    return True, None, None


def _roles(parallelism: str, context: str) -> tuple[dict[str, str], dict[str, int]]:
    """The prefill and decode parts a row states, ({role: layout text}, {role: GPUs}): from
    its parallelism ("prefill: TP4 x2; decode: TP8") or its notes' workers ("2 prefill
    worker(s) of 4 GPUs each (tp 4, ...)")."""
    roles: dict[str, str] = {}
    sizes: dict[str, int] = {}
    found = []  # (role, text, said alone: a full label apart by ";" or "|")
    for segment in re.split(r"\s*[;|]\s*", parallelism):
        pieces = _COMMA_PARTS.split(segment)
        for piece in pieces:
            m = _ROLE.match(piece)
            if m is not None:
                label = m.group(1).lower()
                alone = len(pieces) == 1 and label not in ("ctx", "gen", "p", "d")
                found.append(("prefill" if label in _PREFILL else "decode", m.group(2), alone))
    # a short label ("ctx=8192", "p=2") or a part after a comma names a part only beside a
    # part of the other role ("Prefill: 4 GPUs, Decode: 4 GPUs"; its degrees are checked
    # where it is read); "prefill: ..." apart by ";" always does
    both = len({role for role, _, _ in found}) == 2
    for role, text, alone in found:
        if alone or both:
            roles[role] = text
    worded = _WORDED_PARTS.match(parallelism) if len(roles) < 2 else None
    if worded and all(_PART_DEGREE.search(worded.group(g)) for g in ("a", "b")):
        parts = [
            (worded.group("first"), worded.group("a")),
            (worded.group("second"), worded.group("b")),
        ]
        named = {("prefill" if w.lower() in _PREFILL else "decode"): text for w, text in parts}
        if len(named) == 2:
            roles = named
    servers = _SERVERS.search(parallelism)
    if servers and not roles:  # "ctx1dep4-gen2dep4": one context server of DEP4, two of gen
        roles["prefill"] = f"{servers.group(2)} x{servers.group(1)}"
        roles["decode"] = f"{servers.group(4)} x{servers.group(3)}"
    for m in _WORKERS.finditer(context):
        role = "prefill" if m.group("role").lower() in ("prefill", "context", "ctx") else "decode"
        layout = (m.group("layout") or "").split(";")[0]
        roles.setdefault(role, f"{layout} x{m.group('count')}")
        sizes[role] = int(m.group("count")) * int(m.group("gpus"))
    return roles, sizes


def prefill_pool_of(row: dict, context: str, where: str) -> Layout | None:
    """The prefill instances a disaggregated row states ("prefill: TP4 x2" in its
    parallelism, or its notes' prefill workers), or None where it does not say."""
    parallelism = "" if is_missing(row.get("parallelism")) else str(row.get("parallelism"))
    roles, sizes = _roles(parallelism, context)
    if "prefill" not in roles:
        return None
    text = roles["prefill"]
    return layout_of(text, sizes.get("prefill") or _instance_gpus(text, where), where)


def stated_gpus(parallelism) -> int | None:
    """The GPUs a parallelism cell's one layout spans as written ("DEP8": 8, "TP4 x2": 8), for
    a row that states no GPU count; None where the cell states no degree, names prefill and
    decode parts, reads as no layout, counts nodes or GPUs in words ("TP16 (2 nodes x 8)"), or
    gives tensor and data degrees, which the GPU count tells apart (SGLang's "TP8 DP8" on 8
    GPUs, vLLM's replicas "TP8 DP2" on 16)."""
    text = "" if is_missing(parallelism) else str(parallelism)
    if not _PART_DEGREE.search(text) or _roles(text, "")[0] or _COUNTS_ONLY.search(text):
        return None
    kinds = {m.group(1).upper() for m in _DEGREE.finditer(text)}
    if {"TP", "DP"} <= kinds or _COUNT_WORDS.search(text):
        return None
    try:
        return _instance_gpus(text, "parallelism")
    except SpecError:
        return None


def _instance_gpus(text: str, where: str) -> int:
    """GPUs a layout text spans as written (its degrees times its replica count)."""
    degrees, attention, copies = _degrees(text, where)
    tp, pp, dp, _ = _shape(degrees, attention)
    return tp * pp * dp * (copies or 1)
