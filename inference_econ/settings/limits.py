"""Bounds shared by the options of several groups: the most GPUs, tokens, seconds and list
values any option takes, and the range of an observed speed or price.

Each keeps every figure computed from an option finite, far beyond any real deployment.
"""

from __future__ import annotations

#: Most GPUs of one instance (the search grid stops at 2^18).
MAX_GPUS = 2**20
#: Most tokens of a context, prompt or response (far beyond any model; keeps every count finite).
MAX_TOKENS = 1e12
#: Most values of a list setting (each is a computation of its own).
MAX_ITEMS = 64
#: Largest observed speed (tokens/s), price ($/Mtok), blend ratio or markup: far beyond any
#: offer (the fastest APIs serve a few thousand tokens/s), so every ratio of them stays finite.
MAX_OBSERVED = 1e6
#: Smallest observed speed or price: a millionth of a token a second or of a dollar per Mtok,
#: so that the model's figure over an observed one stays below 1e12 (--price 1e-300 had
#: printed a markup of 300 digits).
MIN_OBSERVED = 1e-6
#: Longest latency target or limit, in seconds (11.6 days).
MAX_SECONDS = 1e6
#: The unit and bounds of a precision in bits (of weights, activations, the KV cache).
BITS = dict(unit="bits", minimum=1, maximum=32)
#: Weights and activations: at most 16, the widest format the GPU files state a tensor-core
#: rate for (no engine serves 32-bit GEMMs; a float32 checkpoint is served in 16 bits).
GEMM_BITS = dict(BITS, maximum=16)
