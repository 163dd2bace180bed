"""What a refusal names: the option as typed (``--engine``, not the catalog's ``engines``), a
file given by a path that is not there, a misspelt field of a spec file (not the required
field it was meant to be), the cell that left a trace too short, a measured file no row of which
could be read; and what the help and the assumptions line say in a user's words.

The contract (docs/errors.md): one line naming the argument or file, the field and the fix,
exit 2.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import inference_econ as ie
from inference_econ import settings
from inference_econ.cli import main
from inference_econ.errors import SpecError
from inference_econ.load.arrivals import load_trace
from inference_econ.model.latency import stated_experts
from inference_econ.specs import catalog, model_fields
from inference_econ.specs.architecture import architecture_from_dict, load_model
from inference_econ.specs.engine import LIMITS_PER_ATTENTION_RANK
from inference_econ.specs.schema import Reader
from inference_econ.specs.yamlfile import load_yaml

ROOT = Path(__file__).resolve().parent.parent
#: A point on one H100 under an engine profile.
POINT = ["Llama 3.1 8B", "-H", "H100", "--gpus", "1", "--batch", "8"]
POINT += ["--assumptions", "achievable"]


def _cli(*args):
    return CliRunner().invoke(main, list(args))


def _error_line(result) -> str:
    """The one line of a refused command (exit 2), without its "error: "."""
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0].removeprefix("error: ")


# --- an unknown engine profile --------------------------------------------------------------


def test_an_unknown_engine_names_the_option_and_lists_the_profiles():
    line = _error_line(_cli("point", *POINT, "--engine", "tgi"))
    names = ", ".join(e.name for e in catalog.entries("engines"))
    assert line == (
        f"--engine: no engine profile named 'tgi' (the engine profiles are {names}, or give a "
        "path to a YAML file)"
    )
    assert "sglang, trtllm" in names and "field 'engines'" not in line


def test_a_misspelt_engine_names_the_option_with_a_did_you_mean():
    line = _error_line(_cli("point", *POINT, "--engine", "vlm"))
    assert line.startswith("--engine: no engine profile named 'vlm' (did you mean 'vLLM'")


# --- a path that is not there ---------------------------------------------------------------


def test_a_missing_hardware_file_is_said_to_be_missing(tmp_path):
    missing = tmp_path / "nonexist.yaml"
    line = _error_line(
        _cli("point", "Llama 3.1 8B", "-H", str(missing), "--gpus", "1", "--batch", "8")
    )
    assert line == (
        f"--hardware: file '{missing}' not found (check the path, or give a name that "
        "'inference-econ list hardware' shows)"
    )


def test_a_missing_model_file_is_said_to_be_missing(tmp_path):
    missing = tmp_path / "models" / "mine"  # a slash, no .yaml: still a path
    line = _error_line(_cli("point", str(missing), "-H", "H100", "--gpus", "1", "--batch", "8"))
    assert line.startswith(f"MODEL argument: file '{missing}' not found (check the path")


def test_a_missing_file_close_to_a_name_says_the_name():
    line = _error_line(
        _cli("point", "Llama 3.1 8B", "-H", "h100.yaml", "--gpus", "1", "--batch", "8")
    )
    assert line.startswith("--hardware: file 'h100.yaml' not found (did you mean 'H100'")


def test_a_misspelt_scenario_name_with_its_folder_is_still_a_name():
    # scenarios are named by folder ("paper/figure-1"): a slash alone is no path
    line = _error_line(_cli("run", "paper/figur-1"))
    assert line.startswith("SCENARIO argument: no scenario named 'paper/figur-1' (did you mean")
    line = _error_line(_cli("run", "paper/figur-1.yaml"))
    assert line.startswith("SCENARIO argument: file 'paper/figur-1.yaml' not found")


# --- a misspelt field of a model file -------------------------------------------------------


def _model_file(tmp_path, old: str, new: str) -> Path:
    text = (ROOT / "models" / "llama-3.1-8b.yaml").read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "model.yaml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


def test_a_misspelt_model_field_is_named_as_unknown_not_as_the_field_missing(tmp_path):
    path = _model_file(tmp_path, "\nd_model:", "\nd_modell:")
    line = _error_line(_cli("point", str(path), "-H", "H100", "--gpus", "1", "--batch", "8"))
    assert line == f"{path}: field 'd_modell': unknown field (did you mean 'd_model'?)"


def test_a_misspelt_field_inside_a_mapping_of_a_model_is_named(tmp_path):
    path = _model_file(tmp_path, "kv_heads:", "kv_headz:")
    with pytest.raises(SpecError, match=r"field 'attention\.kv_headz': unknown field \(did you"):
        load_model(path)


def test_every_field_a_shipped_model_is_read_for_is_a_known_field(monkeypatch):
    # the reader asks for a field (absent ones too) only where model_fields lists it: a field
    # added to the reader and not to the list would refuse the files that give it
    lists = {
        "": model_fields.MODEL,
        "attention": model_fields.ATTENTION,
        "ffn": model_fields.FFN,
        "mixer": model_fields.MIXER,
        "mtp": model_fields.MTP,
        "expert_routing": model_fields.EXPERT_ROUTING,
    }
    asked: dict[str, set] = {}
    finish = Reader.finish

    def recording(self, allowed_extra=()):
        last = self.prefix.rsplit(".", 1)[-1]
        kind = "layer_group" if last.startswith("layer_groups[") else last
        asked.setdefault(kind, set()).update(self.used)
        return finish(self, allowed_extra)

    monkeypatch.setattr(Reader, "finish", recording)
    for entry in catalog.entries("models"):
        architecture_from_dict(load_yaml(entry.path), str(entry.path))
    lists["layer_group"] = model_fields.LAYER_GROUP
    assert {"", "attention", "ffn", "layer_group", "mixer", "mtp"} <= set(asked)
    for kind, fields in lists.items():
        assert asked.get(kind, set()) <= set(fields), (kind, asked[kind] - set(fields))


# --- an export past the model's context window ----------------------------------------------


def test_an_export_past_the_window_warns_once_then_refuses():
    result = _cli(
        "export", "Llama 3.1 8B", "-H", "H100", "--engine", "vllm", "--gpus", "1", "--batch",
        "8", "--prompt-tokens", "200000", "--output-tokens", "100",
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("warning: a context of 200,050 tokens")
    assert lines[1] == (
        "error: --prompt-tokens: with --output-tokens makes requests of 200,100 tokens, longer "
        "than Llama 3.1 8B's context window (131,072) (plan requests of at most 131,072 tokens "
        "(prompt plus output))"
    )


def test_a_capacity_export_of_requests_past_the_window_is_refused():
    # its launch had been written at the window's length, which every request is longer than
    result = _cli(
        "export", "Llama 3.1 8B", "-H", "H100", "--engine", "vllm", "--plan", "capacity",
        "--rate", "1", "--slo-tpot-p99", "0.1", "--prompt-tokens", "200000", "--output-tokens",
        "100", "--requests", "100", "-q",
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .startswith(
            "error: --prompt-tokens: with --output-tokens makes requests of 200,100 tokens, longer "
            "than Llama 3.1 8B's context window (131,072)"
        )
    )


# --- a measured file none of whose rows can be read -----------------------------------------


def _measured(tmp_path, values: list[str]) -> Path:
    lines = (ROOT / "examples" / "measured-rows.csv").read_text(encoding="utf-8").splitlines()
    header, row = lines[0], lines[1]
    assert row.count(",11147,") == 1
    path = tmp_path / "rows.csv"
    rows = [row.replace(",11147,", f",{v},") for v in values]
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return path


def test_a_measured_file_with_every_row_unresolved_exits_2_with_one_line(tmp_path):
    path = _measured(tmp_path, ["-5", "inf"])
    result = _cli("compare-measured", str(path))
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith("2 rows: 2 unresolved. Not ok: value: is -5")  # each reason
    assert lines[-1] == (
        f"error: {path}: no row could be read: all 2 rows are unresolved, row 2 as value: is -5 "
        "in output tok/s (all GPUs in TP group) (expected a number >= 1e-09 and <= 1e+18) (fix "
        "the cells each row's status names; docs/user-guide.md gives the CSV format)"
    )
    assert "unresolved: value: is inf" in result.stdout  # the table still gives each row


def test_a_measured_file_with_a_row_compared_goes_on(tmp_path):
    result = _cli("compare-measured", str(_measured(tmp_path, ["-5", "11147"])))
    assert result.exit_code == 0, result.output
    assert "2 rows: 1 unresolved, 1 ok (read and predicted)" in result.stderr


# --- a trace whose only row is bad ----------------------------------------------------------


def _trace(tmp_path, *rows: str) -> Path:
    path = tmp_path / "trace.csv"
    path.write_text("\n".join(["arrival_time_s,prompt_tokens,output_tokens", *rows]) + "\n")
    return path


def test_a_trace_whose_only_row_is_bad_names_the_cell_then_the_count_rule(tmp_path):
    path = _trace(tmp_path, "0,-5,100")
    for command in (["simulate", "--gpus", "1"], ["capacity", "--slo-tpot-p99", "0.1"]):
        line = _error_line(_cli(*command, "Llama 3.1 8B", "-H", "H100", "--trace", str(path)))
        assert line == (
            f"{path}: line 2: field 'prompt_tokens': is -5 in tokens (expected a whole number "
            ">= 1 and <= 1e+07; a trace also needs at least 2 request rows, and it has 1)"
        )


def test_a_trace_of_one_good_row_says_the_count_rule(tmp_path):
    with pytest.raises(SpecError, match=r"has 1 request row \(a trace needs at least 2\)"):
        load_trace(_trace(tmp_path, "0,100,100"))


@pytest.mark.parametrize("shape", ["lines", "list"])
def test_a_json_trace_is_refused_as_json_naming_the_file_and_the_csv_it_needs(tmp_path, shape):
    """Each line held the columns as keys, yet the refusal had said "missing column (the
    header must name arrival_time_s, ...)" of the CSV header it read."""
    import json

    rows = [
        {"arrival_time_s": k * 0.5, "prompt_tokens": 300, "output_tokens": 50} for k in range(4)
    ]
    path = tmp_path / "trace.jsonl"
    path.write_text("\n".join(map(json.dumps, rows)) if shape == "lines" else json.dumps(rows))
    line = _error_line(
        _cli("simulate", "Llama 3.1 8B", "-H", "H100", "--gpus", "1", "--trace", str(path))
    )
    assert line == (
        f"{path}: is JSON (one object a line, or a list), not a CSV: a trace is a CSV file (write "
        "it as a CSV whose header names arrival_time_s, prompt_tokens, output_tokens, one row "
        "per request, as examples/trace.csv is)"
    )


# --- what --max-batch caps under attention data parallelism ---------------------------------


def test_the_max_batch_help_says_whose_cap_it_is_under_attention_data_parallelism():
    # TensorRT-LLM and vLLM read the cap per attention rank (the load model multiplies it by
    # the ranks), SGLang per instance: the help says so where the option is given
    assert LIMITS_PER_ATTENTION_RANK == ("trtllm", "vllm")
    for command in ("capacity", "simulate", "export", "frontier"):
        text = " ".join(_cli(command, "--help").output.split())
        assert (
            "With attention data parallelism, each attention rank's under TensorRT-LLM and vLLM "
            "(as they read max_batch_size and max_num_seqs), the instance's under SGLang."
        ) in text, command


# --- the assumptions line of a stated layout ------------------------------------------------


def test_a_stated_expert_layout_is_said_in_words_on_the_assumptions_line():
    # the least micro-batch for expert parallelism is no option: --layout's EP sets it
    assert not any("expert_parallel" in name for name in settings.BY_NAME)
    split = stated_experts(ie.preset("achievable"), True)
    whole = stated_experts(ie.preset("achievable"), False)
    assert split.label.endswith(" + experts split over the tensor group at every batch (the "
                                "layout's EP)")  # fmt: skip
    assert whole.label.endswith(" + experts never split (the layout's EP1)")
    own = ie.preset("paper").replace(expert_parallel_min_batch_per_sparsity=4)
    assert own.label == "paper + expert_parallel_min_batch_per_sparsity=4"  # the API's field
    run = [
        "simulate", "Qwen3-30B-A3B", "-H", "H100", "--gpus", "2", "--layout", "TP2EP2",
        "--rate", "2", "--prompt-tokens", "1000", "--output-tokens", "100", "--requests", "50",
    ]  # fmt: skip
    result = _cli(*run)
    assert result.exit_code == 0, result.output
    line = next(ln for ln in result.output.splitlines() if ln.startswith("Assumptions: "))
    assert line.startswith(
        "Assumptions: achievable preset, engine trtllm + experts split over the tensor group at "
        "every batch (the layout's EP); traffic: "
    )
    assert "expert_parallel_min_batch_per_sparsity" not in result.output


def test_a_misspelt_field_of_a_gpu_or_engine_file_is_named_as_unknown(tmp_path):
    # hardware and engine-profile files check every key before reading any (no field is
    # allowed beyond their known ones: derive_from, scale and link_bandwidth_bytes_per_s of a
    # GPU, fit and standard_errors of a profile are known ones)
    gpu = tmp_path / "gpu.yaml"
    text = (ROOT / "hardware" / "h100_sxm.yaml").read_text(encoding="utf-8")
    gpu.write_text(text.replace("\nname:", "\nnamex:", 1), encoding="utf-8")
    line = _error_line(_cli("point", "Llama 3.1 8B", "-H", str(gpu), "--gpus", "1", "--batch", "8"))
    assert line == f"{gpu}: field 'namex': unknown field (did you mean 'name'?)"
    engine = tmp_path / "engine.yaml"
    text = (ROOT / "engines" / "vllm.yaml").read_text(encoding="utf-8")
    engine.write_text(text.replace("\nengine:", "\nenginex:", 1), encoding="utf-8")
    line = _error_line(_cli("point", *POINT, "--engine", str(engine)))
    assert line == f"{engine}: field 'enginex': unknown field (did you mean 'engine'?)"


def test_a_configuration_that_does_not_fit_says_whether_its_weights_or_its_cache_do_not():
    """Llama 4 Maverick's 16-bit weights (795 GB) past 8 H100s' HBM (684 GB): `request` and
    `point` say the weights do not fit and how to fix it (it had said only "for this request
    mix"); Llama 3 70B at batch 4,096 and 100,000 tokens of context fits its weights and not
    the KV cache, and says that."""
    from click.testing import CliRunner

    from inference_econ.cli import main

    runner = CliRunner()
    lengths = ["--prompt-tokens", "1000", "--output-tokens", "200"]
    out = runner.invoke(main, ["request", "Llama 4 Maverick", "-H", "H100", "--gpus", "8",
                               "--batch", "16", *lengths])  # fmt: skip
    assert out.exit_code == 1
    assert out.output.strip().endswith(
        "for this request mix: its weights (795 GB at 16 bits) exceed the 8 GPUs' 684 GB of HBM: "
        "fewer weight bits (--weight-bits) or more GPUs"
    ), out.output
    out = runner.invoke(main, ["point", "Llama 4 Maverick", "-H", "H100", "--gpus", "8",
                               "--batch", "16"])  # fmt: skip
    assert "its weights (795 GB at 16 bits) exceed" in out.output, out.output
    out = runner.invoke(main, ["point", "Llama 3 70B", "-H", "H100", "--gpus", "8", "--batch",
                               "4096", "--context", "100000"])  # fmt: skip
    assert out.output.strip().endswith(
        "weights plus KV cache exceed HBM: a smaller batch, fewer KV-cache bits or more GPUs"
    ), out.output


@pytest.mark.parametrize(
    "given, meant",
    [
        ("rate", "arrival_rate_per_s"),
        ("slo_ttft_p99", "slo_ttft_p99_s"),
        ("context", "context_tokens"),
    ],
)
def test_a_setting_spelt_as_its_flag_is_named_in_the_api(given, meant):
    """ie.capacity(..., rate=5), as the command line's --rate, had been offered 'trace', 'draft'
    or 'router': the setting whose flag the name spells is the one offered."""
    load = dict(input_lengths="200", output_lengths="20", slo_tpot_p99_s=0.05, requests=40)
    flag = "--" + given.replace("_", "-")
    with pytest.raises(SpecError) as told:
        ie.capacity("Llama 3 8B", "H100", **{"arrival_rate_per_s": 2.0, **load, given: 1})
    assert str(told.value) == (
        f"argument: field '{given}': unknown setting (did you mean '{meant}', the setting of "
        f"{flag}?)"
    )


def test_the_api_names_a_missing_gpu_a_misspelt_load_setting_and_takes_a_number_as_a_length():
    """ie.frontier("Llama 3 70B") had said "no hardware spec named 'None'"; requets=500 had
    been offered 'redundant_experts' (the load settings were not among the names tried); and
    input_lengths=500 had been refused as "expected text" where --prompt-tokens 500 is taken."""
    with pytest.raises(SpecError) as missing:
        ie.frontier("Llama 3 70B")
    assert str(missing.value).startswith("argument: field 'hardware': is missing (name the GPU")
    assert "hardware='H100'" in str(missing.value) and "'None'" not in str(missing.value)
    load = dict(gpus=1, arrival_rate_per_s=2.0, output_lengths="20", requests=40, seed=1)
    with pytest.raises(
        SpecError, match=r"field 'requets': unknown setting \(did you mean 'requests'"
    ):
        ie.simulate_load("Llama 3 8B", "H100", input_lengths="200", requets=500, **load)
    as_number = ie.simulate_load("Llama 3 8B", "H100", input_lengths=200, **load)
    as_text = ie.simulate_load("Llama 3 8B", "H100", input_lengths="200", **load)
    assert as_number.traffic == as_text.traffic and as_number.p99 == as_text.p99
    with pytest.raises(
        SpecError, match=r"field 'output_lengths \(tokens\)': is '2\.5' \(expected a whole"
    ):
        ie.simulate_load("Llama 3 8B", "H100", input_lengths=200, **{**load, "output_lengths": 2.5})


# --- a GPU count that is not whole ----------------------------------------------------------


def test_a_fractional_gpu_count_of_a_deployment_is_refused_naming_its_option():
    """A prefill pool of 2.5 GPUs had been refused as "--gpus: is 2.5", the decode pool's
    option; compare-measured's --gpus 2.5 had had click's "is not a valid integer range",
    without a fix, and ``compare_measured(gpus=2.5)`` had been taken; ``sizes=[1, 2.5]`` had
    been refused as the field 'gpus_per_instance', which no caller gives."""
    load = ["--prompt-tokens", "1000", "--output-tokens", "100", "--requests", "100",
            "--slo-ttft-p99", "2", "--slo-tpot-p99", "0.05"]  # fmt: skip
    line = _error_line(
        _cli("capacity", "Llama 3.1 8B", "-H", "H100", "--gpus", "1", "--prefill-gpus", "2.5",
             *load)
    )  # fmt: skip
    assert line == "--prefill-gpus: is 2.5 (an instance has a whole number of GPUs)"
    rows = str(ROOT / "examples" / "measured-rows.csv")
    for command in ("compare-measured", "calibrate"):
        line = _error_line(_cli(command, rows, "--gpus", "2.5"))
        assert line == "--gpus: is '2.5' (expected a whole number >= 1 and <= 1048576)"
    with pytest.raises(SpecError, match=r"^argument: field 'gpus': is 2\.5 \(expected a whole"):
        ie.compare_measured(rows, gpus=2.5)
    served = dict(arrival_rate_per_s=1.0, input_lengths="1000", output_lengths="100",
                  requests=100, slo_ttft_p99_s=2.0, slo_tpot_p99_s=0.05)  # fmt: skip
    with pytest.raises(SpecError) as sizes:
        ie.capacity("Llama 3.1 8B", ["H100"], sizes=[1, 2.5], **served)
    assert str(sizes.value) == (
        "argument: field 'sizes': is 2.5 (expected a whole number >= 1 and <= 1048576)"
    )
    with pytest.raises(SpecError, match=r"field 'sizes': is 8, not a list of GPU counts"):
        ie.capacity("Llama 3.1 8B", ["H100"], sizes=8, **served)
