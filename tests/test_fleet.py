"""Fleets and power caps (docs/model.md §G6): several models on one fleet, never dearer than
each planned alone and exactly that sum where no GPU can be shared; a power cap that binds never
serves more than the uncapped plan and a loose one gives exactly it; inputs that cannot be met
and bad fleet files get one line naming what to change."""

from __future__ import annotations

import dataclasses
import itertools
import math
from types import SimpleNamespace

import numpy as np
import pytest
from click.testing import CliRunner

import inference_econ as ie
from inference_econ.cli import main
from inference_econ.errors import InfeasibleError, SpecError
from inference_econ.load.targets import Targets
from inference_econ.optimise.fleet import Part, _cheapest, _cost, _pack
from inference_econ.optimise.gpu_share import share_gpu
from inference_econ.optimise.instance_options import InstanceOption
from inference_econ.optimise.power_cap import PlanPart, power_capped_plan

H100 = ie.load_hardware("H100")
#: Small, cheap loads: a 0.5B model, short requests, few of them.
DEFAULTS = {
    "weight_bits": 8, "requests": 100, "input_lengths": "300", "output_lengths": "20",
    "slo_ttft_p99_s": 1, "slo_tpot_p99_s": 0.05,
}  # fmt: skip


def _fleet(engine: str) -> dict:
    """Two copies of a 0.5B model at 2 requests/s each: one whole H100 holds hundreds."""
    return {
        "hardware": "H100",
        "defaults": {**DEFAULTS, "engine": engine},
        "models": [
            {"name": "a", "model": "Qwama 0.5B", "arrival_rate_per_s": 2},
            {"name": "b", "model": "Qwama 0.5B", "arrival_rate_per_s": 2},
        ],
    }


@pytest.fixture(scope="module")
def shared():
    return ie.fleet_plan(_fleet("vllm"), sizes=[1])


@pytest.fixture(scope="module")
def apart():
    return ie.fleet_plan(_fleet("trtllm"), sizes=[1])


def test_no_share_possible_gives_exactly_the_sum_of_the_plans_alone(apart):
    """TensorRT-LLM sizes its KV cache from the memory its weights left: no shares. Each model
    alone is one H100 (2 req/s against hundreds one holds): the fleet is exactly two."""
    price = H100.price_usd_per_hour
    assert [p.describe() for p in apart.parts] == ["1 x 1 GPU H100-SXM"] * 2
    assert apart.usd_per_hour == apart.alone_usd_per_hour == 2 * price
    assert apart.saving_usd_per_hour == 0 and apart.gpus == 2 and apart.bins == ()
    assert all("trtllm" in why for _, why in apart.sharing)


def test_shares_of_one_gpu_make_the_fleet_cheaper_than_the_sum(shared):
    """Under vLLM each model holds its 2 req/s on a quarter of an H100: both share one GPU,
    half of the two GPUs they take alone."""
    price = H100.price_usd_per_hour
    assert shared.alone_usd_per_hour == 2 * price
    assert shared.usd_per_hour == price and shared.saving_usd_per_hour == price
    assert shared.bins == (("H100-SXM", (("a", 0.25), ("b", 0.25))),)
    assert all(p.option.max_rate_per_instance >= 2 and p.instances == 1 for p in shared.parts)
    table = shared.to_dataframe()
    assert list(table["deployment"]) == ["1 x 1/4 of H100-SXM"] * 2
    # power by GPU state: the two quarters at their load, the unused half of the GPU idle
    idle = shared.parts[0].option.kw_per_instance("idle") / 0.25
    load = sum(p.option.load_kw_per_instance for p in shared.parts)
    assert shared.it_power_kw == pytest.approx(load + 0.5 * idle)


def _option(share: float, usd: float = 2.0) -> InstanceOption:
    """An instance holding 10 req/s on ``share`` of a GPU (1: one whole GPU) at ``usd`` a
    GPU-hour (no simulation: the search over parts is pure)."""
    return InstanceOption("G", None, 1, share, 10.0, 1.0, usd)  # type: ignore[arg-type]


def test_the_search_over_parts_by_hand():
    """A model on 3/4 of a GPU and one on 1/2 cannot share one: exactly the sum ($4); with a
    quarter instead they fit on one GPU ($2). Five shares (3/4, 1/2, 1/2, 1/4, 1/4 = 9
    quarters) pack into three GPUs."""
    a = [Part("a", _option(1.0), 1, 5.0), Part("a", _option(0.75), 1, 5.0)]
    b = [Part("b", _option(1.0), 1, 5.0), Part("b", _option(0.5), 1, 5.0)]
    best = _cheapest([a, b], [a[0], b[0]])
    assert _cost(best, _pack(best)) == 4.0 and not any(p.shared for p in best)
    b.append(Part("b", _option(0.25), 1, 5.0))
    best = _cheapest([a, b], [a[0], b[0]])
    assert _cost(best, _pack(best)) == 2.0 and [p.option.share for p in best] == [0.75, 0.25]
    parts = [Part("x", _option(0.75), 1, 1.0), Part("y", _option(0.5), 2, 1.0),
             Part("z", _option(0.25), 2, 1.0)]  # fmt: skip
    assert len(_pack(parts)) == 3


def test_a_share_is_that_fraction_of_the_gpu():
    half = share_gpu(H100, 0.5)
    assert half.hbm_capacity_bytes == H100.hbm_capacity_bytes / 2
    assert half.hbm_bandwidth_bytes_per_s == H100.hbm_bandwidth_bytes_per_s / 2
    assert half.peak_flop_per_s(8) == H100.peak_flop_per_s(8) / 2
    assert half.price_usd_per_hour == H100.price_usd_per_hour / 2
    assert half.power.it_max_w == H100.power.it_max_w / 2


@pytest.fixture(scope="module")
def uncapped():
    """Qwama 0.5B at 8000 req/s on 1-GPU H100 instances: six instances, no cap."""
    return ie.power_plan(
        "Qwama 0.5B", "H100", power_cap_mw=None, arrival_rate_per_s=8000, sizes=[1], **DEFAULTS
    )


def test_a_loose_cap_gives_exactly_the_uncapped_plan(uncapped):
    k = uncapped.instances
    assert k == math.ceil(8000 / uncapped.option.max_rate_per_instance) and k >= 3
    for cap in (1000.0, uncapped.facility_mw):  # far above it, and exactly its draw
        plan = uncapped.at_cap(cap)
        assert not plan.binds and (plan.option, plan.instances) == (uncapped.option, k)
        assert plan.output_tokens_per_s == uncapped.output_tokens_per_s == 8000 * 20


def test_a_binding_cap_serves_what_its_instances_hold(uncapped):
    """Room for k - 2 instances (and half of one more): they serve (k - 2) x what one holds,
    fewer tokens than the uncapped plan, at their own $ and MW."""
    k, o = uncapped.instances, uncapped.option
    mw_each = o.load_kw_per_instance * uncapped.pue / 1e3
    plan = uncapped.at_cap((k - 1.5) * mw_each)
    assert plan.binds and not plan.meets_demand and plan.instances == k - 2
    assert plan.served_rate_per_s == pytest.approx((k - 2) * o.max_rate_per_instance)
    assert plan.output_tokens_per_s < uncapped.output_tokens_per_s
    s = plan.summary()
    tokens = (k - 2) * o.max_rate_per_instance * 20
    assert s["output_tokens_per_s_per_mw"] == pytest.approx(tokens / ((k - 2) * mw_each))
    usd = (k - 2) * H100.price_usd_per_hour
    assert s["usd_per_m_output_tokens_all_in"] == pytest.approx(usd / (tokens * 3600) * 1e6)


def test_a_cap_below_one_instance_says_what_to_raise_it_to(uncapped):
    mw_each = uncapped.option.load_kw_per_instance * uncapped.pue / 1e3
    with pytest.raises(InfeasibleError, match="below one instance") as err:
        uncapped.at_cap(mw_each / 2)
    assert (
        f"raise the power cap (--power-cap-mw; power_cap_mw in Python) to at least {mw_each:.4g}"
        in str(err.value)
    )
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("cap", "says"),
    [(0, "is 0 in MW"), (-1, "is -1 in MW"), (math.nan, "is nan"), ("abc", "expected a number in MW, got 'abc'"),
     (True, "expected a number in MW, got True"), (1e9, "is 1e\\+09 in MW")],
)  # fmt: skip
def test_another_cap_is_checked_as_the_first_is(uncapped, cap, says):
    """at_cap had taken any value: 0 and -1 read as caps below one instance (exit 1, not
    bad input), NaN and text failed inside with a ValueError or a TypeError, True was 1 MW."""
    with pytest.raises(SpecError, match=rf"field 'cap_mw': {says}"):
        uncapped.at_cap(cap)
    assert uncapped.at_cap("1000").instances == uncapped.at_cap(1000.0).instances


#: A setting whose GPU states power (``need_power`` asks): the candidates below are synthetic.
_POWERED = SimpleNamespace(gpu=SimpleNamespace(power=object(), name="G", source_file=None))


def _candidate(hardware: str, gpus: int, rate: float, kw: float, usd: float) -> InstanceOption:
    """An instance of ``gpus`` GPUs holding ``rate`` req/s at ``kw`` IT kW, ``usd`` a GPU-hour."""
    return InstanceOption(hardware, _POWERED, gpus, 1.0, rate, kw, usd)  # type: ignore[arg-type]


#: A: cheap and power-hungry (10 req/s, $1/h, 10 kW); B: dearer and power-efficient (two GPUs,
#: 25 req/s, $3/h, 12 kW). At 100 req/s and PUE 1: 10 A ($10, 100 kW) or 4 B ($12, 48 kW).
_A, _B = _candidate("A", 1, 10.0, 10.0, 1.0), _candidate("B", 2, 25.0, 12.0, 1.5)


def _plan(options, cap, rate=100.0):
    return power_capped_plan(options, rate, Targets(), 1.0, 1.0, cap)


def test_two_candidates_under_a_cap_by_hand():
    """Under 80 kW, 10 A draw 100 kW and 8 A hold 80 req/s; 4 B fit at $12. With n A, B takes
    ⌈(100 - 10n)/25⌉: n = 5 holds 50 + 2 x 25 = 100 req/s at 50 + 24 = 74 kW for 5 + 6 = $11
    (n = 6 needs 2 B, 84 kW), strictly cheaper than either alone under the cap."""
    plan = _plan([_A, _B], 0.08)
    assert plan.usd_per_hour == 11.0 and plan.it_power_kw == 74.0 and plan.facility_mw == 0.074
    assert plan.served_rate_per_s == 100.0 and plan.meets_demand and plan.binds
    assert [(p.option.hardware, p.instances) for p in plan.parts] == [("A", 5), ("B", 2)]
    assert plan.gpus == 9 and plan.instances == 7 and plan.option is _A
    assert plan.describe() == "5 x 1 GPU A + 2 x 2 GPUs B"
    s = plan.summary()
    assert (s["hardware"], s["deployment"]) == ("A + B", "5 x 1 GPU + 2 x 2 GPUs")
    assert s["uncapped_deployment"] == "10 x 1 GPU A"
    assert list(plan.candidates["chosen"]) == [True, True]  # both parts marked
    alone = _plan([_B], 0.08)
    assert alone.usd_per_hour == 12.0 and plan.usd_per_hour < alone.usd_per_hour


def test_the_most_served_under_a_cap_fills_the_leftover_power_by_hand():
    """Under 46 kW nothing holds 100 req/s: 3 B (36 kW, 75 req/s) leave 10 kW, one A more:
    85 req/s for $10; 4 A alone hold 40, 2 B and 2 A 70."""
    plan = _plan([_A, _B], 0.046)
    assert plan.served_rate_per_s == 85.0 and not plan.meets_demand
    assert plan.usd_per_hour == 10.0 and plan.it_power_kw == 46.0
    assert [(p.option.hardware, p.instances) for p in plan.parts] == [("B", 3), ("A", 1)]


def test_the_cheapest_plan_is_the_answer_unchanged_where_it_fits():
    for cap in (0.1, 1000.0):  # exactly its draw, and far above it
        plan = _plan([_A, _B], cap)
        assert plan.parts == (PlanPart(_A, 10),) and plan.is_uncapped and not plan.binds
        assert list(plan.candidates["chosen"]) == [True, False]


def test_whole_instances_can_make_two_candidates_cheaper_than_the_uncapped_plan():
    """11 req/s: 2 A ($20) or 11 B ($16.50, the uncapped plan); 1 A and 1 B hold 11 for $11.50.
    Under any cap that holds them the plan is the pair, the cap binding or not: were the
    uncapped plan kept where it fits, a looser cap would cost more."""
    a, b = _candidate("A", 1, 10.0, 1.0, 10.0), _candidate("B", 1, 1.0, 1.0, 1.5)
    for cap in (0.002, 0.0105, 1000.0):
        plan = _plan([a, b], cap, rate=11.0)
        assert plan.usd_per_hour == 11.5 and plan.describe() == "1 x 1 GPU A + 1 x 1 GPU B"
        assert plan.binds == (cap < 0.011) and not plan.is_uncapped
    assert _plan([a, b], None, rate=11.0).describe() == "11 x 1 GPU B"  # no cap: capacity's


def _brute_force(options, rate, cap):
    """(cost, served) of the best of every count of every pair, by Python loops (no more
    instances of one than the load needs: more never serve more)."""
    best = None
    mw = [o.load_kw_per_instance / 1e3 for o in options]
    need = [o.instances_for(rate) for o in options]
    for i, j in itertools.combinations_with_replacement(range(len(options)), 2):
        for n in range(min(int(cap / mw[i]), need[i]) + 1):
            room = 0 if i == j else int((cap - n * mw[i]) / mw[j])
            for k in range(min(room, need[j]) + 1):
                held = n * options[i].max_rate_per_instance + k * options[j].max_rate_per_instance
                cost = options[i].usd_per_hour(n) + options[j].usd_per_hour(k)
                key = (-min(held, rate), round(cost, 9))
                best = key if best is None or key < best else best
    return best[1], -best[0]


def test_a_looser_cap_never_costs_more_nor_serves_less_and_the_plan_is_the_best_pair():
    """Random sets of three candidates at 41 caps: the plan is the best of every count of every
    pair (brute force), served never falls as the cap grows, and where the load is met its cost
    never rises."""
    rng = np.random.default_rng(7)
    mixes = 0
    for _ in range(4):
        options = [
            _candidate(f"G{i}", int(g), float(r), float(k), float(u))
            for i, (g, r, k, u) in enumerate(
                zip(rng.choice([1, 2, 4], 3), rng.uniform(3, 20, 3), rng.uniform(1, 8, 3),
                    rng.uniform(1, 4, 3))
            )
        ]  # fmt: skip
        plans = [_plan(options, cap, rate=60.0) for cap in np.linspace(0.012, 0.2, 41)]
        for p in plans:
            cost, most = _brute_force(options, 60.0, p.cap_mw)
            assert (p.usd_per_hour, p.served_rate_per_s) == pytest.approx((cost, most))
        served = [p.served_rate_per_s for p in plans]
        assert all(x <= y + 1e-9 for x, y in zip(served, served[1:]))
        met = [p.usd_per_hour for p in plans if p.meets_demand]
        assert met and all(x >= y - 1e-9 for x, y in zip(met, met[1:]))
        mixes += sum(len(p.parts) == 2 for p in plans)
    assert mixes > 0


def test_a_plan_of_two_parts_prints_each_and_csv_and_json_carry_them(uncapped):
    """The text states each part; JSON and CSV carry them as the table ``parts``, which reads
    back to the plan's parts."""
    import json

    from inference_econ.cli.fleet_commands import power_text
    from inference_econ.output.fleet_plots import power_figure
    from inference_econ.output.render import csv_tables

    o = uncapped.option
    a = dataclasses.replace(o, load_kw_per_instance=10.0, max_rate_per_instance=10.0)
    b = dataclasses.replace(o, gpus_per_instance=2, load_kw_per_instance=12.0,
                            max_rate_per_instance=25.0, gpu_usd_per_hour=1.5 * o.gpu_usd_per_hour)  # fmt: skip
    plan = power_capped_plan([a, b], 100.0, Targets(), 20.0, 1.0, 0.08)
    text = power_text(plan, "table")
    title = "Under a 0.08 MW power cap: 5 x 1 GPU H100-SXM + 2 x 2 GPUs H100-SXM serve 100 of "
    assert title in text
    assert "The plan's parts: the instances of each candidate" in text
    d = json.loads(power_text(plan, "json"))
    rows = [(r["hardware"], r["gpus_per_instance"], r["instances"]) for r in d["parts"]]
    assert rows == [("H100-SXM", 1, 5), ("H100-SXM", 2, 2)]
    assert d["summary"]["deployment"] == "5 x 1 GPU + 2 x 2 GPUs" and d["summary"]["gpus"] == 9
    back = csv_tables(power_text(plan, "csv"))["parts"]  # numbers to 10 digits
    assert list(back.columns) == list(d["parts"][0]) and back.shape == (2, len(d["parts"][0]))
    for column in back.columns:
        assert back[column].tolist() == pytest.approx([r[column] for r in d["parts"]], rel=1e-9)
    by_size = {c.gpus_per_instance: c for c in plan.options}
    rebuilt = tuple(PlanPart(by_size[r["gpus_per_instance"]], r["instances"]) for r in d["parts"])
    assert rebuilt == plan.parts
    ax = power_figure(plan).axes[0]
    assert np.all(np.diff(ax.get_lines()[0].get_data()[1]) >= 0)


def test_a_model_with_no_deployment_is_named():
    fleet = {
        "hardware": "H100",
        "defaults": {**DEFAULTS, "engine": "trtllm"},
        "models": [{"name": "big", "model": "Llama 3.3 70B", "weight_bits": 16,
                    "arrival_rate_per_s": 1}],
    }  # fmt: skip
    with pytest.raises(InfeasibleError, match="fleet model 'big': no deployment meets") as err:
        ie.fleet_plan(fleet, sizes=[1])
    assert "give it other GPUs" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    "change, field, words",
    [
        ({"slo_tpot_p99_s": -1}, "models[1].slo_tpot_p99_s", "is -1"),
        ({"rate": 3}, "models[1].rate", "unknown setting"),
        ({"concurrency": 3}, "models[1].concurrency", "does not apply to a fleet plan"),
        ({"prompt_tokens": 900}, "models[1].prompt_tokens", "lengths as input_lengths"),
        ({"adapters": ["sql"]}, "models[1].adapters", "LoRA adapters are not modelled"),
        ({"model": "Lama 3"}, "models[1].model", "no model named 'Lama 3'"),
    ],
)
def test_a_bad_field_is_one_line_naming_the_file_and_field(tmp_path, change, field, words):
    import yaml

    fleet = _fleet("vllm")
    fleet["models"][1].update(change)
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump(fleet), encoding="utf-8")
    with pytest.raises(SpecError) as err:
        ie.fleet_plan(path)
    text = str(err.value)
    assert text.startswith(f"{path}: field '{field}': ") and words in text and "\n" not in text


@pytest.mark.parametrize("top, own", [(5, None), (None, 0.5), (True, None), (None, {"a": 1})])
def test_gpus_that_are_no_names_are_one_line_naming_their_field(tmp_path, top, own):
    # a number or a mapping for 'hardware' is no list of GPU names to iterate
    import yaml

    fleet = _fleet("vllm")
    fleet["hardware"] = top if top is not None else "H100"
    if own is not None:
        fleet["models"][0]["hardware"] = own
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump(fleet), encoding="utf-8")
    result = CliRunner().invoke(main, ["capacity", "--fleet", str(path), "-q"])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.output
    field = "hardware" if own is None else "models[0].hardware"
    assert result.stderr.startswith(f"error: {path}: field '{field}': ")


def test_an_unknown_gpu_every_model_shares_names_where_it_was_given(tmp_path):
    # -H Foo (or the file's top 'hardware: Foo') is named where it was given, not as
    # models[0].hardware, a field the file does not have
    result = CliRunner().invoke(main, ["capacity", "--fleet", "examples/fleet.yaml", "-H", "Foo"])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert result.stderr.startswith("error: --hardware: models[0]: no hardware spec named 'Foo'")
    fleet = {**_fleet("vllm"), "hardware": "H100,Foo"}
    with pytest.raises(SpecError, match=r"fleet: field 'hardware': models\[0\]: no hardware"):
        ie.fleet_plan(fleet)
    with pytest.raises(SpecError, match="argument: field 'hardware': expected a GPU name"):
        ie.fleet_plan(_fleet("vllm"), hardware=5)


def test_a_held_load_a_short_run_of_sessions_could_not_judge_is_named_by_its_model(tmp_path):
    # 3-turn sessions of 100 requests: the knee's run never reaches a steady state and "held"
    # far more than an instance does; the fleet's notes say so
    import yaml

    fleet = _fleet("trtllm")
    fleet["defaults"]["session_turns"] = 3
    fleet["models"] = fleet["models"][:1]
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump(fleet), encoding="utf-8")
    result = CliRunner().invoke(main, ["capacity", "--fleet", str(path), "-q"])
    assert result.exit_code == 0, result.output
    assert "a: one instance's held load: nine sessions in ten last at least" in result.stdout
    assert "raise requests" in result.stdout
    del fleet["defaults"]["session_turns"]
    (path.parent / "p.yaml").write_text(yaml.safe_dump(fleet), encoding="utf-8")
    plain = CliRunner().invoke(main, ["capacity", "--fleet", str(path.parent / "p.yaml"), "-q"])
    assert plain.exit_code == 0 and "held load" not in plain.stdout, plain.output


def test_the_command_line_refuses_what_the_fleet_file_sets(tmp_path):
    runner = CliRunner()
    result = runner.invoke(main, ["capacity", "--fleet", "examples/fleet.yaml", "--rate", "3"])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: --rate: is set in the fleet file")
    result = runner.invoke(main, ["capacity", "-H", "H100", "--rate", "1"])
    assert result.exit_code == 2 and "MODEL argument: is missing" in result.stderr
    result = runner.invoke(
        main, ["capacity", "Qwama 0.5B", "-H", "H100", "--rate", "1", "--power-cap-mw", "0"]
    )
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert "--power-cap-mw" in result.stderr


@pytest.mark.parametrize(
    "given, says",
    [
        (["--kv-offload-gb", "10"], "--kv-offload-gb: is set in the fleet file (--fleet), for each "
         "model (drop --kv-offload-gb; set 'kv_offload_gb' under 'defaults' or a model"),
        (["--requests", "50"], "--requests: is set in the fleet file"),
        (["--prompt-tokens", "100"], "set 'input_lengths' under 'defaults'"),
        (["--failures"], "--failures: does not apply to a fleet plan (--fleet) (drop --failures)"),
        (["--demand", "d.csv"], "--demand: does not apply to a fleet plan"),
        (["--autoscale", "hpa"], "--autoscale: does not apply to a fleet plan"),
        (["--confidence", "0.9"], "--confidence: does not apply to a fleet plan"),
        (["Qwama 0.5B"], "MODEL argument: is named in the fleet file (--fleet)"),
    ],
)  # fmt: skip
def test_an_option_beside_a_fleet_file_is_named_with_the_fix_that_applies(given, says):
    # settings the file sets had been sent to --rate ("needs --rate or --trace or --demand"),
    # and options no fleet plan reads had been said to be set in the file
    result = CliRunner().invoke(main, ["capacity", "--fleet", "examples/fleet.yaml", *given])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.output
    assert says in result.stderr


@pytest.mark.parametrize(
    "change, field, fix",
    [
        (lambda f: f["defaults"].update(engine="vlm"), "defaults.engine", "did you mean"),
        (lambda f: f["models"][1].pop("arrival_rate_per_s"), "models[1].arrival_rate_per_s",
         "give 'arrival_rate_per_s' to models[1] or under 'defaults'"),
        (lambda f: [f["defaults"].pop(k) for k in ("slo_ttft_p99_s", "slo_tpot_p99_s")],
         "models[0].slo_ttft_p99_s",
         "(give slo_ttft_p99_s, slo_tpot_p99_s or slo_e2e_p99_s to models[0] or under "
         "'defaults' (examples/fleet.yaml))"),
    ],
)  # fmt: skip
def test_a_field_of_the_defaults_is_named_there_and_a_missing_one_where_to_give_it(
    tmp_path, change, field, fix
):
    # an engine misspelt under defaults had been named 'models[0].engines', a missing rate's
    # fix had said to give --rate, and no target's had named flags refused beside --fleet
    fleet = _fleet("vllm")
    change(fleet)
    with pytest.raises(SpecError) as err:
        ie.fleet_plan(fleet)
    assert f"field '{field}'" in str(err.value) and fix in str(err.value)


def test_a_fleet_file_that_is_a_list_says_where_the_models_go(tmp_path):
    path = tmp_path / "fleet.yaml"
    path.write_text("- model: Qwama 0.5B\n", encoding="utf-8")
    with pytest.raises(SpecError, match=r"put the models under 'models:'"):
        ie.fleet_plan(path)


def test_a_fleet_states_its_figures_intervals_costs_and_what_each_was_computed_with(shared):
    """The first line says the figures are expected; each model's load held carries its
    interval (its instances times each end of one instance's); a shared GPU's price is split
    between its models so the parts add up; each model's line states its own load."""
    import json

    from inference_econ.cli.fleet_commands import fleet_text
    from inference_econ.serving.figure_labels import interval_columns

    table = shared.to_dataframe()
    assert table["usd_per_hour"].sum() == pytest.approx(shared.usd_per_hour)
    assert list(table["usd_per_hour"]) == pytest.approx([H100.price_usd_per_hour / 2] * 2)
    ends = interval_columns("max_rate_per_s")
    for part, row in zip(shared.parts, table.to_dict("records")):
        one = [part.option.held[c] for c in ends]
        assert [row[c] for c in ends] == pytest.approx([part.instances * e for e in one])
        assert one[2] < part.option.max_rate_per_instance < one[3]
    text = fleet_text(shared, "table", "f.yaml", ("H100",))
    assert text.startswith(
        "Expected figures: achievable preset, engine profile vllm; 80 % and 90 %"
    )
    assert "max_rate_per_s 90 %" in text
    assert "  a: Qwama 0.5B (" in text and "traffic Poisson arrivals, 2 req/s;" in text
    assert "gpu_share 1/4" in text and "price_usd_per_gpu_hour 2.1;" in text
    assert "GPUs: -H H100 for every model that names no 'hardware' of its own" in text
    d = json.loads(fleet_text(shared, "json", "f.yaml"))
    assert [c["label"] for c in d["metadata"]["curves"]] == ["a", "b"]
    assert d["rows"][0]["max_rate_per_s_low90"] == pytest.approx(table["max_rate_per_s_low90"][0])


def test_a_dedicated_part_of_several_gpus_reads_in_the_plural():
    o = InstanceOption("H100-SXM", None, 2, 1.0, 10.0, 1.0, 2.0)  # type: ignore[arg-type]
    assert Part("m", o, 1, 1.0).describe() == "1 x 2 GPUs H100-SXM"
    assert Part("m", o, 3, 1.0).held("max_rate_per_s") == {}  # no interval: a bound's


def test_hardware_given_replaces_the_fleet_files_own():
    # examples/fleet.yaml names H100 for every model; -H H200 (the API's ``hardware``) searches
    # H200 instead, where it had been refused as an unknown field of the file
    from inference_econ.api.fleet import read_fleet

    def gpus(models):
        return {m.name: [s.gpu.name for s in m.settings] for m in models}

    assert set(map(tuple, gpus(read_fleet("examples/fleet.yaml")).values())) == {("H100-SXM",)}
    given = gpus(read_fleet("examples/fleet.yaml", hardware=["H200"]))
    assert set(map(tuple, given.values())) == {("H200-SXM",)}, given


def test_each_model_searches_the_instance_sizes_of_its_own_max_gpus():
    """The first model's max_gpus had bounded every model's instances: b (up to 2 GPUs) had
    been searched on 1 GPU only, as a is."""
    fleet = _fleet("trtllm")
    fleet["models"][0]["max_gpus"] = 1
    fleet["models"][1]["max_gpus"] = 2
    frame = ie.fleet_plan(fleet).candidates
    options = {m: sorted(frame[frame.model == m].option) for m in ("a", "b")}
    assert options == {"a": ["1 x H100-SXM"], "b": ["1 x H100-SXM", "2 x H100-SXM"]}, options


def test_a_fleet_whose_models_state_different_pues_is_refused_naming_the_field():
    """A fleet is one site: its facility power had taken the first model's PUE for every
    model's. One PUE under defaults, or the same on every model, is read."""
    fleet = _fleet("trtllm")
    fleet["models"][1]["pue"] = 1.6
    with pytest.raises(
        SpecError, match=r"field 'models\[1\]\.pue': b runs at PUE 1\.6 and a at 1\.3"
    ):
        ie.fleet_plan(fleet)
    fleet["models"][0]["pue"] = 1.1
    del fleet["models"][1]["pue"]
    with pytest.raises(
        SpecError, match=r"field 'models\[0\]\.pue': b runs at PUE 1\.3 and a at 1\.1"
    ):
        ie.fleet_plan(fleet)
    from inference_econ.api.fleet import read_fleet

    fleet["models"][1]["pue"] = 1.1
    assert len(read_fleet(fleet)) == 2
    fleet = _fleet("trtllm")
    fleet["defaults"]["pue"] = 1.2
    assert len(read_fleet(fleet)) == 2


def test_models_that_may_share_a_gpu_at_different_prices_are_refused_naming_the_field():
    """A shared GPU had been priced at the first model's price: the same fleet cost 3.99 or 2.1
    USD an hour as the model on on-demand prices came first or second. Models that cannot share
    (TensorRT-LLM) keep their own prices."""
    fleet = _fleet("vllm")
    fleet["models"][1]["price_basis"] = "on-demand"
    with pytest.raises(
        SpecError,
        match=r"'models\[1\]\.price_basis': b pays 3\.99 USD an hour "
        r"for each H100-SXM and a 2\.1, and a GPU they share has one price",
    ):
        ie.fleet_plan(fleet)
    from inference_econ.api.fleet import read_fleet

    fleet = _fleet("trtllm")
    fleet["models"][1]["price_basis"] = "on-demand"
    prices = [m.settings[0].gpu.price_usd_per_hour for m in read_fleet(fleet)]
    assert prices == [2.1, 3.99]


def test_a_fleet_under_a_power_cap(shared):
    """A loose cap leaves the fleet as it is; one below the least it can draw says what to
    raise it to."""
    loose = ie.fleet_plan(_fleet("vllm"), sizes=[1], power_cap_mw=1000)
    assert (loose.parts, loose.bins) == (shared.parts, shared.bins)
    with pytest.raises(InfeasibleError, match="no fleet of these models fits a power cap") as err:
        ie.fleet_plan(_fleet("vllm"), sizes=[1], power_cap_mw=shared.facility_mw / 2)
    assert (
        f"raise the power cap (--power-cap-mw; power_cap_mw in Python) to {shared.facility_mw:.4g}"
        in str(err.value)
    )


def test_the_fleet_figure_shows_the_shared_gpu_beside_the_gpus_alone(shared):
    from inference_econ.output.fleet_plots import fleet_figure

    ax = fleet_figure(shared).axes[0]
    # the fleet: two quarters of one H100 and its idle half; alone: one whole GPU a model
    fleet_bars = sorted(round(p.get_width(), 6) for p in ax.patches if p.get_y() < 0.5)
    alone_bars = sorted(round(p.get_width(), 6) for p in ax.patches if p.get_y() > 0.5)
    assert fleet_bars == [0.25, 0.25, 0.5] and alone_bars == [1.0, 1.0]
    labels = [t.get_text().strip() for t in ax.texts]
    assert labels[0].startswith("1 GPU, $") and labels[1].startswith("2 GPUs, $")


def test_a_fleet_of_one_model_reads_in_the_singular():
    """The title had read "for the 1 models of f.yaml"."""
    from inference_econ.cli.fleet_commands import fleet_text

    fleet = _fleet("vllm")
    fleet["models"] = fleet["models"][:1]
    text = fleet_text(ie.fleet_plan(fleet, sizes=[1]), "table", "f.yaml")
    assert "Cheapest fleet for the 1 model of f.yaml: 1 GPU, $" in text
    assert " models of " not in text


def test_the_power_figure_serves_more_as_the_budget_grows_up_to_the_uncapped_plan(uncapped):
    from inference_econ.output.fleet_plots import power_figure

    ax = power_figure(uncapped.at_cap(0.5 * uncapped.facility_mw)).axes[0]
    caps, tokens = ax.get_lines()[0].get_data()
    assert np.all(np.diff(tokens) >= 0)  # a larger budget never serves less
    assert tokens[-1] == pytest.approx(uncapped.output_tokens_per_s)  # past the draw: all of it
    assert tokens[0] < tokens[-1]


def test_json_and_csv_carry_the_fleets_totals(tmp_path):
    """The fleet's answer (its GPUs, price and saving) had been in the text's summary table and
    the title's words only; JSON carries it as ``summary`` and CSV as a comment line. On the
    two small models of ``_fleet``, which share one GPU (a saving to carry); the summary is
    written alike for any fleet."""
    import json

    import yaml

    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump(_fleet("vllm")), encoding="utf-8")
    runner = CliRunner()
    out = runner.invoke(main, ["capacity", "--fleet", str(path), "--format", "json"])
    assert out.exit_code == 0, out.output
    d = json.loads(out.stdout)
    s = d["summary"]
    gpus = f"{int(s['gpus'])} GPU" + ("s" if s["gpus"] != 1 else "")
    assert f"{gpus}, ${s['usd_per_hour']:,.4g}/h" in d["title"]
    assert s["saving_usd_per_hour"] == pytest.approx(s["alone_usd_per_hour"] - s["usd_per_hour"])
    assert s["saving_usd_per_hour"] > 0
    csv = runner.invoke(main, ["capacity", "--fleet", str(path), "--format", "csv"])
    assert f"# Summary: models {int(s['models'])}; gpus {int(s['gpus'])};" in csv.stdout


def _text_table(text: str, title: str) -> list[list[str]]:
    """The rows of the text table under ``title``, cells split where two spaces part them."""
    import re

    lines = text.splitlines()
    start = lines.index(title) + 3  # past its title, header and rule
    width = len(re.split(r"\s{2,}", lines[start - 2].strip()))
    rows = []
    for line in lines[start:]:
        cells = re.split(r"\s{2,}", line.strip())
        if not line.strip() or len(cells) != width:  # the notes under the table
            break
        rows.append(cells)
    return rows


def test_fleet_json_and_csv_carry_its_packing_and_candidate_tables(shared, apart):
    """JSON and CSV had carried the models and the totals only: the shared GPUs and every
    candidate, which the text prints, are there too, with the text's numbers."""
    import json

    from inference_econ.cli.fleet_commands import fleet_text
    from inference_econ.output.render import csv_tables

    text = fleet_text(shared, "table", "f.yaml")
    d = json.loads(fleet_text(shared, "json", "f.yaml"))
    gpus = _text_table(text, "The shared GPUs and the instances on each")
    assert gpus and [[str(g["gpu"]), g["hardware"], g["instances"]] for g in d["gpus"]] == [
        row[:3] for row in gpus
    ]
    assert [float(row[3]) for row in gpus] == pytest.approx([g["used_share"] for g in d["gpus"]])
    shown = _text_table(
        text, "Every candidate: the most load one instance holds within its model's targets"
    )
    assert [[c["model"], c["option"], "yes" if c["chosen"] else "no"] for c in d["candidates"]] == [
        [row[0], row[1], row[-1]] for row in shown
    ]
    assert [float(row[3].replace(",", "")) for row in shown] == pytest.approx(
        [c["max_rate_per_instance"] for c in d["candidates"]], rel=5e-3
    )
    back = csv_tables(fleet_text(shared, "csv", "f.yaml"))
    assert back["gpus"].to_dict("records") == d["gpus"]
    assert back["candidates"]["option"].tolist() == [c["option"] for c in d["candidates"]]
    assert back["candidates"]["max_rate_per_instance"].to_numpy() == pytest.approx(
        [c["max_rate_per_instance"] for c in d["candidates"]], rel=1e-9
    )
    # nothing shared: no GPU table in the text, an empty one in JSON and CSV
    assert "The shared GPUs" not in fleet_text(apart, "table", "f.yaml")
    assert json.loads(fleet_text(apart, "json", "f.yaml"))["gpus"] == []
    assert csv_tables(fleet_text(apart, "csv", "f.yaml"))["gpus"].empty


def test_a_candidate_the_text_shows_without_figures_gives_its_reason_under_the_table():
    """The text's candidates table leaves out its note column: a share a model's weights do
    not leave room on had read as a row of blanks, its reason in CSV and JSON only."""
    from inference_econ.cli.fleet_commands import fleet_text

    fleet = _fleet("vllm")
    fleet["models"][1] = {"name": "big", "model": "Qwen3-32B", "arrival_rate_per_s": 0.5}
    plan = ie.fleet_plan(fleet, sizes=[1])
    blank = plan.candidates[plan.candidates["max_rate_per_instance"].isna()]
    assert blank[["model", "option"]].values.tolist() == [["big", "1/4 of H100-SXM"]]
    note = blank["note"].iloc[0]
    assert note.startswith("Qwen3-32B (32.8 GB of weights) leaves no room for a KV cache")
    text = fleet_text(plan, "table", "f.yaml")
    assert f"\nbig on 1/4 of H100-SXM: {note}\n" in text
