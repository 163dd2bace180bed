"""The settings the search's exactness is checked on (tests/test_search_exact.py, on fewer
pipeline degrees, and benchmarks/frontier_identity.py, which adds its own): names to (model,
hardware, ``make_setting`` keywords). Plain data: no import of the package, so a benchmark can
read it for any revision's tree."""

#: Dense, mixture of experts, MLA with MTP heads, sliding windows, the engine preset, drafts,
#: a TTFT limit (the per-layout path), a demand cap and a GPU cap.
SETTINGS = {
    "dense": ("Llama 3 70B", "H100-paper", dict(weight_bits=8)),
    "dense-draft": (
        "Llama 3 70B",
        "H100-paper",
        dict(weight_bits=8, draft="Llama 3 8B", acceptance=0.8),
    ),
    "moe-table-5-draft": (
        "Mixtral 8x22B",
        "H100-paper",
        dict(assumptions="paper-table-5", draft="Llama 3 8B", context_tokens=4000),
    ),
    "mla-mtp-refined": (
        "DeepSeek-V3",
        "H200-SXM",
        dict(assumptions="refined", draft_heads="mtp", max_draft_tokens=2, context_tokens=32000),
    ),
    "sliding-windows-capped": (
        "gpt-oss-120b",
        "B200",
        dict(
            assumptions="refined",
            weight_bits=4,
            context_tokens=8000,
            max_gpus=64,
            max_throughput_tokens_per_s=2e5,
        ),
    ),
    "achievable-draft": (
        "Llama 3.3 70B",
        "H100-SXM",
        dict(assumptions="achievable", draft="Llama 3.1 8B", acceptance=0.7),
    ),
    "ttft-draft": (
        "Mixtral 8x22B",
        "H100-paper",
        dict(prompt_tokens=1000, ttft_max_s=0.5, draft="Llama 3 8B", context_tokens=2000),
    ),
}
