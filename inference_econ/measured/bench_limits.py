"""The engine limits ``trtllm-bench throughput`` picks for itself when a run states none.

TensorRT-LLM's benchmark tool sizes ``max_batch_size`` and ``max_num_tokens`` from a memory
estimate of its own (``tensorrt_llm/bench``: ``get_benchmark_engine_settings`` and
``calc_engine_setting``, Apache-2.0; the performance overview's tables are run this way, its
commands setting neither). The estimate is not the engine's KV cache: it divides the memory of
the whole tensor group by a per-token size written for multi-head attention, so for an MLA model
(DeepSeek-V3/R1, whose checkpoint states 128 KV heads) it counts about 25 times the bytes the
latent cache holds, and a batch limit far below what the cache could hold follows; with
attention data parallelism that limit holds on every rank. A model whose checkpoint format the
tool does not tune (MXFP4: gpt-oss) runs at the LLM API's defaults, 2,048 requests and 8,192
tokens a step. Newer sources size MLA's latent cache and one rank's memory under attention DP;
a run stating a version from ``NEWER_ESTIMATE_FROM`` on is sized that way.

The rule, in words (docs/model-part-f.md §F9, "trtllm-bench's own limits"):

- weights counted as the checkpoint stores them (``param_count`` from the safetensors
  metadata x 2 bytes for BF16, 1 for FP8, 0.5 for NVFP4, whose 4-bit weights are stored two
  to a byte with one FP8 scale per 16);
- the KV cache gets ``kv_fraction`` of (GPU memory x GPUs - weights);
- requests = that cache over ``(input + output) x bytes per token``, with bytes per token
  ``2 x attention layers x max(tp, KV heads) x head size x KV bytes``;
- ``max_batch_size`` = min(requests, 4096) / pp, rounded up to 32 (at least 64) below 256,
  to 128 below 1,024, else to 256; ``max_num_tokens`` = min(that x (1 + input / output),
  32,768), rounded up to 256 (at least 2,048) below 4,096, to 512 below 8,192, else to 1,024;
- with chunked prefill off (its default) ``max_num_tokens`` is at least the dataset's longest
  prompt plus ``max_batch_size``, so a whole prompt always fits beside the decoding requests.

Its throughput is over the whole run: every request of the dataset queued at once, output
tokens over the time to the last completion (``Per GPU Output Throughput``). A row states its
dataset's size in a ``requests`` column; one that states none is taken to have run the
performance overview's dataset of its lengths (``overview_requests``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..specs.architecture import Architecture
from ..specs.hardware import GPU

#: The LLM API's defaults, which trtllm-bench keeps for a checkpoint format it does not tune
#: (``TorchLlmArgs`` ``max_batch_size`` and ``max_num_tokens``).
UNTUNED_LIMITS = (2048, 8192)
#: trtllm-bench's ``--kv_cache_free_gpu_mem_fraction`` default (``bench/benchmark/throughput.py``).
BENCH_KV_FRACTION = 0.90
#: The request cap before pipeline stages divide it (decoder buffers), and the token cap.
MAX_REQUESTS, MAX_TOKENS = 4096, 32768
#: The first TensorRT-LLM release assumed to size MLA's latent cache and one attention-DP rank's
#: memory (the two changes to ``calc_engine_setting`` were opened 2026-04-27 and 2026-07-22;
#: every release to 1.3 has the older estimate). An assumption, stated where it is used.
NEWER_ESTIMATE_FROM = (1, 4)
#: Requests of the performance overview's datasets by (input, output) tokens: TensorRT-LLM's
#: documented benchmarking workflow, "Preparing a Dataset" (NVIDIA/TensorRT-LLM's documentation,
#: ``performance/perf-overview.md`` @00f37686 for 1.0 and ``developer-guide/perf-overview.md``
#: @03e27c7d for 1.2; Apache-2.0).
OVERVIEW_REQUESTS = {
    (128, 128): 30000,
    (128, 2048): 3000,
    (128, 4096): 1500,
    (500, 2000): 3000,
    (1000, 1000): 3000,
    (1000, 2000): 1500,
    (1024, 1024): 3000,
    (1024, 8192): 1500,
    (1024, 32768): 1000,
    (2048, 128): 3000,
    (2048, 2048): 1500,
    (5000, 500): 1500,
    (8192, 1024): 1500,
    (20000, 2000): 1000,
    (32768, 1024): 1000,
}
#: Bytes a stored element of each tuned checkpoint format counts: trtllm-bench's own table.
_BYTES = {16: 2.0, 8: 1.0, 4: 0.5}
#: Elements stored per parameter: NVFP4 packs two 4-bit values a byte (counted as one uint8
#: element) with one FP8 scale per 16 values.
_STORED = {16: 1.0, 8: 1.0, 4: 0.5 + 1.0 / 16.0}


@dataclass(frozen=True)
class BenchLimits:
    """``max_batch_size`` and ``max_num_tokens`` of one trtllm-bench run (per attention rank
    under attention data parallelism, as the engine applies them), and how they were found."""

    max_batch_requests: int
    step_token_budget: int
    how: str


#: Words that state a run's own batch limit ("max_batch_size 384", "--max_batch_size=512",
#: "max batch 256"); "CUDA graphs up to 8192" states the graphs' sizes, not a limit.
_OWN_LIMIT = re.compile(
    r"max(?:imum)?[\s_-]*batch|batch[\s_-]*size|max[\s_-]*num[\s_-]*seqs|gpu[\s_-]*batch", re.I
)


#: A source naming TensorRT-LLM's performance overview page, whose figures are all
#: ``trtllm-bench throughput``'s ("Data in these tables is taken from the Per GPU Output
#: Throughput metric reported by trtllm-bench", ``developer-guide/perf-overview.md``).
_OVERVIEW = re.compile(r"perf[-_ ]overview|performance[-_ ]overview", re.I)
_TRTLLM = re.compile(r"tensorrt[-_ ]?llm|trt[-_ ]?llm", re.I)


#: The CUDA graphs of the performance overview's runs: ``cuda_graph_config`` with
#: ``enable_padding: true`` and these ``batch_sizes`` in every model's ``llm_options.yml``
#: (``perf-overview.md`` at v1.0, 00f37686, and at 1.2, 03e27c7d; "CUDA graphs up to 8192" in
#: a row's batch cell), so each decode-only step runs padded up to the next of them.
OVERVIEW_GRAPH_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 384, 512, 1024, 2048, 4096, 8192)


def overview_graphs(source: str, cell: str) -> tuple[int, ...]:
    """The CUDA graph batch sizes a row's decode steps are padded to: the performance
    overview's (``OVERVIEW_GRAPH_SIZES``) for a row from it whose batch cell states its CUDA
    graphs, else none (a row that does not say how its engine captured graphs)."""
    source, cell = str(source or ""), str(cell or "")
    if _OVERVIEW.search(source) and _TRTLLM.search(source) and re.search(r"cuda graph", cell, re.I):
        return OVERVIEW_GRAPH_SIZES
    return ()


def runs_own_limits(source: str, notes: str, cell: str, budget) -> bool:
    """Whether a row was run by ``trtllm-bench`` (its source, notes or batch cell say so, or
    its source is TensorRT-LLM's performance overview) with the limits it picks itself: no
    batch limit or token budget stated."""
    texts = (str(source or ""), str(notes or ""), str(cell or ""))
    bench = any(re.search(r"trtllm[-_ ]bench", t, re.I) for t in texts)
    overview = bool(_OVERVIEW.search(texts[0]) and _TRTLLM.search(texts[0]))
    if not (bench or overview):
        return False
    return budget is None and not any(_OWN_LIMIT.search(t) for t in texts[1:])


def _version(text: str | None) -> tuple[int, int] | None:
    m = re.match(r"\s*(\d+)\.(\d+)", str(text or ""))
    return (int(m.group(1)), int(m.group(2))) if m else None


#: How the tool rounds its raw figures up: (below this, to a multiple of this), and a floor.
REQUEST_ROUNDING = (((256, 32), (1024, 128), (math.inf, 256)), 64)
TOKEN_ROUNDING = (((4096, 256), (8192, 512), (math.inf, 1024)), 2048)


def _rounded(raw: float, rule) -> int:
    """``raw`` rounded up to the multiple of its band (``REQUEST_ROUNDING``,
    ``TOKEN_ROUNDING``), no lower than the band's floor where the first band holds it."""
    bands, floor = rule
    for i, (below, multiple) in enumerate(bands):
        if raw < below:
            up = multiple * math.ceil(raw / multiple)
            return int(max(floor, up) if i == 0 else up)
    raise AssertionError("the last band holds every value")


def _kv_gib_per_token(arch: Architecture, tensor: int, kv_bytes: float, newer: bool) -> float:
    """The estimate's KV bytes per token (GiB): the older sizes every model as multi-head
    attention, an MLA checkpoint's ``num_key_value_heads`` being its query heads and its head
    size ``hidden_size / heads``; the newer sizes MLA's latent and rope key once a layer."""
    att = arch.attention
    layers = arch.attention_layers
    if att.kind == "mla":
        if newer:
            return layers * (att.kv_lora_rank + att.rope_head_dim) * kv_bytes / 2**30
        heads, size = att.query_heads, arch.d_model // att.query_heads
    else:
        heads, size = att.kv_heads, att.head_dim
    return 2.0 * layers * max(tensor, heads) * size * kv_bytes / 2**30


def bench_limits(
    arch: Architecture,
    gpu: GPU,
    bits: tuple[float, float, float],
    tensor: int,
    pipeline: int,
    attention_dp: bool,
    input_tokens: float,
    output_tokens: float,
    version: str | None = None,
    kv_fraction: float | None = None,
    longest_input: float | None = None,
    chunked: bool = False,
) -> BenchLimits:
    """The limits trtllm-bench sets for a run of ``input_tokens``/``output_tokens`` on
    ``tensor`` x ``pipeline`` GPUs (see the module docstring); a checkpoint format it does not
    tune (fractional MX widths, INT4) gets ``UNTUNED_LIMITS``. Without ``chunked`` prefill
    (its default) ``max_num_tokens`` is at least the dataset's longest prompt
    (``longest_input``; the mean where not known) plus ``max_batch_size``."""
    weight_bits = float(bits[0])
    if weight_bits not in _BYTES or arch.published_total_params is None:
        what = "a format it does not tune" if weight_bits not in _BYTES else "no parameter count"
        limits = BenchLimits(*UNTUNED_LIMITS, f"the LLM API's defaults: {what}")
        return limits if chunked else _whole_prompts(limits, input_tokens, longest_input)
    v = _version(version)
    newer = v is not None and v >= NEWER_ESTIMATE_FROM
    stored = arch.published_total_params * _STORED[int(weight_bits)]
    weights_gib = stored * _BYTES[int(weight_bits)] / 2**30
    memory_gib = gpu.hbm_capacity_bytes / 2**30
    if newer and attention_dp:  # one rank's memory and its share of the weights
        free_gib = memory_gib * pipeline - weights_gib / tensor
    else:
        free_gib = memory_gib * tensor * pipeline - weights_gib
    kv_bytes = 1.0 if bits[2] <= 8 else 2.0
    per_token = _kv_gib_per_token(arch, tensor, kv_bytes, newer)
    fraction = BENCH_KV_FRACTION if kv_fraction is None else float(kv_fraction)
    requests = max(free_gib, 0.0) * fraction / (per_token * (input_tokens + output_tokens))
    raw = min(requests, MAX_REQUESTS) / pipeline
    tokens = min(raw * (1.0 + input_tokens / max(output_tokens, 1.0)), MAX_TOKENS)
    rule = "newer" if newer else "older"
    limits = BenchLimits(
        _rounded(raw, REQUEST_ROUNDING),
        _rounded(tokens, TOKEN_ROUNDING),
        f"its {rule} memory estimate",
    )
    return limits if chunked else _whole_prompts(limits, input_tokens, longest_input)


def overview_requests(input_tokens: float, output_tokens: float) -> int:
    """Requests of the performance overview's dataset of these lengths (``OVERVIEW_REQUESTS``):
    its own where it lists them, else those of the listed lengths nearest in log2 of input and
    output (an assumption: its datasets shrink as their requests lengthen)."""
    n_in, n_out = max(float(input_tokens), 1.0), max(float(output_tokens), 1.0)

    def distance(key):
        return math.hypot(math.log2(key[0] / n_in), math.log2(key[1] / n_out))

    return OVERVIEW_REQUESTS[min(OVERVIEW_REQUESTS, key=distance)]


def _whole_prompts(limits: BenchLimits, mean: float, longest: float | None) -> BenchLimits:
    """``limits`` with ``max_num_tokens`` raised to the longest prompt plus ``max_batch_size``,
    as trtllm-bench raises it when chunked prefill is off (``get_settings``), so a whole prompt
    always fits beside a full batch of decoding requests."""
    top = longest if longest is not None and math.isfinite(longest) else mean
    floor = int(math.ceil(top)) + limits.max_batch_requests
    if floor <= limits.step_token_budget:
        return limits
    how = f"{limits.how}; max_num_tokens raised to the longest prompt plus max_batch_size"
    return BenchLimits(limits.max_batch_requests, floor, how)
