"""Inverse economics: what observed API speeds and prices imply (docs/model.md Part D).

Each module answers one question about an observed offer (``studies/observations.py``):
``feasibility`` (which settings put it on or inside the frontier), ``margin`` (the provider's
price against our cost at that speed), ``preference`` (the exponent k of speed^k/price that
explains where providers sit on their frontiers) and ``size`` (which model sizes of a family
put a closed model's offer on the frontier). ``variants`` enumerates the settings tried and
``grid`` evaluates them once for every acceptance rate.
"""
