"""The interactive HTML report: self-contained, one trace per curve with layout and breakdown on
hover, and rendered by a real browser (Debian's headless Chromium, offline)."""

import json
import math
import re
import shutil
import subprocess
import textwrap

import pytest
from click.testing import CliRunner

import inference_econ as ie
from inference_econ.cli import main

plotly = pytest.importorskip("plotly")

SCENARIO = """
title: Two GPUs
plots: [frontier]
defaults: {model: Llama 3 8B, weight_bits: 8, grid_points: 60}
curves:
  - {label: H100, hardware: H100-paper, color: darkred}
  - {label: A100, hardware: A100-paper}
  - {label: H100 (spec.), hardware: H100-paper, draft: Llama 3 8B MQA, acceptance: 0.8}
"""


@pytest.fixture(scope="module")
def report(help_example_runs):
    """The report of examples/study.yaml (6 cells: Llama 3 70B and 8B, 8-bit weights, on the
    paper's H100, A100 and V100; 60 x 60 grids) that the report example of --help wrote, from
    the folder the study example wrote (conftest.help_example_runs)."""
    folder, _ = help_example_runs
    return folder / "study.html"


def figure_json(text: str) -> dict:
    """The figure plotly embeds: Plotly.newPlot(id, data, layout, config)."""
    call = text[text.index("Plotly.newPlot(") :]
    decoder = json.JSONDecoder()
    rest = call[call.index(",") + 1 :].lstrip()
    data, end = decoder.raw_decode(rest)
    layout, _ = decoder.raw_decode(rest[end:].lstrip()[1:].lstrip())
    return {"data": data, "layout": layout}


def test_report_is_self_contained_with_a_trace_per_cell(report):
    text = report.read_text()
    # plotly.js is inline: no script, style sheet or image is fetched from anywhere
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", text)
    assert len(text) > 1_000_000 and f"plotly {plotly.__version__}" in text
    fig = figure_json(text)
    traces = fig["data"]
    assert len(traces) == 6  # one per cell
    # the menu picks a model (the curves of a view are the GPUs): 2 groups, plus "all curves"
    buttons = fig["layout"]["updatemenus"][0]["buttons"]
    assert [b["label"] for b in buttons] == [
        "all curves",
        "model: Llama 3 70B",
        "model: Llama 3 8B",
    ]
    assert buttons[1]["args"][0]["visible"] == [True] * 3 + [False] * 3
    assert [t["visible"] for t in traces] == [True] * 3 + [False] * 3
    assert [t["name"] for t in traces[:3]] == ["H100-paper", "A100-paper", "V100-paper"]
    # every trace has the same hover template: it is said once, in the layout's template
    assert "hovertemplate" not in traces[0]
    hover = fig["layout"]["template"]["data"]["scatter"][0]["hovertemplate"]
    for words in (
        "GPUs",
        "batch",
        "PP",
        "TP",
        "EP",
        "draft tokens",
        "latency",
        "where the time goes",
    ):
        assert words in hover, words
    assert fig["layout"]["yaxis"]["type"] == "log"
    for words in ("Key points", "Assumptions", "Hardware figures", "pipeline_degree_count"):
        assert words in text
    # the page's only point table is the key points: it must not claim to hold every point
    assert "hold every point" not in text and "lists the key points only" in text


def test_report_of_a_slice(report, tmp_path):
    # the --help example: report out/study --out slice.html --where hardware=H100-paper,V100-paper
    out = report.parent / "slice.html"
    folder = str(report.parent / "out" / "study")
    fig = figure_json(out.read_text())
    assert [t["name"] for t in fig["data"]] == ["H100-paper", "V100-paper"] * 2
    assert "the slice hardware = H100-paper, V100-paper" in out.read_text()
    bad = CliRunner().invoke(
        main, ["report", folder, "--out", str(tmp_path / "bad.html"), "--where", "hardware=B300"]
    )
    assert bad.exit_code == 2 and "hardware has no value 'B300'" in bad.stderr


def test_hover_data_is_the_frontier(report):
    fig = figure_json(report.read_text())
    trace = fig["data"][0]
    front = ie.frontier("Llama 3 70B", "H100-paper", weight_bits=8, grid_points=60)
    # x is encoded as a typed array: decode it
    import base64

    import numpy as np

    x = np.frombuffer(base64.b64decode(trace["x"]["bdata"]), dtype=trace["x"]["dtype"])
    assert len(x) <= 80 and x.max() == front.fastest()["tokens_per_s"]
    assert set(x) <= set(front.points["tokens_per_s"])
    custom = np.frombuffer(base64.b64decode(trace["customdata"]["bdata"]), dtype="f4")
    custom = custom.reshape(len(x), -1)
    fastest = front.fastest()
    row = custom[int(np.argmax(x))]
    assert row[0] == pytest.approx(fastest["gpus"], rel=1e-6)
    assert row[:7].tolist()[2] == pytest.approx(fastest["pipeline_degree"], rel=1e-6)
    shares = row[-7:]
    assert shares.sum() == pytest.approx(1.0, abs=1e-5)  # the parts add up to the latency


def test_scenario_report(tmp_path):
    path = tmp_path / "two.yaml"
    path.write_text(textwrap.dedent(SCENARIO))
    result = CliRunner().invoke(main, ["report", str(path), "--out", str(tmp_path / "r.html")])
    assert result.exit_code == 0, result.output
    text = (tmp_path / "r.html").read_text()
    fig = figure_json(text)
    assert [t["name"] for t in fig["data"]] == ["H100", "A100", "H100 (spec.)"]
    # the PNG's colours and line styles (output/style.py): the curve's own colour, the
    # palette's next, and speculation dashed
    lines = [(t["line"]["color"], t["line"]["dash"]) for t in fig["data"]]
    assert lines == [("#8b0000", "solid"), ("#ff7f0e", "solid"), ("#2ca02c", "dash")]
    # a log dollar axis ticked at 1, 2, 5 x 10^k, every label with its dollar sign
    y = fig["layout"]["yaxis"]
    assert y["tickmode"] == "array" and all(t.startswith("$") for t in y["ticktext"])
    assert {round(v / 10 ** math.floor(math.log10(v)), 6) for v in y["tickvals"]} == {1, 2, 5}
    # the key points as the text tables print them: short headers, so that the table fits
    table = text[text.index("<h3>Key points</h3>") :]
    for header in ("<th>tok/s</th>", "<th>$/Mtok</th>", "<th>attn TP</th>", "<th>MFU</th>"):
        assert header in table, header
    assert "<th>attention_degree</th>" not in table
    assert "real-valued GPUs, batches and degrees are the paper&#x27;s continuous model" in text
    # run --html writes the same report: the run example of --help (test_help_examples)


def test_report_hardware_table_shows_each_price_basis_a_curve_used(tmp_path):
    # one GPU on two price bases: the owned curve's price is in the table, not only the first's
    from inference_econ.output.report_sections import scenario_section
    from inference_econ.runs.runner import run_scenario

    path = tmp_path / "bases.yaml"
    path.write_text(
        "title: Two bases\nplots: [frontier]\n"
        "defaults: {model: Llama 3 8B, hardware: H100, grid_points: 20}\n"
        "curves:\n  - {label: paper, price_basis: paper}\n"
        "  - {label: owned, price_basis: owned}\n"
    )
    section = scenario_section(run_scenario(str(path)))
    table = dict(section.assumptions)["Hardware figures"].set_index("field")
    owned = ie.frontier("Llama 3 8B", "H100", price_basis="owned", grid_points=20)
    price = owned.metadata["price_usd_per_gpu_hour"]  # 1.28: the cost of owning
    assert list(table.columns) == ["H100-SXM", f"H100-SXM (owned, {price:.4g} USD/hour)"]
    assert table.loc["price_usd_per_hour"].tolist() == ["2.1", f"{price:.6g}"]
    assert table.loc["price_basis"].tolist() == ["paper", "owned"]


def test_scenario_report_key_points_show_ranges_and_which_rows_are_bounds(tmp_path):
    # the key table as run prints it: "tok/s 90 %" ranges beside the expected figures, and a
    # word per row where an expected curve is drawn beside an ideal bound
    from inference_econ.output.report_sections import scenario_section
    from inference_econ.runs.runner import run_scenario

    path = tmp_path / "mixed.yaml"
    path.write_text(
        "title: Mixed\nplots: [frontier]\n"
        "defaults: {model: Llama 3 8B, hardware: H100, discrete: true}\n"
        "curves:\n  - {label: engine, assumptions: achievable}\n"
        "  - {label: bound, assumptions: refined}\n"
    )
    result = run_scenario(str(path))
    table = scenario_section(result).key_table
    assert "tokens_per_s_low80" not in table and "usd_per_mtok_high90" not in table
    assert list(table.columns[:5]) == ["curve", "figures", "point", "tokens_per_s", "tok/s 90 %"]
    assert table["figures"].tolist() == ["expected"] * 2 + ["ideal bound"] * 2
    keys = result.key_points
    low, high = keys.loc[0, "tokens_per_s_low90"], keys.loc[0, "tokens_per_s_high90"]
    assert low < keys.loc[0, "tokens_per_s"] < high
    assert table.loc[0, "tok/s 90 %"] == f"{low:.4g}-{high:.4g}"
    assert table.loc[2, "tok/s 90 %"] == ""  # an ideal bound has no interval


def test_study_manifest_keeps_each_price_basis_of_a_gpu(tmp_path, one_worker_process):
    """A study of one GPU at two price bases keeps both in its manifest. Its two cells go to
    the worker processes of the default ``--jobs`` (``one_worker_process``)."""
    study = tmp_path / "bases.yaml"
    study.write_text(
        "title: Two bases\naxes: {price_basis: [paper, owned]}\n"
        "defaults: {model: Llama 3 8B, hardware: H100, grid_points: 20}\n"
    )
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["study", str(study), "--out", str(out), "-q"])
    assert result.exit_code == 0, result.output
    gpus = json.loads((out / "study.json").read_text())["hardware"]
    prices = {k: (v["price_basis"], round(v["price_usd_per_hour"], 3)) for k, v in gpus.items()}
    assert prices == {
        "H100-SXM": ("paper", 2.1),
        "H100-SXM (owned, 1.283 USD/hour)": ("owned", 1.283),
    }


def test_the_combined_report_keeps_figure_2():
    from inference_econ.output.report import render
    from inference_econ.output.report_sections import scenario_section
    from inference_econ.runs.runner import run_scenario

    text = render([scenario_section(run_scenario("paper/figure-2"))], "all")
    fig = figure_json(text)
    assert [t["name"] for t in fig["data"]][1] == "measured best latency"
    assert fig["layout"]["xaxis"]["ticktext"][:3] == ["5B", "10B", "20B"]
    assert "PaLM 540B" in text and "<th>measured_latency_ms</th>" in text


def test_report_of_figure_2_draws_the_square_root_law(tmp_path):
    """report paper/figure-2 had been refused as "a table scenario", while reproduce figure-2
    --html wrote the same figure's report."""
    out = tmp_path / "figure-2.html"
    result = CliRunner().invoke(main, ["report", "paper/figure-2", "--out", str(out), "-q"])
    assert result.exit_code == 0, result.output
    fig = figure_json(out.read_text())
    assert [t["name"] for t in fig["data"]][1] == "measured best latency"
    result = CliRunner().invoke(main, ["report", "paper/table-1", "--out", str(out), "-q"])
    assert result.exit_code == 2 and "paper/table-1 is a table scenario" in result.stderr


def test_toy_frontiers_draw_without_layouts():
    from inference_econ.optimise.toy import toy_frontier
    from inference_econ.output.report_figures import figure
    from inference_econ.output.report_sections import Curve, Section

    front = toy_frontier(ie.load_model("Llama 3 8B"), ie.load_hardware("H100-paper"))
    fig = figure(Section("toy", [Curve("toy", front.points)], front.points))
    hover = fig.data[0].hovertemplate
    assert "GPUs" in hover and "TP" not in hover and "where the time goes" not in hover
    result = CliRunner().invoke(main, ["reproduce", "table-1", "--html"])
    assert result.exit_code == 2 and "--html draws figures" in result.output


def test_report_of_a_missing_folder_is_one_line(tmp_path):
    result = CliRunner().invoke(main, ["report", str(tmp_path), "--out", str(tmp_path / "r.html")])
    assert result.exit_code == 2 and "inference-econ study FILE --out DIR" in result.stderr


def test_report_of_a_table_a_command_wrote_says_so(tmp_path):
    """A frontier's CSV had been read as a scenario: "not valid YAML at line 5"."""
    table = tmp_path / "frontier.csv"
    table.write_text("# Computed with: x\ntokens_per_s,usd_per_m_output_tokens,gpus\n1,2,3\n")
    result = CliRunner().invoke(main, ["report", str(table), "--out", str(tmp_path / "r.html")])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {table}: is a table a command wrote, not a study's")
    assert "YAML" not in result.stderr and not (tmp_path / "r.html").exists()


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


#: Test-only: once the page has drawn, hover the 10th point of the first curve as a mouse would.
HOVER = (
    "<script>setTimeout(function () { Plotly.Fx.hover(document.getElementById('frontiers-0'),"
    " [{curveNumber: 0, pointNumber: 10}]); }, 1000);</script></body>"
)


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
def test_report_renders_in_headless_chromium(report, tmp_path):
    """Chromium loads the file offline; the plot's SVG has one scatter trace per visible curve,
    and hovering a point shows its layout and where its latency goes."""
    page = tmp_path / "hover.html"
    page.write_text(report.read_text().replace("</body>", HOVER))
    dom = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=10000",
         "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    assert 'class="main-svg"' in dom
    scatter = re.findall(r'class="trace scatter', dom)
    assert len(scatter) == 3  # the first view: three GPUs for Llama 3 70B
    ticks = re.findall(r'class="ytick"[^>]*>.*?>([^<]*)<', dom)  # every label, minor ones too
    assert len(ticks) >= 4 and all(t.startswith("$") for t in ticks), ticks
    assert "model: Llama 3 70B" in dom  # the menu shows the selected group
    hover = re.sub(r"<[^>]+>", " ", re.search(r'class="hovertext".*?</g>', dom, re.S).group(0))
    for words in ("H100-paper", "tokens/s per request", "GPUs", "PP", "TP", "EP", "draft tokens"):
        assert words in hover, (words, hover)
    for words in ("latency", "kernel launches", "weight reads", "collective latency"):
        assert words in hover, (words, hover)


def test_a_report_says_which_cells_are_bounds_and_gives_the_expected_ones_intervals(
    tmp_path, one_worker_process
):
    """A study of one GPU under refined and achievable: the page had said nothing of bound or
    expected, listed a '90 % interval' band of the bound (all NaN), and gave its key figures
    without their intervals, beside each other. Its two cells go to the worker processes of
    the default ``--jobs`` (``one_worker_process``)."""
    study = tmp_path / "s.yaml"
    study.write_text(
        "title: Bound and expected\n"
        "axes: {model: [Llama 3 8B], hardware: [H100-SXM], assumptions: [refined, achievable]}\n"
        "defaults: {grid_points: 20, weight_bits: 8}\nat_speeds: [50]\n"
    )
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["study", str(study), "--out", str(out), "--html", "-q"])
    assert result.exit_code == 0, result.output
    page = (out / "report.html").read_text()
    line = re.search(r"<p class='figures'><strong>(.*?)</strong></p>", page)
    assert line and line[1].startswith("Cells differ: Ideal bound: refined preset")
    assert "Expected figures: achievable preset, engine profile trtllm" in line[1]
    names = [t.get("name") for t in figure_json(page)["data"]]
    assert "achievable: 90 % interval" in names and "refined: 90 % interval" not in names
    table = re.search(r"<h3>Key points</h3>.*?</table>", page, re.S)[0]
    assert "preference $/Mtok 90 %" in table and ">ideal bound<" in table and ">expected<" in table
