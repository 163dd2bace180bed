"""Measured public results against the model: reading benchmark files (``reading``),
predicting their rows (``predicting``) and calibrating efficiencies to them (``calibration``)."""
