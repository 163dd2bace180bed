"""The simulated schedule as a timeline: the Trace Event Format checked field by field, its steps
adding up to each instance's busy time, its preemptions and steps counted as the record counts
them, and recording leaving the run's numbers unchanged."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

import inference_econ as ie
from inference_econ.cli import main
from inference_econ.load.arrivals import Traffic
from inference_econ.load.deployment import instance_for, offered_load, reference_context
from inference_econ.load.engine import ENGINE_OWN, EngineConfig, engine_config
from inference_econ.load.lengths import parse_lengths
from inference_econ.load.simulate import simulate, simulate_group
from inference_econ.load.timeline import US_PER_S, busy_by_lane, recording
from inference_econ.serving.setting import make_setting

PHASES = {"M", "X", "b", "e", "i"}


@pytest.fixture(scope="module")
def preempting():
    """A vLLM instance that preempts (70B FP8 on two H100s, long requests), with its traffic."""
    setting = make_setting(
        "Llama 3.3 70B", "H100", weight_bits=8, assumptions="achievable", engine="vllm"
    )
    config = engine_config(EngineConfig(engine_own=ENGINE_OWN), setting)
    traffic = Traffic(
        3.0, parse_lengths("lognormal:2000:0.8"), parse_lengths("lognormal:800:0.6"), requests=200
    )
    inst = instance_for(setting, 2, config, reference_context(traffic), offered_load(traffic, 1))
    return inst, traffic


@pytest.fixture(scope="module")
def recorded(preempting):
    inst, traffic = preempting
    with recording() as timeline:
        rec = simulate(inst, traffic.stream())
    return timeline, rec


def test_recording_leaves_the_run_unchanged(preempting, recorded):
    inst, traffic = preempting
    plain = simulate(inst, traffic.stream())
    _, rec = recorded
    for name in ("first_token_s", "finish_s", "admitted_s", "preemptions"):
        assert np.array_equal(getattr(plain, name), getattr(rec, name), equal_nan=True), name
    assert (plain.busy_s, plain.steps, plain.flop) == (rec.busy_s, rec.steps, rec.flop)


def test_steps_add_up_to_the_busy_time_and_the_counts(recorded):
    timeline, rec = recorded
    (lane,) = timeline.lanes
    assert lane.busy_s == rec.busy_s
    trace = timeline.trace_events()
    # the same additions in the same order as the engine's: equal to the last bit
    assert busy_by_lane(trace) == {1: rec.busy_s}
    durations = sum(e["dur"] for e in trace["traceEvents"] if e["ph"] == "X")
    assert durations == pytest.approx(rec.busy_s * US_PER_S, rel=1e-9)
    assert timeline.steps() == rec.steps
    preemptions = [e for e in trace["traceEvents"] if e["ph"] == "i"]
    assert len(preemptions) == int(rec.preemptions.sum()) > 0


def test_trace_event_format_field_by_field(recorded):
    timeline, rec = recorded
    trace = json.loads(timeline.to_json())  # valid JSON, no NaN
    assert set(trace) >= {"traceEvents", "displayTimeUnit"}
    events = trace["traceEvents"]
    named = {(e["pid"], e["tid"], e["name"]): e["args"]["name"] for e in events if e["ph"] == "M"
             and "name" in e["args"]}  # fmt: skip
    assert named[(0, 0, "process_name")] == "requests"
    assert named[(1, 0, "process_name")] == "instance 1"
    assert named[(1, 1, "thread_name")] == "steps"
    open_spans: dict[str, list[str]] = {}
    first_step = None
    for e in events:
        assert e["ph"] in PHASES
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
        if e["ph"] == "M":
            continue
        assert isinstance(e["ts"], float) and e["ts"] >= 0.0
        if e["ph"] == "X":
            assert e["dur"] >= 0.0 and e["cat"] == "step" and e["tid"] == 1
            first_step = first_step or e
        elif e["ph"] == "i":
            assert e["s"] == "t" and e["tid"] == 2
        else:  # async spans nest: an end closes the span of its id opened last
            stack = open_spans.setdefault(e["id"], [])
            if e["ph"] == "b":
                stack.append(e["name"])
            else:
                assert stack and stack.pop() == e["name"]
    assert all(not stack for stack in open_spans.values())
    finished = np.isfinite(rec.finish_s).sum()
    assert len(open_spans) == finished
    # microseconds: the first step starts at its time in seconds times a million
    kind, start, seconds, *_ = timeline.lanes[0].events[0]
    assert first_step["ts"] == round(start * US_PER_S, 3)
    assert first_step["dur"] == round(seconds * US_PER_S, 3)


def test_a_group_of_instances_has_a_lane_each(preempting):
    from inference_econ.load.routing import Router

    inst, traffic = preempting
    arrivals = traffic.at_rate(6.0).stream(3, 3)
    with recording() as timeline:
        rec = simulate_group([inst] * 3, arrivals, Router("round_robin", 3, None, 0))
    assert [ln.label for ln in timeline.lanes] == [f"instance {k}" for k in (1, 2, 3)]
    assert sum(ln.busy_s for ln in timeline.lanes) / 3 == pytest.approx(rec.busy_s, rel=1e-12)
    assert timeline.steps() == rec.steps


def test_simulate_writes_the_trace_and_refuses_another_suffix(tmp_path):
    args = ["simulate", "Llama 3.1 8B", "-H", "H100", "--gpus", "1", "--rate", "4"]
    args += ["--requests", "60", "--prompt-tokens", "500", "--output-tokens", "50", "-q"]
    out = tmp_path / "schedule.json"
    run = CliRunner().invoke(main, [*args, "--timeline", str(out)])
    assert run.exit_code == 0, run.output
    trace = json.loads(out.read_text())
    steps = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert steps and {e["pid"] for e in steps} == {1}
    bad = CliRunner().invoke(main, [*args, "--timeline", str(tmp_path / "schedule.csv")])
    assert bad.exit_code == 2
    assert "--timeline" in bad.output and ".json" in bad.output
    assert not (tmp_path / "schedule.csv").exists()


def test_the_api_records_only_when_asked():
    kw = dict(gpus=1, arrival_rate_per_s=4, requests=60, input_lengths="500", output_lengths="50")
    assert ie.simulate_load("Llama 3.1 8B", "H100", **kw).timeline is None
    result = ie.simulate_load("Llama 3.1 8B", "H100", timeline=True, **kw)
    assert result.timeline is not None and len(result.timeline.lanes) == 1
    with pytest.raises(ie.SpecError, match="timeline"):
        ie.simulate_load("Llama 3.1 8B", "H100", timeline="yes", **kw)


def test_the_figure_shows_each_instance(recorded):
    from inference_econ.output.timeline_plot import timeline_figure

    timeline, _ = recorded
    fig = timeline_figure(timeline, "test")
    top, bottom = fig.axes[:2]
    assert [t.get_text() for t in top.get_yticklabels()] == ["instance 1"]
    assert len(bottom.lines) == 1
    with pytest.raises(ie.SpecError):
        timeline_figure("not a timeline")


def test_a_step_that_loads_prefixes_from_a_host_tier_says_for_how_long():
    """Sessions whose prefixes the GPU evicted load them back from host memory: the steps that
    wait for those loads carry their seconds, which add up to the tokens the run's record says
    its requests took from the tier at the tier's rate: Llama 3.1 8B's 32 layers x 8 KV heads x
    128 x 2 (K and V) x 2 bytes = 131,072 bytes a token at 10 GB/s (to 0.1 %: a load moves whole
    segments, the record counts the tokens a prompt skips, whole blocks short of its last)."""
    kw = dict(gpus=1, arrival_rate_per_s=2, requests=300, input_lengths="lognormal:1000:0.6",
              output_lengths="lognormal:100:0.5", session_turns=6, think_time_s=30,
              shared_prefix_tokens=2000, shared_prefixes=8, kv_offload_gb=64,
              kv_offload_bandwidth_gb_per_s=10, timeline=True)  # fmt: skip
    result = ie.simulate_load("Llama 3.1 8B", "H100", **kw)
    events = result.timeline.trace_events()["traceEvents"]
    steps = [e for e in events if e.get("cat") == "step"]
    loads = [e["args"]["tier_load_seconds"] for e in steps if "tier_load_seconds" in e["args"]]
    ((_, record),) = result.timeline.runs
    tokens = sum(float(t.sum()) for t in record.tier_cached_tokens)
    assert loads and min(loads) > 0 and tokens > 0
    assert sum(loads) == pytest.approx(tokens * 131072 / 10e9, rel=1e-3)
    # only steps with prompt tokens wait for loads, never a run of decode steps
    assert all(
        e["name"] in ("prefill", "mixed step") for e in steps if "tier_load_seconds" in e["args"]
    )


def test_a_timeline_of_one_instance_simulated_for_two_says_so(tmp_path):
    # two instances behind a random router are one simulation: the file had held "instance 1"
    # alone, with nothing saying it stands for both
    import json

    from click.testing import CliRunner

    from inference_econ.cli import main

    trace = tmp_path / "t.csv"
    trace.write_text("arrival_time_s,prompt_tokens,output_tokens\n0,100,10\n0.1,100,10\n")
    out = tmp_path / "tl.json"
    args = ["simulate", "Llama 3 8B", "-H", "H100", "--gpus", "1", "--trace", str(trace)]
    result = CliRunner().invoke(main, [*args, "--instances", "2", "--timeline", str(out), "-q"])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    said = "1 simulated for the deployment's 2 instances, each serving its share alike"
    assert data["otherData"]["instances"].startswith(said)
    labels = [e["args"]["labels"] for e in data["traceEvents"] if e["name"] == "process_labels"]
    assert len(labels) == 1 and said in labels[0]
    alone = tmp_path / "one.json"
    result = CliRunner().invoke(main, [*args, "--timeline", str(alone), "-q"])
    assert result.exit_code == 0 and "instances" not in json.loads(alone.read_text())["otherData"]


def test_a_timeline_of_prefill_and_decode_pools_names_each_pool(tmp_path):
    # the prefill pool's lane had read "instance 1", beside "decode pool, instance 1", with
    # nothing saying it stood for two prefill instances or served other requests
    out = tmp_path / "pools.json"
    args = ["simulate", "Llama 3.1 8B", "-H", "H100", "--gpus", "1", "--instances", "3"]
    args += ["--prefill-instances", "2", "--prefill-gpus", "1", "--rate", "8", "--requests"]
    args += ["60", "--prompt-tokens", "1000", "--output-tokens", "50", "-q"]
    result = CliRunner().invoke(main, [*args, "--timeline", str(out)])
    assert result.exit_code == 0, result.output
    events = json.loads(out.read_text())["traceEvents"]
    names = [e["args"]["name"] for e in events if e["name"] == "process_name"]
    assert names == ["requests", "prefill pool, instance 1", "decode pool, instance 1"]
    said = "the prefill pool's 1 simulated for its 2 instances and the decode pool's 1 for its 3"
    labels = [e["args"]["labels"] for e in events if e["name"] == "process_labels"]
    assert len(labels) == 2 and all(said in label for label in labels)
    runs = {e["args"]["run"] for e in events if e["ph"] == "b" and "run" in e.get("args", {})}
    assert runs == {"prefill pool", "decode pool"}
