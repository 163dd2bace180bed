"""The cost model: pure functions and small classes that turn an architecture, a GPU and the
assumptions into the time, bytes, FLOP and dollars of one forward pass (docs/model.md Part A-B)."""
