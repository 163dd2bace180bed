"""Studies: scenario files, the paper's tables, what-if sweeps, price ratios and measured data."""
