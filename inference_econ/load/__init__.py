"""Serving under load (docs/model.md Part E): requests arriving at random with lengths drawn from
distributions (``arrivals``, ``lengths``), latency targets (``targets``), an engine instance that
batches them continuously on a fixed layout (``engine``), the step-level simulation of it
(``simulate``) and what it yields: latency distributions, throughput, goodput, utilisation and
prices (``results``)."""
