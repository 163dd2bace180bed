"""Python API arguments of the wrong type or value: one SpecError naming the argument, never a
TypeError from inside, a number computed from a bad value, or a result silently doubled."""

from __future__ import annotations

import doctest
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

import inference_econ as ie
from inference_econ.cli import main
from inference_econ.settings import table

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def setting():
    return ie.make_setting("Llama 3 8B", "H100-paper")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"context_tokens": math.nan}, "context_tokens"),
        ({"context_tokens": -5}, "context_tokens"),
        ({"pue": 0.1}, "pue"),
        ({"max_gpus": 0}, "max_gpus"),
        ({"pipeline": "no"}, "pipeline"),
        ({"gpu": "H100"}, "gpu"),
        ({"contxt_tokens": 1000}, "contxt_tokens"),
    ],
)
def test_setting_replace_refuses_what_make_setting_refuses(setting, change, field):
    with pytest.raises(ie.SpecError, match=f"field '{field}'"):
        setting.replace(**change)


def test_setting_replace_sends_a_table_setting_that_is_no_field_to_make_setting(setting):
    with pytest.raises(ie.SpecError, match=r"weight_bits.*ie\.make_setting"):
        setting.replace(weight_bits=8)
    with pytest.raises(ie.SpecError, match=r"weight_bits.*ie\.make_setting"):
        ie.frontier(setting, weight_bits=8)
    with pytest.raises(ie.SpecError, match=r"setting\.replace\(context_tokens=\.\.\.\)"):
        ie.frontier(setting, context_tokens=8000)


def test_setting_replace_with_valid_values_prices_as_make_setting_does(setting):
    replaced = ie.point(setting.replace(context_tokens="4000"), gpus=1, batch=8)
    built = ie.point("Llama 3 8B", "H100-paper", gpus=1, batch=8, context_tokens=4000)
    assert replaced["usd_per_mtok"] == pytest.approx(built["usd_per_mtok"], rel=1e-12)
    assert setting.replace(max_throughput_tokens_per_s=None).max_throughput_tokens_per_s == math.inf


@pytest.mark.parametrize("given", [5, None, True, ["H100"], 8.0])
def test_a_model_or_gpu_that_is_not_a_name_is_refused_as_such(given):
    with pytest.raises(ie.SpecError, match="expected a name or a YAML file's path"):
        ie.load_hardware(given)
    with pytest.raises(ie.SpecError, match="field 'models': expected a name"):
        ie.point(given, "H100", gpus=8, batch=64)


def test_point_refuses_a_list_of_gpus_rather_than_reading_it_as_a_name():
    with pytest.raises(ie.SpecError, match=r"field 'hardware': expected a name.*'H100-paper'"):
        ie.point("Llama 3 70B", ["H100-paper", "H100"], gpus=8, batch=64)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"values": []}, "values"),
        ({"values": [1], "progress": 5}, "progress"),
        ({"values": [1], "at_speed": math.nan}, "at_speed"),
        ({"values": [1], "at_speed": 0}, "at_speed"),
    ],
)
def test_sweep_refuses_before_searching(setting, kwargs, field):
    with pytest.raises(ie.SpecError, match=f"field '{field}'"):
        ie.sweep(setting, "hbm_bandwidth", **kwargs)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--values", "1,,2"),
         "--values: has an empty value in '1,,2' (give one number between each two commas, "
         "such as 1,2)"),
        (("--values", "1,2,"),
         "--values: has an empty value in '1,2,' (give one number between each two commas, "
         "such as 1,2)"),
        (("--values", "1,2,1.0"),
         "--values: gives 1 twice: it would be computed twice (give each value once, such as "
         "1,2)"),
    ],
)  # fmt: skip
def test_sweep_values_refuse_an_empty_or_repeated_item(args, message):
    result = CliRunner().invoke(
        main, ["sweep", "Llama 3 8B", "-H", "H100-paper", "--param", "hbm_bandwidth", *args]
    )
    assert result.exit_code == 2 and result.stderr == f"error: {message}\n"


def test_lists_refuse_empty_items_and_repeats_only_where_each_item_is_a_row(setting):
    with pytest.raises(ie.SpecError, match=r"field 'values': gives 4 twice"):
        ie.sweep(setting, "hbm_bandwidth", values=[4, 2, 4.0])
    with pytest.raises(
        ie.SpecError, match=r"field 'values \(hbm_bandwidth\)': expected a number, got ''"
    ):
        ie.sweep(setting, "hbm_bandwidth", values=["1", "", "2"])
    rates = table.option("acceptance_by_position")
    assert rates.check("0.8,0.8,0.7") == (0.8, 0.8, 0.7)  # equal rates at two depths
    with pytest.raises(ie.SpecError, match=r"has an empty value in '0.8,,0.7'"):
        rates.check("0.8,,0.7")


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"parameters": []}, "is empty"),
        ({"parameters": ["flops", "flop"]}, "did you mean 'flops'"),
        ({"parameters": ["context"]}, "'context' is not a factor parameter"),
        ({"parameters": ["flops"], "at_speed": math.inf}, "field 'at_speed': is inf"),
    ],
)
def test_elasticities_refuses_before_searching(setting, kwargs, words):
    with pytest.raises(ie.SpecError, match=words):
        ie.elasticities(setting, **kwargs)


def test_elasticities_reads_one_name_as_one_parameter(setting):
    one = ie.elasticities(setting, parameters="flops", at_speed=50)
    listed = ie.elasticities(setting, parameters=["flops"], at_speed=50)
    assert one["parameter"].tolist() == ["flops"]
    assert one["fastest_speed_elasticity"].iloc[0] == listed["fastest_speed_elasticity"].iloc[0]


def test_capacity_refuses_a_gpu_named_twice():
    with pytest.raises(ie.SpecError, match="field 'hardware': names H100-SXM twice"):
        ie.capacity(
            "Llama 3.3 70B", ["H100", "H100-SXM"], arrival_rate_per_s=20, weight_bits=8,
            input_lengths=1000, output_lengths=300, slo_tpot_p99_s=0.05, requests=300,
        )  # fmt: skip


@pytest.mark.parametrize("holdout", [2, "no", None])
def test_calibrate_holdout_is_true_or_false(holdout):
    with pytest.raises(ie.SpecError, match="field 'holdout': expected true or false"):
        ie.calibrate(ROOT / "examples" / "measured-rows.csv", holdout=holdout)


def test_every_exported_names_examples_give_the_output_they_show(monkeypatch):
    monkeypatch.chdir(ROOT)  # the examples read files from the repository's root
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(verbose=False)
    ran = 0
    for name in ie.__all__:
        obj = getattr(ie, name)
        for test in finder.find(obj, name, globs={}):
            ran += len(test.examples)
            runner.run(test)
    assert ran >= 50
    assert runner.failures == 0


def test_dir_lists_the_public_names_and_no_imports():
    names = dir(ie)
    assert set(ie.__all__) <= set(names)
    assert "__version__" in names
    assert not {"annotations", "importlib", "_EXPORTS"} & set(names)


def test_request_prefill_prices_and_disaggregation_read_numbers_given_as_text(setting):
    """A number given as text passes the checks as its number, so it prices as the number
    does (not a TypeError from inside)."""
    from inference_econ.api import compare_disaggregation

    as_text = ie.request_view(
        setting, gpus="2", batch="16", prompt_tokens="2000", output_tokens="200",
        prefill_batch="2", cached_fraction="0.5",
    )  # fmt: skip
    as_numbers = ie.request_view(
        setting, gpus=2, batch=16, prompt_tokens=2000, output_tokens=200, prefill_batch=2,
        cached_fraction=0.5,
    )  # fmt: skip
    for column in ("ttft_s", "e2e_latency_s", "usd_per_request", "cached_tokens"):
        assert as_text[column] == pytest.approx(as_numbers[column], rel=1e-12)
    text_pass = ie.prefill_pass(
        setting, gpus="2", prompt_tokens="2000", batch="2", cached_tokens="100", chunk_tokens="512"
    )
    number_pass = ie.prefill_pass(
        setting, gpus=2, prompt_tokens=2000, batch=2, cached_tokens=100, chunk_tokens=512
    )
    assert text_pass["latency_s"] == pytest.approx(number_pass["latency_s"], rel=1e-12)
    assert text_pass["chunks"] == number_pass["chunks"] == 4
    ratio = ie.price_ratio("Llama 3 8B", "H100-paper", context_tokens="2000")
    assert ratio["output_to_input_price_ratio"] == pytest.approx(
        ie.price_ratio("Llama 3 8B", "H100-paper", context_tokens=2000)[
            "output_to_input_price_ratio"
        ],
        rel=1e-12,
    )
    text_pools = compare_disaggregation(setting, "2000", "200", "2", "16")
    number_pools = compare_disaggregation(setting, 2000, 200, 2, 16)
    assert list(text_pools["ttft_s"]) == pytest.approx(list(number_pools["ttft_s"]), rel=1e-12)


def test_min_prefill_tokens_and_curve_points_given_as_text_read_as_their_numbers(setting):
    """The checker reads text as its number; the checked number is the one used (the raw text
    had gone on: a TypeError from inside price_ratio, the pools' comparison and max_load)."""
    from inference_econ.serving.disaggregation import compare

    ratio = "output_to_input_price_ratio"
    as_text = ie.price_ratio("Llama 3 8B", "H100-paper", 2000, min_prefill_tokens="4096")
    as_number = ie.price_ratio("Llama 3 8B", "H100-paper", 2000, min_prefill_tokens=4096)
    assert as_text["prefill_batch"] == as_number["prefill_batch"] == 3
    assert as_text[ratio] == pytest.approx(as_number[ratio], rel=1e-12)
    text_pools = compare(setting, 2000, 200, 2, 16, min_prefill_tokens="4096")
    number_pools = compare(setting, 2000, 200, 2, 16, min_prefill_tokens=4096)
    assert list(text_pools["ttft_s"]) == pytest.approx(list(number_pools["ttft_s"]), rel=1e-12)
    load = dict(gpus=1, input_lengths="200", output_lengths="50", requests=100,
                slo_tpot_p99_s=0.05)  # fmt: skip
    held = ie.max_load("Qwama 0.5B", "H100", curve_points="2", **load)
    assert (
        held.max_rate_per_s
        == ie.max_load("Qwama 0.5B", "H100", curve_points=2, **load).max_rate_per_s
    )


@pytest.mark.parametrize(
    ("given", "words"),
    [
        ({"max_model_len": "long"}, "field 'max_model_len': expected a number in tokens"),
        ({"max_model_len": math.nan}, "field 'max_model_len': is nan"),
        ({"max_model_len": 300.5}, "field 'max_model_len': is 300.5"),
        ({"max_model_len": True}, "field 'max_model_len': expected a number"),
        ({"checkpoint": 5}, "field 'checkpoint': expected text, got 5"),
    ],
)
def test_export_refuses_launch_options_of_the_wrong_type(given, words):
    from inference_econ import api

    point = dict(gpus=1, batch=8, prompt_tokens=200, output_tokens=40)
    with pytest.raises(ie.SpecError, match=words):
        api.export("Llama 3.1 8B", "H100", engine="vllm", **point, **given)


def test_export_reads_a_max_model_len_given_as_text_as_its_number():
    from inference_econ import api
    from inference_econ.export.engine_configs import launch_script

    point = dict(gpus=1, batch=8, prompt_tokens=200, output_tokens=40)
    plan = api.export("Llama 3.1 8B", "H100", engine="vllm", max_model_len="300", **point)
    assert plan.max_model_len == 300
    assert "--max-model-len 300 " in launch_script(plan)


@pytest.mark.parametrize("speed", [-1, 0, "fast", math.nan, 1e400])
def test_export_names_a_bad_speed_as_speed(speed):
    from inference_econ import api

    with pytest.raises(ie.SpecError, match=r"argument: field 'speed': .*expected a number > 0"):
        api.export("Llama 3.1 8B", "H100", engine="vllm", plan="frontier", speed=speed,
                   prompt_tokens=200, output_tokens=40)  # fmt: skip


@pytest.fixture
def no_search(monkeypatch):
    """Every frontier of a sweep refused: a test that passes with it searched nothing."""

    def searched(*args, **kwargs):
        raise AssertionError("a frontier was searched before the arguments were checked")

    monkeypatch.setattr("inference_econ.studies.sensitivity.frontier", searched)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--param", "hbm_bandwith"),
         "--param: unknown parameter 'hbm_bandwith' (did you mean 'hbm_bandwidth'"),
        (("--param", "price", "--values", "1,0"),
         "--values (price): is 0 (expected a number > 0 and <= 1000000)"),
        (("--param", "acceptance", "--values", "0.5"),
         "--acceptance: the setting has no speculation (give a draft model (--draft) or draft "
         "heads (--draft-heads) to vary the acceptance)"),
    ],
)  # fmt: skip
def test_sweep_refuses_a_bad_option_before_the_base_frontier(no_search, args, message):
    result = CliRunner().invoke(main, ["sweep", "Llama 3 8B", "-H", "H100-paper", *args])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {message}") and result.stderr.count("\n") == 1


def test_tornado_refuses_a_factor_the_gpu_cannot_take_before_the_base_frontier(no_search, tmp_path):
    gpu = tmp_path / "pricey.yaml"
    gpu.write_text("name: Pricey\nderive_from: H100-paper\nprice_usd_per_hour: 6.0e8\n")
    figure = tmp_path / "tornado.png"
    result = CliRunner().invoke(
        main, ["sweep", "Llama 3 8B", "-H", str(gpu), "--tornado", str(figure)]
    )
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        "error: --tornado (price): x2: scaled by 2, price_usd_per_hour is 1.2e+09 in USD/hour "
        "(expected a number >= 1e-06 and <= 1e+09)\n"
    )
    assert not figure.exists()
    with pytest.raises(ie.SpecError, match=r"field 'parameters \(price\)': x2"):
        ie.elasticities(ie.make_setting("Llama 3 8B", str(gpu)), at_speed=100)


_LOAD = dict(gpus=1, arrival_rate_per_s=2, requests=30)


def test_a_load_reads_prompt_and_output_tokens_as_its_lengths_as_the_command_line_does():
    by_request = ie.simulate_load(
        "Llama 3.1 8B", "H100", prompt_tokens=3000, output_tokens=20, **_LOAD
    )
    by_lengths = ie.simulate_load(
        "Llama 3.1 8B", "H100", input_lengths="3000", output_lengths="20", **_LOAD
    )
    assert by_request.p99 == by_lengths.p99
    assert "prompts 3000 tokens; outputs 20 tokens" in by_request.traffic


@pytest.mark.parametrize(
    ("given", "field", "beside"),
    [
        ({"prompt_tokens": 5000, "input_lengths": "1000"}, "prompt_tokens", "input_lengths"),
        ({"output_tokens": 999, "output_lengths": "20"}, "output_tokens", "output_lengths"),
        ({"prompt_tokens": 5000, "trace": "requests.csv"}, "prompt_tokens", "trace"),
    ],
)
def test_every_load_function_refuses_a_request_length_beside_the_loads_own(given, field, beside):
    lengths = {"input_lengths": "200", "output_lengths": "20"} | given
    if "trace" in given:
        lengths = given
    calls = [
        lambda: ie.simulate_load("Llama 3.1 8B", "H100", **_LOAD, **lengths),
        lambda: ie.max_load("Llama 3.1 8B", "H100", gpus=1, slo_tpot_p99_s=0.05, **lengths),
        lambda: ie.capacity("Llama 3.1 8B", "H100", arrival_rate_per_s=2, slo_tpot_p99_s=0.05,
                            **lengths),
        lambda: ie.api.export("Llama 3.1 8B", "H100", engine="vllm", plan="capacity",
                              arrival_rate_per_s=2, slo_tpot_p99_s=0.05, **lengths),
    ]  # fmt: skip
    for call in calls:
        with pytest.raises(ie.SpecError, match=f"field '{field}'.*{beside}.*give one of {field}"):
            call()


def test_a_load_refuses_a_request_length_beside_a_typed_traffic():
    traffic = ie.make_traffic(2, "200", "20", requests=30)
    with pytest.raises(ie.SpecError, match="field 'prompt_tokens'.*traffic"):
        ie.simulate_load("Llama 3.1 8B", "H100", gpus=1, traffic=traffic, prompt_tokens=5000)


def test_a_load_refuses_a_points_ttft_limit_and_names_its_own_target():
    """ttft_max_s limits one prompt's first token on a frontier; a load keeps a percentile of
    its requests' (slo_ttft_p99_s): it had been refused as "given without prompt_tokens" even
    with prompt_tokens given."""
    for extra in ({}, {"prompt_tokens": 1000}):
        lengths = {} if extra else {"input_lengths": "1000"}
        with pytest.raises(ie.SpecError, match="field 'ttft_max_s'.*slo_ttft_p99_s"):
            ie.simulate_load("Llama 3.1 8B", "H100", **_LOAD, ttft_max_s=1.0, **extra, **lengths)


def test_an_exported_capacity_plan_serves_the_request_lengths_given():
    plan = ie.api.export(
        "Llama 3.1 8B", "H100", engine="vllm", plan="capacity", arrival_rate_per_s=2,
        slo_tpot_p99_s=0.05, requests=100, prompt_tokens=5000, output_tokens=999,
    )  # fmt: skip
    assert (plan.load.input_mean, plan.load.output_mean) == (5000.0, 999.0)


def test_export_refuses_a_setting_naming_the_model_to_give():
    """An export prices its plan at the engine version it launches, so it builds its own
    setting: a Setting given as the model had failed as "context_tokens given together with a
    Setting", a setting the caller never gave."""
    from inference_econ import api

    setting = ie.make_setting("Llama 3.3 70B", "H100", weight_bits=8)
    with pytest.raises(ie.SpecError, match="field 'model'.*'Llama 3.3 70B'"):
        api.export(setting, engine="vllm", gpus=8, batch=64, prompt_tokens=2000, output_tokens=500)


def test_a_loads_lengths_keep_every_digit_and_refuse_a_fraction():
    """prompt_tokens and output_tokens become the load's lengths digit for digit (they had
    been rounded to six significant digits: 1,234,567 read as 1,234,570), and a fraction of a
    token is refused naming the argument given (it had named input_lengths)."""
    from inference_econ.api.load_setup import _request_lengths

    lengths = _request_lengths({"prompt_tokens": 1234567, "output_tokens": 1000001}, None)
    assert lengths == {"input_lengths": "1234567", "output_lengths": "1000001"}
    with pytest.raises(ie.SpecError, match="field 'prompt_tokens'.*1000.5.*whole number"):
        _request_lengths({"prompt_tokens": 1000.5}, None)


def test_an_export_takes_a_ttft_limit_on_its_frontier_and_refuses_it_on_a_point():
    """ttft_max_s limits a frontier export's pick on the export's own prompt (it had been
    refused as given without prompt_tokens, prompt_tokens given); a point export, given its
    GPUs and batch, refuses it rather than ignore it."""
    from inference_econ import api

    request = dict(engine="vllm", prompt_tokens=3000, output_tokens=300)
    plan = api.export("Llama 3.1 8B", "H100", plan="frontier", pick="fastest", ttft_max_s=1.0,
                      **request)  # fmt: skip
    assert plan.expected["ttft_s"] <= 1.0
    with pytest.raises(ie.InfeasibleError, match="within 0.01 s for a 3000-token prompt"):
        api.export("Llama 3.1 8B", "H100", plan="frontier", pick="fastest", ttft_max_s=0.01,
                   **request)  # fmt: skip
    with pytest.raises(ie.SpecError, match="field 'ttft_max_s'.*point export"):
        api.export("Llama 3.1 8B", "H100", gpus=1, batch=8, ttft_max_s=1.0, **request)


@pytest.mark.parametrize(
    ("call", "given", "message"),
    [
        ("simulate_load", {"demand": "day.csv"}, "field 'demand': is read by demand_plan"),
        ("capacity", {"demand": "day.csv"}, "field 'demand': is read by demand_plan"),
        ("max_load", {"demand": "day.csv"}, "field 'demand': is read by demand_plan"),
        ("simulate_load", {"miss_budget": 0.1}, "field 'miss_budget': is given without autoscale"),
        ("capacity", {"repair_hours": 48}, "field 'repair_hours': is given without failures"),
        ("capacity", {"spot_interruption_rate": 0.1}, "'spot_interruption_rate': is given without"),
        ("capacity", {"instances": 3}, "field 'instances': is given without gpus"),
        ("capacity", {"kv_disk_bandwidth_gb_per_s": 3}, "is given without kv_disk_gb"),
        ("capacity", {"speculation_max_batch": 8}, "is given without draft or draft_heads"),
        ("demand_plan", {"startup_s": 30}, "field 'startup_s': is given without autoscale"),
        ("demand_plan", {"autoscale": "hpa"}, "field 'autoscale': is read by autoscale_plan"),
    ],
)
def test_a_load_function_refuses_a_setting_it_would_ignore(tmp_path, call, given, message):
    """Settings whose row needs another (docs/errors.md, "Combinations"), a demand curve
    outside the demand plans and a scaling policy outside autoscale_plan had been dropped
    without a word: capacity(demand=...) planned the rate given, demand_plan(autoscale=...)
    the hourly mix."""
    curve = tmp_path / "day.csv"
    curve.write_text("hour,requests_per_s\n0,2\n1,6\n", encoding="utf-8")
    given = {k: (str(curve) if k == "demand" else v) for k, v in given.items()}
    lengths = {"input_lengths": "200", "output_lengths": "20", "slo_tpot_p99_s": 0.05}
    kwargs = {
        "simulate_load": {"gpus": 1, "arrival_rate_per_s": 2, "requests": 30},
        "capacity": {"arrival_rate_per_s": 2},
        "max_load": {"gpus": 1},
        "demand_plan": {"demand": curve},
    }[call]
    with pytest.raises(ie.SpecError) as err:
        getattr(ie, call)(
            "Llama 3.1 8B", "H100", **kwargs, **lengths, **given, progress=pytest.fail
        )
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_load_function_takes_a_setting_beside_what_it_needs():
    # the caller's own arguments count: instances beside gpus, a disk tier beside a host tier
    result = ie.simulate_load(
        "Llama 3.1 8B", "H100", gpus=1, instances=2, arrival_rate_per_s=2, requests=30,
        input_lengths="200", output_lengths="20", shared_prefix_tokens=500, kv_offload_gb=8,
        kv_disk_gb=50, kv_disk_bandwidth_gb_per_s=3.5, assumptions="refined",
    )  # fmt: skip
    assert result.instances == 2 and result.disk_hit_rate == 0.0  # a short run reaches no disk
