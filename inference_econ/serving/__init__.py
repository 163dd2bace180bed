"""Serving: what is served (a Setting) and how - decode steps, speculative decoding, prefill,
requests, disaggregation, context-parallel prefill and the toy models."""
