"""The types of the model's numbers (one home): a quantity at one configuration is a float, at
a grid of configurations a numpy array, and the two broadcast together in every formula."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

#: Seconds, bytes, FLOP, degrees or counts: one float, or an array of them (broadcasting).
Floats = float | npt.NDArray[np.floating]
#: A yes/no per configuration: one bool, or a boolean array.
Flags = bool | npt.NDArray[np.bool_]
