"""The optimiser: the method (grid, discrete, exhaustive), the search over (GPUs, batch) and
the Pareto frontier it returns."""
