"""``python -m inference_econ``: the command line, as ``inference-econ`` runs it."""

from .cli import main

main()
