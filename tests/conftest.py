"""Shared fixtures: the paper's settings, built once per test session."""

import os

import pytest

# The suite's budget is CPU seconds: the grid search runs on one thread, its cheapest (a
# second thread cuts wall time by ~1/6 for ~1/3 more CPU). Command-line tests in subprocesses
# inherit it; test_frontier checks that threads give the same frontier.
os.environ.setdefault("INFERENCE_ECON_THREADS", "1")

import inference_econ as ie


@pytest.fixture(scope="session")
def h100():
    return ie.load_hardware("H100-paper")


@pytest.fixture(scope="session")
def llama70_8bit_frontier():
    return ie.frontier("Llama 3 70B", "H100-paper", weight_bits=8)


@pytest.fixture(scope="session")
def bound_agrees_with_parts():
    """A check of a result row: its ``bound`` names the side holding at least 90 % of the read
    and arithmetic parts of its breakdown, or says ``mixed`` when neither does."""

    def check(row) -> bool:
        reads = row.weight_read_s + row.kv_read_s + row.activation_read_s
        share = row.arithmetic_s / (reads + row.arithmetic_s)
        return {"memory": share <= 0.1, "compute": share >= 0.9, "mixed": 0.1 < share < 0.9}[
            row.bound
        ]

    return check
