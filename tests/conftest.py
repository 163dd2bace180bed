"""Shared fixtures: the paper's settings, built once per test session."""

import pytest

import inference_econ as ie


@pytest.fixture(scope="session")
def h100():
    return ie.load_hardware("H100-paper")


@pytest.fixture(scope="session")
def llama70_8bit_frontier():
    return ie.frontier("Llama 3 70B", "H100-paper", weight_bits=8)
