"""A capacity plan that searches the engine's step budget: the cheapest of the plans at each
budget, launched at its budget, and refused where nothing is searched."""

import pytest
from click.testing import CliRunner

import inference_econ as ie
from inference_econ import api
from inference_econ.cli import main
from inference_econ.errors import SpecError
from inference_econ.export import bundle
from inference_econ.optimise.capacity import BUDGETS_SEARCHED, STEP_TOKEN_SEARCH

# Long prompts under a tight TPOT target: a step of 8,192 tokens (TensorRT-LLM's own) holds a
# whole prompt beside the decoding requests, a step of 2,048 a chunk of one.
LOAD = dict(
    engine="trtllm",
    arrival_rate_per_s=30,
    prompt_tokens=6000,
    output_tokens=200,
    slo_tpot_p99_s=0.04,
    slo_ttft_p99_s=5,
    requests=200,
)


@pytest.fixture(scope="module")
def searched():
    return ie.capacity("Llama 3.1 8B", "H100", tune_engine=True, **LOAD)


def test_a_searched_plan_is_the_cheapest_of_the_plans_at_each_budget(searched):
    own = ie.capacity("Llama 3.1 8B", "H100", **LOAD)
    each = {b: ie.capacity("Llama 3.1 8B", "H100", step_token_budget=b, **LOAD)
            for b in STEP_TOKEN_SEARCH}  # fmt: skip
    assert own.result.engine.step_token_budget == 8192  # TensorRT-LLM's max_num_tokens default
    cheapest = min(p.result.usd_per_hour for p in each.values())
    assert searched.result.usd_per_hour == cheapest < own.result.usd_per_hour
    chosen = searched.config.step_token_budget
    assert searched.result.engine.step_token_budget == chosen == 2048
    assert searched.deployment == each[chosen].deployment
    assert searched.max_rate_per_s == pytest.approx(each[chosen].max_rate_per_s)
    note = next(n for n in searched.notes if n.startswith(BUDGETS_SEARCHED))
    for budget, plan in each.items():
        label = f"{budget:,} (the engine's own)" if budget == 8192 else f"{budget:,}"
        cost = f"{plan.deployment.describe()} H100-SXM, ${plan.result.usd_per_hour:,.2f} an hour"
        assert f"{label}: {cost}" in note
    assert (
        note.count("(chosen)") == 1
        and "2,048: 4 x 2 GPUs H100-SXM, $16.80 an hour (chosen)" in note
    )
    # the confident plan is sized at the chosen budget too, never below the expected plan
    assert searched.confident.usd_per_hour >= searched.result.usd_per_hour


def test_the_export_of_a_searched_plan_launches_its_budget():
    plan = api.export("Llama 3.1 8B", "H100", plan="capacity", tune_engine=True, **LOAD)
    assert {w.token_budget for w in plan.workers} == {2048}
    assert any(n.startswith(BUDGETS_SEARCHED) and "(chosen)" in n for n in plan.notes)
    text = bundle.render(plan)["launch.sh"]
    assert "--max_num_tokens 2048" in text and "--max_num_tokens 8192" not in text


def test_a_step_budget_search_is_refused_where_no_capacity_plan_is_searched():
    with pytest.raises(SpecError, match="tune_engine.*capacity plan"):
        ie.simulate_load("Llama 3.1 8B", "H100", gpus=1, tune_engine=True, **LOAD)
    with pytest.raises(SpecError, match="tune_engine.*step_token_budget"):
        ie.capacity("Llama 3.1 8B", "H100", tune_engine=True, step_token_budget=4096,
                    **LOAD)  # fmt: skip
    result = CliRunner().invoke(
        main,
        ["simulate", "Llama 3.1 8B", "-H", "H100", "--gpus", "1", "--rate", "2",
         "--prompt-tokens", "500", "--output-tokens", "50", "--tune-engine"],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert "--tune-engine" in result.output and "--step-tokens" in result.output


def test_a_budget_the_engine_takes_on_some_gpus_only_is_searched_on_every_gpu():
    """vLLM V1 takes 2,048 tokens a step on an A100 and 8,192 on an H100: searched over both,
    the H100 is planned at 2,048 too (2 x 4 H100 at $16.80 an hour, against 5 x 2 at $21.00 at
    its own 8,192), and the engine's own budget is labelled by GPU, not as the first GPU's."""
    load = dict(LOAD, engine="vllm")
    plan = ie.capacity("Llama 3.1 8B", ["A100", "H100"], sizes=[2, 4], tune_engine=True,
                       **load)  # fmt: skip
    assert (plan.deployment.describe(), plan.result.hardware) == ("2 x 4 GPUs", "H100-SXM")
    assert plan.result.usd_per_hour == pytest.approx(16.8)
    assert plan.config.step_token_budget == plan.result.engine.step_token_budget == 2048
    note = next(n for n in plan.notes if n.startswith(BUDGETS_SEARCHED))
    assert "the engine's own (2,048 on A100-SXM-80GB, 8,192 on H100-SXM): 5 x 2 GPUs" in note
    assert all(f"; {b:,}: " in note for b in STEP_TOKEN_SEARCH)


def test_the_note_prices_each_budget_in_dollars_and_cents_at_any_size():
    """The note's prices are written as the plan's other prices are, in dollars and cents: a
    load of 20,000 req/s costs over $10,000 an hour at three budgets, never written as
    "$1.24e+04 an hour"."""
    load = dict(LOAD, arrival_rate_per_s=20000)
    plan = ie.capacity("Llama 3.1 8B", "H100", sizes=[2], tune_engine=True, **load)
    note = next(n for n in plan.notes if n.startswith(BUDGETS_SEARCHED))
    assert "e+0" not in note
    assert "8,192 (the engine's own): 2,952 x 2 GPUs H100-SXM, $12,398.40 an hour;" in note
    assert "2,048: 2,304 x 2 GPUs H100-SXM, $9,676.80 an hour (chosen)" in note
    assert plan.result.usd_per_hour == pytest.approx(9676.8)


def test_the_note_states_whose_budget_it_is_under_attention_data_parallelism():
    """On DeepSeek-R1 laid out DEP8 on 8 H200, a TensorRT-LLM budget is each attention rank's,
    the instance's eight times it (the run's step_token_budget), and the note gives both, each
    budget with and without TensorRT-LLM's attention-DP balancing; SGLang's
    --chunked-prefill-size is the instance's, which SGLang shares among its ranks, and the note
    says so."""
    from inference_econ.load.deployment import fixed_layout
    from inference_econ.model.mixed_step import EngineLayout

    load = dict(weight_bits=8, arrival_rate_per_s=20.0, input_lengths="1000",
                output_lengths="1000", slo_ttft_p99_s=5.0, slo_tpot_p99_s=0.1, requests=100,
                sizes=[8], tune_engine=True)  # fmt: skip
    with fixed_layout(8, EngineLayout(8, 1, 8.0)):
        trtllm = ie.capacity("DeepSeek-R1", "H200", engine="trtllm", **load)
        export = api.export("DeepSeek-R1", "H200", engine="sglang", plan="capacity", **load)
        balanced = api.export("DeepSeek-R1", "H200", engine="trtllm", plan="capacity", **load)
    note = next(n for n in trtllm.notes if n.startswith(BUDGETS_SEARCHED))
    assert note.startswith(BUDGETS_SEARCHED + ", an attention rank's under attention DP): ")
    assert trtllm.result.metadata()["step_token_budget"] == 8 * 16384
    assert "8,192 (the engine's own): 10 x 8 GPUs H200-SXM, $235.20 an hour;" in note
    # TensorRT-LLM's attention-DP balancing is tried at each budget too, after all of them: the
    # ranks prefilling together hold the targets on 7 instances where 10 were needed
    assert (
        "16,384 with attention-DP balancing 0,60: 7 x 8 GPUs H200-SXM, $164.64 an hour "
        "(chosen; 131,072 over the instance's attention ranks)" in note
    )
    assert trtllm.config.adp_balancing == (0, 60) and note.count("balancing 0,60") == 4
    # the export (priced at the release it launches) launches the budget and balancing it chose
    (w,) = balanced.workers
    chosen = next(n for n in balanced.notes if n.startswith(BUDGETS_SEARCHED))
    label = f"{w.token_budget:,} with attention-DP balancing 0,60: 7 x 8 GPUs H200-SXM, $164.64"
    assert f"; {label} an hour (chosen; " in chosen
    assert f"--max_num_tokens {w.token_budget} " in bundle.render(balanced)["launch.sh"]
    text = bundle.render(balanced)["trtllm-server.yaml"]
    assert "enable_attention_dp: true" in text
    assert "attention_dp_config:\n  enable_balance: true\n  batching_wait_iters: 0\n" in text
    note = next(n for n in export.notes if n.startswith(BUDGETS_SEARCHED))  # SGLang's plan
    assert note.startswith(BUDGETS_SEARCHED + ", an instance's): ") and "balancing" not in note
    assert "2,048: 9 x 8 GPUs H200-SXM, $211.68 an hour (chosen);" in note
    (w,) = export.workers
    assert (w.attention_dp, w.token_budget) == (8, 2048)
    assert "--dp-size 8" in bundle.render(export)["launch.sh"]
    assert "--chunked-prefill-size 2048" in bundle.render(export)["launch.sh"]


def test_the_refusal_names_the_python_functions_that_take_a_budget_search():
    """Refused beside a simulation, the search names the functions that read it as Python has
    them, ``ie.capacity`` and ``inference_econ.api.export`` (``ie.export`` is the package
    of launch files, no function), and the settings that set the engine by hand."""
    with pytest.raises(SpecError) as refused:
        ie.simulate_load("Llama 3.1 8B", "H100", gpus=1, tune_engine=True, **LOAD)
    text = str(refused.value)
    assert "in Python ie.capacity and inference_econ.api.export)" in text
    assert "ie.export" not in text
    assert callable(ie.capacity) and callable(api.export)
    assert "set the engine yourself: --step-tokens and --adp-balance (step_token_budget" in text


def test_the_work_estimate_counts_the_ideal_bound_once():
    """A tuned search plans the expected plan at each of its 8 engine settings (DeepSeek-R1
    under TensorRT-LLM: 4 budgets, each with and without balancing) and the ideal bound once,
    at the chosen one: 9 searches where one plan takes 2 (not 16: work it would finish in
    time is not refused)."""
    load = dict(LOAD, requests=2_000_000, prompt_tokens=1000, output_tokens=1000)
    counts = []
    for tuned in (False, True):
        with pytest.raises(SpecError) as refused:
            ie.capacity("DeepSeek-R1", "H200", tune_engine=tuned, **load)
        counts.append(int(str(refused.value).split(" requests about ")[1].split(" ")[0]))
    plain, tuned = counts
    assert plain % 2 == 0 and tuned == 9 * plain // 2


def test_the_help_says_which_plans_try_the_balancing():
    """Only a MoE model under TensorRT-LLM is tuned with attention-DP balancing (a dense
    model's search tries the budgets alone): the command's help says so, as the option's."""
    text = " ".join(CliRunner().invoke(main, ["capacity", "--help"]).output.split())
    assert "under TensorRT-LLM with a MoE model, with attention-DP balancing" in text


def test_a_tuned_plan_draws_its_curve_at_the_settings_it_chose(tmp_path, figures_named_only):
    """capacity --tune-engine --figure: the chosen deployment's latency curve is swept at the
    plan's chosen step budget (the flag itself is the plan's search, not the curve's)."""
    from inference_econ.api import load as api_load

    swept = []
    real = api_load.max_load

    def max_load(*args, **kwargs):
        swept.append(kwargs)
        return real(*args, **kwargs)

    args = ["capacity", "Llama 3.1 8B", "-H", "H100", "--engine", "trtllm", "--rate", "30",
            "--prompt-tokens", "6000", "--output-tokens", "200", "--slo-tpot-p99", "0.04",
            "--slo-ttft-p99", "5", "--requests", "200", "--tune-engine",
            "--figure", str(tmp_path / "curve.png"), "-q"]  # fmt: skip
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(api_load, "max_load", max_load)
        patch.setattr(ie.api, "max_load", max_load, raising=False)
        result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    (kw,) = swept
    assert kw["step_token_budget"] == 2048 and "tune_engine" not in kw


def test_the_cheapest_setting_wins_by_its_n_plus_one_price_then_its_load():
    """``cheapest_of_budgets`` over plans priced by hand: the cheapest plan (by its N+1 plan's
    price where it has one) wins, a tie goes to the one holding more load, then to the first;
    a setting with no plan is listed as such, and none at all is one error naming each."""
    import dataclasses
    from types import SimpleNamespace

    from inference_econ.errors import InfeasibleError
    from inference_econ.load.engine import EngineConfig
    from inference_econ.optimise.capacity import cheapest_of_budgets

    @dataclasses.dataclass(frozen=True)
    class Plan:
        result: object
        max_rate_per_s: float
        redundancy: object = None
        notes: tuple = ()
        deployment: object = dataclasses.field(
            default_factory=lambda: SimpleNamespace(describe=lambda: "2 x 8 GPUs")
        )

    def plan(usd, rate, n_plus_one=None):
        red = (
            None
            if n_plus_one is None
            else SimpleNamespace(result=SimpleNamespace(usd_per_hour=n_plus_one))
        )
        return Plan(SimpleNamespace(usd_per_hour=usd, hardware="H200-SXM", engine=None), rate, red)

    configs = [(f"{b:,}", EngineConfig(step_token_budget=b), b) for b in (8192, 2048, 4096)]

    def chosen(plans):
        by = dict(zip((c for _, c, _ in configs), plans))
        _, config = cheapest_of_budgets(lambda c: by[c], configs)
        return config.step_token_budget

    assert chosen([plan(30, 5), plan(20, 5), plan(25, 9)]) == 2048  # the cheapest
    assert chosen([plan(20, 5), plan(20, 6), plan(20, 6)]) == 2048  # more load, then first
    assert chosen([plan(20, 5, 40), plan(10, 5, 50), plan(30, 5, 35)]) == 4096  # its N+1 price
    assert chosen([plan(20, 5), None, plan(20, 5)]) == 8192  # a tie kept at the first

    def none(c):
        raise InfeasibleError(f"nothing at {c.step_token_budget}")

    with pytest.raises(InfeasibleError, match="every step budget searched: 8,192: nothing at 8192"):
        cheapest_of_budgets(none, configs)
    by = {8192: None, 2048: plan(20, 5), 4096: None}

    def some(c):
        if by[c.step_token_budget] is None:
            none(c)
        return by[c.step_token_budget]

    best, _ = cheapest_of_budgets(some, configs)
    assert (
        "8,192: none holds the targets; 2,048: 2 x 8 GPUs H200-SXM, $20.00 an hour (chosen)"
        in best.notes[-1]
    )
