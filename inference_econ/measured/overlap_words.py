"""How a measured row states its engine moved a MoE's tokens (docs/model-part-f.md §F7): whether
it ran two-batch overlap - SGLang's ("--enable-two-batch-overlap", "enable_two_batch_overlap:
true", "two-batch overlap", "TBO") or vLLM's dual-batch overlap ("--enable-dbo", "dual-batch
overlap", "DBO"); off where the row says so ("--no-enable-dbo", "no TBO", "without two-batch
overlap", "TBO off") - the expert exchange's backend it launched (SGLang's
``--moe-a2a-backend``, vLLM's ``--all2all-backend`` or ``VLLM_ALL2ALL_BACKEND``), and the blocks
SGLang ran on each attention rank (``--moe-dense-tp-size 1``, ``--enable-dp-lm-head``)."""

from __future__ import annotations

import re

from ..errors import SpecError
from .semantics import scenario_part

_KEY = r"(?:two|dual)[\s_-]*batch[\s_-]*overlap|(?<![a-z0-9])[td]bo\b"
_OVERLAP = re.compile(
    rf"(?P<neg>--no-|\bno\s+|\bwithout\s+)?(?:--)?(?:enable[\s_-]*)?(?:{_KEY})"
    r"(?:['\"]?\s*[:=]\s*['\"]?(?P<value>[^\s;,)'\"|]*)|\s+(?P<word>on|off|enabled|disabled)\b)?",
    re.I,
)
_ON = ("true", "on", "yes", "1", "enabled")
_OFF = ("false", "off", "no", "0", "disabled")


def _switched(m: re.Match, name: str, flags: str, where: str, field: str) -> bool:
    """Whether a switch's match (groups ``neg``, ``value``, ``word``) says on; a value that is
    not on or off is the row's ``SpecError`` naming ``name`` and its ``flags``."""
    said = (m.group("value") or m.group("word") or "true").lower()
    if said not in _ON + _OFF:
        raise SpecError(
            where,
            field,
            f"{name} {said!r} is not read",
            f"give true or false (or the flag alone, {flags})",
        )
    return not m.group("neg") and said in _ON


def overlap_of(text, scenario: str | None, notes: str = "", where: str = "") -> bool | None:
    """Whether a row states two-batch overlap on (True) or off (False), in
    ``batch_or_concurrency`` or else the notes (the row's scenario part); None where it does
    not say. A value not read, or both for one scenario, is the row's ``SpecError``."""
    for field, cell in (("batch_or_concurrency", text), ("notes", notes)):
        found = set()
        for m in _OVERLAP.finditer(scenario_part(cell, scenario).text):
            flags = "--enable-two-batch-overlap or --enable-dbo"
            found.add(_switched(m, "two-batch overlap", flags, where, field))
        if len(found) > 1:
            raise SpecError(
                where, field, "states two-batch overlap both on and off", "keep the one it ran"
            )
        if found:
            return found.pop()
    return None


#: The exchange backends of SGLang (``--moe-a2a-backend``, server_args.py) and vLLM
#: (``--all2all-backend``, vllm/config/parallel.py) by how they move a MoE's tokens (§F7):
#: ``gather`` - no all-to-all: under attention data parallelism every rank's tokens are
#: all-gathered before the MoE and its output reduce-scattered (SGLang's ``none``, its
#: default; vLLM's ``allgather_reducescatter``, its default, and ``naive``); ``deepep`` -
#: DeepEP's all-to-all kernels; ``all_to_all`` - another library's all-to-all (AMD's MoRI,
#: Mooncake's EP, pplx-kernels, FlashInfer's, NIXL's, Ascend's fused EP).
EXCHANGE_BACKENDS = {
    "none": "gather",
    "allgather_reducescatter": "gather",
    "naive": "gather",
    "deepep": "deepep",
    "deepep_low_latency": "deepep",
    "deepep_high_throughput": "deepep",
    "mori": "all_to_all",
    "mooncake": "all_to_all",
    "pplx": "all_to_all",
    "flashinfer": "all_to_all",
    "flashinfer_all2allv": "all_to_all",
    "nixl": "all_to_all",
    "nixl_ep": "all_to_all",
    "ascend_fuseep": "all_to_all",
}
_EXCHANGE = re.compile(
    r"(?:--)?(?:moe[\s_-]*a2a[\s_-]*backend|(?:vllm_)?all2all[\s_-]*backend)['\"]?"
    r"(?:\s*[:=]\s*|\s+)['\"]?(?P<value>[^\s;,)'\"|]*)",
    re.I,
)
#: An exchange library named in words ("with DeepEP", "MoRI-EP", "pplx-kernels") or by SGLang's
#: switch before --moe-a2a-backend (``--enable-deepep-moe``, 0.4); read where no backend flag
#: is; negated ("without DeepEP", "DeepEP off") it says nothing of what ran instead.
_LIBRARY = re.compile(
    r"(?P<neg>\b(?:no|not|without)\s+)?(?:--enable-)?\b(?P<lib>deepep|mori|pplx)\b"
    r"(?:[\s_-]*(?:ep|kernels|moe))?(?P<off>\s+(?:off|disabled|not\s+used))?",
    re.I,
)
LIBRARIES = {"deepep": "deepep", "mori": "all_to_all", "pplx": "all_to_all"}


def exchange_of(text, scenario: str | None, notes: str = "", where: str = "") -> str | None:
    """How a row states its engine exchanged a MoE's tokens (``EXCHANGE_BACKENDS``: gather,
    deepep or all_to_all), read from the backend it names in ``batch_or_concurrency`` or else
    the notes (the row's scenario part), or else from a library it names (``_LIBRARY``); None
    where it names none. A backend not known, or two of different kinds for one scenario, is
    the row's ``SpecError``."""
    for field, cell in (("batch_or_concurrency", text), ("notes", notes)):
        part = scenario_part(cell, scenario).text
        found = set()
        for m in _EXCHANGE.finditer(part):
            name = m.group("value").lower().replace("-", "_")
            if name not in EXCHANGE_BACKENDS:
                raise SpecError(
                    where,
                    field,
                    f"expert exchange backend {m.group('value') or '(no value)'!r} is not read",
                    f"give one of {', '.join(sorted(EXCHANGE_BACKENDS))}",
                )
            found.add(EXCHANGE_BACKENDS[name])
        if not found:
            found = {
                LIBRARIES[m.group("lib").lower()]
                for m in _LIBRARY.finditer(part)
                if not (m.group("neg") or m.group("off"))
            }
        if len(found) > 1:
            raise SpecError(
                where,
                field,
                f"states expert exchange backends of {len(found)} kinds ({', '.join(sorted(found))})",
                "keep the one it ran",
            )
        if found:
            return found.pop()
    return None


#: SGLang's switches that run a MoE model's blocks on each attention-DP rank instead of
#: tensor-parallel over the instance (docs/model-part-f.md §F7, §F8): ``--moe-dense-tp-size 1``,
#: its dense layers (``enable_moe_dense_fully_dp``, python/sglang/srt/layers/communicator.py;
#: ServerArgs takes 1 or none), and ``--enable-dp-lm-head``, its embedding and output head.
_DENSE_DP = re.compile(
    r"(?<![a-z0-9_])(?:--)?moe[\s_-]*dense[\s_-]*tp[\s_-]*size['\"]?(?:\s*[:=]\s*|\s+)['\"]?"
    r"(?P<value>[^\s;,)'\"|]*)",
    re.I,
)
#: The head's flag takes a value after ":" or "=", or a word of ``_ON`` or ``_OFF`` after a
#: space ("--enable-dp-lm-head false"); neither flag is read inside a longer name.
_DP_LM_HEAD = re.compile(
    r"(?<![a-z0-9_])(?P<neg>--no-)?(?:--)?enable[\s_-]*dp[\s_-]*lm[\s_-]*head(?![a-z0-9_])"
    r"(?:['\"]?\s*[:=]\s*['\"]?(?P<value>[^\s;,)'\"|]*)"
    r"|\s+(?P<word>true|false|on|off|yes|no|enabled|disabled)\b)?",
    re.I,
)


def rank_blocks_of(text, scenario: str | None, notes: str = "", where: str = "") -> tuple:
    """The blocks a row states SGLang ran on each attention rank: ``dense`` (its dense layers,
    ``--moe-dense-tp-size 1``) and ``vocabulary`` (its embedding and output head,
    ``--enable-dp-lm-head``), in ``batch_or_concurrency`` or the notes (the row's scenario
    part); () where it states neither. A dense size other than 1, or a value not read, is the
    row's ``SpecError``."""
    blocks = set()
    for field, cell in (("batch_or_concurrency", text), ("notes", notes)):
        part = scenario_part(cell, scenario).text
        for m in _DENSE_DP.finditer(part):
            if m.group("value") != "1":
                raise SpecError(
                    where,
                    field,
                    f"moe_dense_tp_size {m.group('value') or '(no value)'!r} is not read",
                    "give 1, the only size SGLang takes, or leave it out (tensor-parallel)",
                )
            blocks.add("dense")
        for m in _DP_LM_HEAD.finditer(part):
            if _switched(m, "enable_dp_lm_head", "--enable-dp-lm-head", where, field):
                blocks.add("vocabulary")
    return tuple(sorted(blocks))
