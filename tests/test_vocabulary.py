"""One cost vocabulary: a price's column names one thing in every output.

``usd_per_mtok`` is the decode-only price of ``point``, ``frontier``, ``study`` and the paper's
tables; a run under load gives its input, output and all-in prices under their own names
(inference_econ/columns.py), and states the input:output ratio its all-in price blends at.
"""

import pytest

import inference_econ as ie
from inference_econ import columns
from inference_econ.load.arrivals import make_traffic
from inference_econ.load.deployment import Deployment, simulate_deployment
from inference_econ.serving.requests import request
from inference_econ.serving.setting import make_setting


@pytest.fixture(scope="module")
def run():
    """Llama 3 8B on one H100 under 5 req/s of 400-token prompts and 100-token answers."""
    setting = make_setting("Llama 3 8B", "H100")
    return simulate_deployment(
        setting, Deployment(1), make_traffic(5, "400", "100", requests=300, seed=0)
    )


def test_a_run_under_load_names_its_all_in_price_apart_from_the_decode_price(run):
    # The all-in price must never be called usd_per_mtok, the decode-only price's name.
    row = run.row()
    assert columns.DECODE not in row
    assert {columns.INPUT, columns.OUTPUT, columns.ALL_IN, columns.RATIO} <= set(row)
    # the ratio is the traffic's: 400 prompt tokens per 100 output tokens
    assert row[columns.RATIO] == pytest.approx(4.0, rel=0.02)
    # all-in = the input and output prices blended at that ratio (r·input + output): the GPU
    # time is split between prompts and answers, and all of it is charged to the answers
    blended = row[columns.RATIO] * row[columns.INPUT] + row[columns.OUTPUT]
    assert row[columns.ALL_IN] == pytest.approx(blended, rel=1e-9)
    # and it is the deployment's dollars over the output tokens the offered load brings
    # (it keeps up): 5 req/s x 100 tokens
    assert run.stable
    assert row[columns.ALL_IN] == pytest.approx(1e6 * run.usd_per_hour / 3600 / 500, rel=1e-9)


def test_the_decode_only_price_is_the_paper_price_of_a_decode_step():
    """``usd_per_mtok`` of a decode point: N GPUs' price over the batch's tokens per step,
    by hand (§A7): 8 H100s at $2.10/h, batch 64, the step's latency from the same row."""
    pts = ie.points(make_setting("Llama 3 70B", "H100"), gpus=8, batch=[64.0])
    row = pts.iloc[0]
    assert row[columns.DECODE] == pytest.approx(
        8 * 2.1 / 3600 * row["latency_s"] / 64 * 1e6, rel=1e-9
    )


def test_every_price_column_of_the_outputs_is_in_the_vocabulary(run):
    setting = make_setting("Llama 3 8B", "H100", prompt_tokens=400)
    shown = [
        *ie.points(setting, gpus=1, batch=[8.0]).columns,
        *request(setting, 1, 8, 400, 100).index,
        *run.row(),
    ]
    prices = [c for c in shown if "usd_per_m" in c]
    assert prices and all(columns.price_of(c) in columns.PRICES for c in prices), prices
    assert columns.price_of("bound_usd_per_m_output_tokens_all_in") == columns.ALL_IN
    assert columns.price_of("usd_per_mtok_low90") == columns.DECODE
    assert columns.price_of("usd_per_m_output_tokens_high80") == columns.OUTPUT
    assert columns.price_of("usd_per_hour") is None
    assert columns.price_of(columns.MONTHLY) is None and columns.MONTHLY in run.row()


def test_text_tables_head_each_price_by_the_vocabulary():
    from inference_econ.output.render import HEADERS

    for name, header in columns.HEADERS.items():
        assert HEADERS[name] == header
    assert len(set(columns.HEADERS.values())) == len(columns.HEADERS)
