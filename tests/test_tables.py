"""The paper's Tables 2-6 (docs/paper-inputs.md) reproduced with Part A."""

import numpy as np
import pytest

from inference_econ.studies.tables import matches_paper, run_table
from inference_econ.studies.tables import within_tolerance as within


def test_tolerance_allows_the_rounding_of_the_printed_value():
    assert within(11.3, 11, 0.01)  # printed as 11: anything in [10.5, 11.5]
    assert not within(11.6, 11, 0.01)
    assert within(0.0949, 0.09, 0.01) and not within(0.0951, 0.09, 0.01)
    assert within(1009.0, 1000, 0.01) and not within(1011.0, 1000, 0.01)


@pytest.mark.parametrize("name", ["table-2", "table-3", "table-4", "table-6"])
def test_table_matches_the_paper(name, reproduced_all):
    table = reproduced_all[2][name]
    assert matches_paper(table)
    for _, row in table.iterrows():
        assert within(row.tokens_per_s, row.paper_tokens_per_s, 0.01), (row.label, row.tokens_per_s)
        assert within(row.gpus, row.paper_gpus, 0.10), (row.label, row.gpus)
        if "paper_usd_per_mtok" in row:
            assert within(row.usd_per_mtok, row.paper_usd_per_mtok, 0.01), (
                row.label,
                row.usd_per_mtok,
            )
            assert within(row.batch, row.paper_batch, 0.10), (row.label, row.batch)


def test_table_5_is_computed_and_printed_beside_the_paper(reproduced_all):
    tables = reproduced_all[2]
    table = tables["table-5"]
    assert not matches_paper(table)  # docs/deviations.md: the paper's Table 5 used other code
    assert list(table.attrs["columns"]) == [
        "label",
        "tokens_per_s",
        "usd_per_mtok",
        "gpus",
        "batch",
        "paper_tokens_per_s",
        "paper_usd_per_mtok",
        "paper_gpus",
        "paper_batch",
    ]
    rows = table.set_index("label")
    # our Table 5 row 1 is the same setting as Table 6's 16-bit row (the paper's are not)
    assert rows.loc["Llama 3 70B", "tokens_per_s"] == pytest.approx(
        tables["table-6"].set_index("label").loc["16-bit weights", "tokens_per_s"]
    )
    # speculative decoding is faster at no higher cost, for both models
    for base in ("Llama 3 70B", "Llama 3.1 405B"):
        assert rows.loc[base + " (S)", "tokens_per_s"] > rows.loc[base, "tokens_per_s"]
        assert rows.loc[base + " (S)", "usd_per_mtok"] <= rows.loc[base, "usd_per_mtok"]
    assert table.attrs["notes"]


def test_paper_table_5_preset_gives_the_printed_table_5():
    # the authors' earlier code (five differences from Part A, docs/deviations.md): every row of
    # the paper's Table 5 within the tolerances of the other tables
    table = run_table("table-5", assumptions="paper-table-5")
    assert matches_paper(table)
    for _, row in table.iterrows():
        assert within(row.tokens_per_s, row.paper_tokens_per_s, 0.01), (row.label, row.tokens_per_s)
        assert within(row.usd_per_mtok, row.paper_usd_per_mtok, 0.01), (row.label, row.usd_per_mtok)
        assert within(row.gpus, row.paper_gpus, 0.10), (row.label, row.gpus)
        assert within(row.batch, row.paper_batch, 0.10), (row.label, row.batch)


def test_rows_carry_their_layout_and_breakdown(reproduced_all):
    table = reproduced_all[2]["table-3"]
    assert {
        "pipeline_degree",
        "tensor_degree",
        "expert_degree",
        "draft_tokens",
        "collective_latency_s",
    } <= set(table.columns)
    deepseek = table.set_index("label").loc["DeepSeek-V3 (8-bit)"]
    assert deepseek.expert_degree > 1 and deepseek.draft_tokens > 1
    assert np.isfinite(deepseek.latency_s)
