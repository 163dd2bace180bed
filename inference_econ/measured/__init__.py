"""Measured public results against the model: reading benchmark files (``reading``),
predicting their rows (``predicting``, ``closed_forms``, ``comparison``) and calibrating
efficiencies to them (``calibration``)."""
