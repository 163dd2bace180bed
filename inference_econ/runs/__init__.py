"""Runs: a scenario file run end to end (``runner``) and a study's cells run, cached and
written with their manifest (``study_run``)."""
