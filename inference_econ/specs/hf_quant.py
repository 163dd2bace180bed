"""The weight precision of a Hugging Face checkpoint: ``quantization_config`` in its config.json,
or a ModelOpt ``hf_quant_config.json`` beside it (read by ``hf_import``)."""

from __future__ import annotations

from ..errors import SpecError, short
from .schema import check_number

#: Weight-only formats: 4- or 8-bit weights dequantized into 16-bit GEMMs (W4A16, W8A16).
WEIGHT_ONLY = ("awq", "gptq", "aqlm", "hqq", "bitsandbytes", "eetq", "gptq_marlin", "awq_marlin")
#: Formats that quantise the layers' linear weights only: the embedding table and output head
#: stay in the checkpoint's 16 bits (AutoAWQ and GPTQ leave ``embed_tokens`` and ``lm_head``
#: out; a 72B AWQ checkpoint holds 2.5B such weights, 5 GB at 16 bits, 1.2 GB had they been 4).
KEEPS_EMBEDDINGS = ("awq", "gptq", "awq_marlin", "gptq_marlin")
#: Config keys of a MoE layer's routed expert count, by family.
EXPERT_COUNT_KEYS = ("num_local_experts", "n_routed_experts", "num_experts")
#: quant_method -> weight bits for formats whose width is fixed (MXFP4: 4-bit elements and an
#: 8-bit scale per block of 32, 4.25 bits a weight, as the shipped gpt-oss files state it).
QUANT_BITS = {"fp8": 8, "fbgemm_fp8": 8, "mxfp4": 4.25, "nvfp4": 4, "fp_quant": 4, "hqq": 4}


def precision_of(cfg: dict, quant: dict | None, source: str) -> dict:
    """Bits per weight (and per KV-cache element where the checkpoint says) from
    ``quantization_config`` or a ModelOpt ``hf_quant_config.json``, else 16 (a float32
    checkpoint too: engines serve it in 16 bits). A weight-only format (AWQ, GPTQ, ...)
    multiplies in 16 bits (``gemm_activation_bits``); a MoE checkpoint that leaves its
    attention unquantized (``modules_to_not_convert``, compressed-tensors' ``ignore``: gpt-oss's
    MXFP4 experts beside BF16 attention, router and embeddings) keeps 16-bit dense weights."""
    out: dict[str, float] = {"weight_bits": 16, "activation_bits": 16}
    if isinstance(quant, dict) and isinstance(quant.get("quantization"), dict):
        algo = str(quant["quantization"].get("quant_algo") or "").upper()
        bits = _modelopt_bits(algo, "hf_quant_config.json")
        out["weight_bits"] = bits
        kv = str(quant["quantization"].get("kv_cache_quant_algo") or "").upper()
        if kv:
            out["kv_cache_bits"] = _modelopt_bits(kv, "hf_quant_config.json")
        return out
    qc = cfg.get("quantization_config")
    if qc is not None and not isinstance(qc, dict):  # (it had been ignored: 16-bit weights)
        raise SpecError(
            source,
            "quantization_config",
            f"expected a mapping of the quantization's fields, got {short(qc)}",
            "give the config as the checkpoint has it",
        )
    if isinstance(qc, dict):
        out["weight_bits"] = _quant_config_bits(qc, source)
        method = str(qc.get("quant_method") or "").lower()
        if out["weight_bits"] == 8 and _block_scaled(qc, method, source):
            out["weight_block_scaled"] = True  # read by the engines' block-scaled FP8 kernels
        if method in WEIGHT_ONLY or (method == "compressed-tensors" and not _acts_quantized(qc)):
            out["gemm_activation_bits"] = 16
        if method in KEEPS_EMBEDDINGS and out["weight_bits"] < 16:
            out["embedding_bits"] = _embedding_bits(qc, source)
        elif method == "mxfp4":  # MXFP8 activations into the MX GEMMs, as the gpt-oss files
            out["gemm_activation_bits"] = 8
        if method == "modelopt" and qc.get("kv_cache_quant_algo"):
            kv = str(qc["kv_cache_quant_algo"]).upper()
            out["kv_cache_bits"] = _modelopt_bits(kv, source)
        kept = qc.get("modules_to_not_convert") or qc.get("ignore") or []
        moe = any(_expert_count(cfg, k, source) > 1 for k in EXPERT_COUNT_KEYS)
        if moe and isinstance(kept, list) and any("attn" in str(m) for m in kept):
            out["dense_weight_bits"] = 16
        return out
    return out  # float32 checkpoints too: engines serve them in 16 bits (vLLM's dtype "auto")


def _block_scaled(qc: dict, method: str, source: str) -> bool:
    """Whether 8-bit weights carry a scale per block (DeepSeek-V3's, Qwen3's and Kimi K2's own
    FP8 releases: ``"weight_block_size": [128, 128]``; compressed-tensors' ``"strategy":
    "block"``), which the engines run with their block-scaled FP8 kernels, not per-tensor
    FP8's. A block size that is not two whole numbers is the config's error."""
    if method == "compressed-tensors":
        return any(
            isinstance(g, dict)
            and isinstance(g.get("weights"), dict)
            and g["weights"].get("num_bits") == 8
            and str(g["weights"].get("strategy") or "").lower() == "block"
            for g in (qc.get("config_groups") or {}).values()
        )
    block = qc.get("weight_block_size")
    if block is None:
        return False
    whole = isinstance(block, list) and len(block) == 2
    if not whole or any(isinstance(b, bool) or not isinstance(b, int) or b < 1 for b in block):
        raise SpecError(
            source,
            "quantization_config.weight_block_size",
            f"expected two whole numbers of rows and columns, got {short(block)}",
            "give it as the checkpoint has it, e.g. [128, 128]",
        )
    return True


def _acts_quantized(qc: dict) -> bool:
    """Whether a compressed-tensors scheme quantizes the GEMMs' input activations."""
    return any(
        isinstance(g, dict) and isinstance(g.get("input_activations"), dict)
        for g in (qc.get("config_groups") or {}).values()
    )


def _modelopt_bits(algo: str, source: str) -> int:
    for key, bits in (("NVFP4", 4), ("MXFP4", 4), ("W4A", 4), ("INT4", 4), ("FP8", 8), ("INT8", 8)):
        if key in algo:
            return bits
    raise SpecError(
        source,
        "quantization.quant_algo",
        f"unknown ModelOpt algorithm {algo!r}",
        "set precision.weight_bits in the written YAML by hand",
    )


def _whole_bits(value, source: str, field: str) -> int:
    """A checkpoint's bits per weight: a whole number from 1 to 16 (GPTQ, AWQ and
    compressed-tensors store whole-bit integers); 3.5 had been cut to 3 without a word."""
    bits = check_number(value, source, field, minimum=1, maximum=16)
    if bits != int(bits):
        raise SpecError(
            source,
            field,
            f"is {short(value)}, not a whole number of bits",
            "give the checkpoint's width as a whole number (2, 3, 4 or 8); a checkpoint that "
            "mixes widths needs a model YAML written by hand with precision.weight_bits its mean",
        )
    return int(bits)


def _quant_config_bits(qc: dict, source: str) -> float:
    method = str(qc.get("quant_method") or "").lower()
    if method in QUANT_BITS:
        return QUANT_BITS[method]
    if "bits" in qc:  # gptq, awq, aqlm, ...
        return _whole_bits(qc["bits"], source, "quantization_config.bits")
    if method == "bitsandbytes":
        return 4 if qc.get("load_in_4bit") else 8
    if method == "compressed-tensors":
        widths = [
            g["weights"]["num_bits"]
            for g in (qc.get("config_groups") or {}).values()
            if isinstance(g, dict)
            and isinstance(g.get("weights"), dict)
            and "num_bits" in g["weights"]
        ]
        if widths:
            field = "quantization_config.config_groups.weights.num_bits"
            return max(_whole_bits(w, source, field) for w in widths)
    if method == "modelopt":
        return _modelopt_bits(str(qc.get("quant_algo") or "").upper(), source)
    raise SpecError(
        source,
        "quantization_config.quant_method",
        f"cannot tell the weight bits of {method or '(no method)'!r}",
        "set precision.weight_bits in the written YAML by hand",
    )


def _expert_count(cfg: dict, key: str, source: str) -> int:
    """A routed-expert count of the config (0 where it gives none), checked as a whole number."""
    if cfg.get(key) is None:
        return 0
    return int(check_number(cfg[key], source, key, minimum=0, integer=True))


def _embedding_bits(qc: dict, source: str) -> int:
    """16: AWQ and GPTQ keep the embedding table and output head unquantised. GPTQ's
    ``"lm_head": true`` quantises the head beside a 16-bit table, two formats the model's one
    ``embedding_bits`` cannot hold, so it is refused rather than priced either way."""
    if qc.get("lm_head") is True:
        raise SpecError(
            source,
            "quantization_config.lm_head",
            "is true: a quantised output head beside a 16-bit embedding table is not modelled",
            "write the model YAML by hand (precision.embedding_bits: 16 prices both tables at "
            "16 bits, the safe side for memory)",
        )
    return 16
