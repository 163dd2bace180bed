"""Specs: YAML files into frozen, validated dataclasses (GPUs, model architectures) and the
catalog that finds them by name; the lowest layer (docs/architecture.md)."""
