"""Output never destroys what it did not create (docs/errors.md): symlinks, permissions,
devices, folders, inputs of the same command, unwritable places, interruptions."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from inference_econ.cli import main
from inference_econ.errors import SpecError
from inference_econ.output.files import MANIFEST, write_atomic

ROOT = Path(__file__).resolve().parent.parent
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
FRONTIER = ["frontier", "Llama 3 8B", "-H", "H100-paper", "--grid-points", "16", "--format", "csv"]


def cli(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stderr


def test_a_symlink_is_followed_and_kept(tmp_path):
    real = tmp_path / "real.csv"
    write_atomic(real, "old\n")  # the tool's own file (a user's would be refused)
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    code, _ = cli(*FRONTIER, "--out", link)
    assert code == 0 and link.is_symlink() and os.readlink(link) == str(real)
    header = next(line for line in real.read_text().splitlines() if not line.startswith("#"))
    assert header.startswith("tokens_per_s,")


def test_an_existing_file_keeps_its_mode(tmp_path):
    target = tmp_path / "private.csv"
    write_atomic(target, "old\n")  # the tool's own file: a mode change keeps it the tool's
    target.chmod(0o600)
    assert cli(*FRONTIER, "--out", target)[0] == 0
    assert stat.S_IMODE(target.stat().st_mode) == 0o600 and target.read_text() != "old\n"
    fresh = write_atomic(tmp_path / "new.txt", "x")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o666 & ~umask


def test_a_directory_or_fifo_is_refused_before_anything_runs(tmp_path):
    code, err = cli(*FRONTIER, "--out", tmp_path)
    assert code == 2 and "is a directory, not a regular file" in err
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    code, err = cli(*FRONTIER, "--out", fifo)
    assert code == 2 and "FIFO" in err and stat.S_ISFIFO(fifo.stat().st_mode)


@pytest.mark.skipif(not IS_ROOT, reason="creating a device node needs root")
def test_a_device_is_refused_and_left_alone(tmp_path):
    device = tmp_path / "null"
    os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a twin of /dev/null
    code, err = cli(*FRONTIER, "--out", device)
    assert code == 2 and "is a device" in err and stat.S_ISCHR(device.stat().st_mode)
    with pytest.raises(SpecError, match="is a device"):
        write_atomic(device, "x")
    assert stat.S_ISCHR(device.stat().st_mode)


def test_dev_null_is_refused():
    code, err = cli(*FRONTIER, "--out", "/dev/null")
    assert code == 2 and "is a device" in err and stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_an_input_of_the_command_is_never_overwritten(tmp_path):
    model = tmp_path / "m.yaml"
    model.write_text((ROOT / "models" / "llama-3-8b.yaml").read_text())
    before = model.read_text()
    link = tmp_path / "link.yaml"
    link.symlink_to(model)
    hard = tmp_path / "hard.yaml"
    os.link(model, hard)
    for out in (model, link, hard):
        code, err = cli("frontier", model, "-H", "H100-paper", "--grid-points", "16", "--out", out)
        assert code == 2 and "is an input of this command" in err, (out, err)
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "llama", "hidden_size": 64}))
    code, err = cli("import-hf", config, "-o", config)  # a YAML output's suffix is .yaml
    assert code == 2 and "cannot be written as '.json'" in err
    as_yaml = tmp_path / "config.yaml"
    as_yaml.symlink_to(config)
    code, err = cli("import-hf", config, "-o", as_yaml)
    assert code == 2 and "is an input of this command" in err
    assert model.read_text() == before and json.loads(config.read_text())["hidden_size"] == 64


def test_an_output_written_before_is_replaced_not_taken_for_an_input(tmp_path):
    """Writing the same --out twice works (reproduce's --out is a file or a folder): an
    earlier output is not an input of the command."""
    table = tmp_path / "t1.csv"
    for _ in range(2):
        code, err = cli("reproduce", "table-1", "--out", table, "-q")
        assert code == 0, err
    assert table.read_text().startswith("# Computed with: paper/table-1")
    # a report is HTML: another suffix is refused before any work
    code, err = cli("report", "paper/figure-6", "--out", tmp_path / "f.png")
    assert code == 2 and "cannot be written as '.png'" in err


def test_an_unwritable_place_is_one_line_and_exit_2(tmp_path):
    for target in ("/proc/version/x.csv", "/proc/no-such-folder/x.csv", f"{tmp_path}/x.csv/"):
        code, err = cli(*FRONTIER, "--out", target)
        # one error line (after any progress line), no traceback
        errors = [line for line in err.splitlines() if not line.startswith("[")]
        assert code == 2 and len(errors) == 1 and errors[0].startswith("error: "), err


@pytest.mark.skipif(not Path("/proc/version").exists(), reason="needs Linux's /proc")
def test_a_place_that_takes_no_new_files_is_refused_before_any_work(monkeypatch):
    """/proc passes every permission check for root, but creates nothing: the study, the API's
    study and a table's --out are refused before any cell or frontier is computed."""
    import inference_econ as ie
    from inference_econ.runs import study_run

    def computed(*args, **kwargs):
        raise AssertionError("a cell was computed")

    monkeypatch.setattr(study_run, "run_cells", computed)
    study = ROOT / "examples" / "study.yaml"
    for args in (
        ("study", study, "--out", "/proc/x", "--jobs", "1"),
        (*FRONTIER, "--out", "/proc/x.csv"),
        (*FRONTIER, "--out", "/proc/no-such-folder/x.csv"),
    ):
        code, err = cli(*args)
        assert code == 2 and err.splitlines() == [
            f"error: --out {args[-3] if args[0] == 'study' else args[-1]}: cannot be written: "
            "creating in /proc fails with 'No such file or directory' "
            "(give a path on a file system that takes new files)"
        ], err
    for place in ({"out": "/proc/x"}, {"cache_dir": "/proc/x/cache"}):
        with pytest.raises(SpecError, match="creating in /proc fails"):
            ie.study(study, jobs=1, **place)


@pytest.mark.skipif(IS_ROOT, reason="root writes through permissions")
def test_a_read_only_folder_or_file_is_refused(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    code, err = cli(*FRONTIER, "--out", folder / "x.csv")
    assert code == 2 and "permission denied" in err
    folder.chmod(0o700)
    target = folder / "x.csv"
    target.write_text("keep\n")
    target.chmod(0o400)
    code, err = cli(*FRONTIER, "--out", target)
    assert code == 2 and target.read_text() == "keep\n"


def test_a_read_only_file_is_refused_even_for_root(tmp_path):
    """Run as root (as on the development machine), --out replaced a 0444 file: root's
    writes pass every permission check, so the file's own mode is read."""
    target = tmp_path / "mine.csv"
    write_atomic(target, "keep\n")  # the tool's own (a user's file is refused: see below)
    target.chmod(0o444)
    code, err = cli(*FRONTIER, "--out", target)
    assert code == 2 and target.read_text() == "keep\n"
    assert "is read-only: replacing it would destroy it (make it writable (chmod u+w)" in err
    target.chmod(0o644)
    code, err = cli(*FRONTIER, "--out", target)
    assert code == 0 and target.read_text().startswith("# Computed with")


def test_figure_suffix_and_folders_are_checked_before_anything_is_written(tmp_path, no_work):
    code, err = cli("sweep", "Llama 3 8B", "-H", "H100-paper", "--tornado", tmp_path / "t.txt")
    assert code == 2 and "cannot be written as '.txt'" in err
    assert list(tmp_path.iterdir()) == []
    afile = tmp_path / "file"
    afile.write_text("x")
    code, err = cli("run", "paper/figure-2", "--out", afile)
    assert code == 2 and "is not a folder" in err and afile.read_text() == "x"
    code, err = cli("reproduce", "figure-2", "--out", afile)
    assert code == 2 and "is not a folder" in err


def test_every_figure_suffix_offered_is_written_and_recorded(tmp_path):
    """A figure is written in every format the refusal of a bad suffix lists: JPEG, TIFF,
    WebP and raw RGBA take no metadata (matplotlib had refused the version it was given,
    a traceback), svgz no software key; each file is recorded as the toolkit's, and a second
    write replaces it. pgf needs LaTeX: refused before any work, with the same list."""
    import matplotlib.pyplot as plt

    from inference_econ.output import plots
    from inference_econ.output.files import figure_formats

    formats = figure_formats()
    assert {"png", "svg", "svgz", "pdf", "eps", "jpg", "jpeg", "tif", "webp", "raw"} <= set(
        formats
    ) and "pgf" not in formats
    for _ in range(2):  # the second time over the first's files
        fig, ax = plt.subplots(figsize=(2, 1.5))
        ax.plot([1, 2], [3, 4])
        written = plots.save(fig, tmp_path / "f", formats)
    assert sorted(p.name for p in written) == sorted(f"f.{fmt}" for fmt in formats)
    assert all(p.stat().st_size > 0 for p in written)
    assert sorted(json.loads((tmp_path / MANIFEST).read_text())["files"]) == sorted(
        p.name for p in written
    )
    code, err = cli(*FRONTIER, "--figure", tmp_path / "g.jpg")  # the command's own path
    assert code == 0 and (tmp_path / "g.jpg").read_bytes().startswith(b"\xff\xd8")
    for bad in ("pgf", "txt"):
        code, err = cli("sweep", "Llama 3 8B", "-H", "H100-paper", "--tornado", f"t.{bad}")
        listed = err.split("(use one of ")[-1].rstrip(")\n").split(", ")
        assert code == 2 and err.count("\n") == 1 and f"--tornado t.{bad}" in err
        assert listed == [f".{fmt}" for fmt in formats]


def test_writes_are_atomic_and_leave_no_temporary_files(tmp_path):
    target = tmp_path / "out.txt"
    for text in ("first\n", "second\n" * 1000):
        write_atomic(target, text)
        assert target.read_text() == text
    assert sorted(p.name for p in tmp_path.iterdir()) == [MANIFEST, "out.txt"]


# --- interruptions -----------------------------------------------------------------------


def complete(path: Path) -> bool:
    """A written file is whole: PNG to its IEND chunk, SVG to its closing tag, JSON parses."""
    data = path.read_bytes()
    if path.suffix == ".png":
        return data.startswith(b"\x89PNG") and data.rstrip().endswith(b"IEND\xaeB`\x82")
    if path.suffix == ".svg":
        return data.rstrip().endswith(b"</svg>")
    if path.suffix == ".json":
        json.loads(data)
        return True
    return data.endswith(b"\n")  # CSV and Markdown end with a newline


SMALL = """\
title: Interrupted
plots: [frontier, mfu, breakdown]
defaults: {hardware: H100-paper, grid_points: 24}
curves:
  - {label: A, model: Llama 3 8B}
"""


def _default_sigint() -> None:
    """In the child before it starts: SIGINT's default action, whatever the suite inherited."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_an_interrupted_run_leaves_no_partial_files(tmp_path, sig):
    """Killed (or interrupted) while it writes its figures and tables - what `reproduce all`
    does for every scenario, here on one small scenario: every file there is whole, none is
    half written and no temporary file is left."""
    scenario = tmp_path / "small.yaml"
    scenario.write_text(SMALL)
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "inference_econ.cli", "run", str(scenario), "--out", str(out), "-q"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        # SIGINT as a terminal delivers it: a suite run as a background job ignores SIGINT,
        # and a child inheriting that would finish untouched
        preexec_fn=_default_sigint,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:  # until the first file appears
        if out.is_dir() and any(p.name != MANIFEST for p in out.iterdir()):
            break
        time.sleep(0.005)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    if sig == signal.SIGINT and proc.returncode != 0:  # 0: it finished before the signal
        assert proc.returncode == 130 and b"Traceback" not in err, err
    names = sorted(p.name for p in out.iterdir())
    # no temporary file; the folder's record of what the tool wrote is whole and names them
    assert names and not [n for n in names if n.startswith(".") and n != MANIFEST], names
    assert set(names) - {MANIFEST} <= set(json.loads((out / MANIFEST).read_text())["files"])
    assert all(complete(out / n) for n in names), names


class _CtrlCWhileRead:
    """A coordinate that receives SIGINT while numpy reads it into an array, as numpy's array
    coercion does when Ctrl-C arrives then (it checks for signals)."""

    def __float__(self) -> float:
        signal.raise_signal(signal.SIGINT)
        return 0.0


class _CtrlCWhileFreed:
    """An object that receives SIGINT while it is freed, where Python cannot raise it."""

    def __del__(self) -> None:
        signal.raise_signal(signal.SIGINT)


def _interrupted_save(monkeypatch, interrupt):
    """``plots.save`` that writes the first figure, then runs ``interrupt`` as the second is
    drawn."""
    from inference_econ.output import plots

    real, saved = plots.save, []

    def save(fig, *args, **kwargs):
        if saved:
            interrupt(fig)
        saved.append(fig)
        return real(fig, *args, **kwargs)

    monkeypatch.setattr(plots, "save", save)


@pytest.fixture
def python_sigint_handler():
    """Python's own SIGINT handler, as in a terminal (a test run as a background job starts
    with SIGINT ignored); the previous one after the test."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def _assert_interrupted(tmp_path, interrupt, monkeypatch):
    """``run`` of the small scenario, interrupted as its second figure is drawn: exit 130 and
    one line, the first figure whole, and Python's SIGINT handler back in place."""
    scenario = tmp_path / "small.yaml"
    scenario.write_text(SMALL)
    out = tmp_path / "out"
    _interrupted_save(monkeypatch, interrupt)
    code, err = cli("run", scenario, "--out", out, "-q")
    assert code == 130 and err.split() == ["error:", "interrupted"], (code, err)
    names = sorted(p.name for p in out.iterdir())
    assert "small-frontier.png" in names and "small-mfu.png" not in names, names
    assert set(names) - {MANIFEST} <= set(json.loads((out / MANIFEST).read_text())["files"])
    assert all(complete(out / n) for n in names), names
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.usefixtures("python_sigint_handler")
def test_an_interrupt_matplotlib_turns_into_a_type_error_is_an_interrupt(tmp_path, monkeypatch):
    """Ctrl-C while matplotlib transforms a figure's points: numpy raises KeyboardInterrupt
    inside matplotlib's pybind11 argument casting, which drops it and raises TypeError
    ('affine_transform(): incompatible function arguments'). The SIGINT was noted: exit 130
    and one line, not a traceback and exit 1."""
    from matplotlib.transforms import Affine2D

    def interrupt(fig):
        Affine2D().scale(fig.dpi).transform([[_CtrlCWhileRead(), 0.0]])

    _assert_interrupted(tmp_path, interrupt, monkeypatch)


@pytest.mark.usefixtures("python_sigint_handler")
def test_an_interrupt_in_a_finalizer_stops_the_command(tmp_path, monkeypatch):
    """Ctrl-C while an object is freed (a finalizer or weakref callback, as matplotlib's
    transforms have): Python would print it as 'Exception ignored in' with a traceback and
    go on; it is raised again where it stops the command."""
    _assert_interrupted(tmp_path, lambda fig: _CtrlCWhileFreed(), monkeypatch)


#: The command line (a ``point``, the cheapest command to start), then a SIGINT to itself
#: from an exit handler (``atexit``) or as the interpreter tears its modules down
#: (``teardown``: an object freed with its module), with Python's own handler in place first,
#: as in a terminal.
SIGINT_AT_EXIT = """\
import atexit, os, signal, sys, types
signal.signal(signal.SIGINT, signal.default_int_handler)
from inference_econ.cli import main

def interrupt(kill=os.kill, pid=os.getpid(), sig=signal.SIGINT):
    kill(pid, sig)

class Freed:
    def __del__(self, interrupt=interrupt):
        interrupt()

if sys.argv[1] == "atexit":
    atexit.register(interrupt)
else:
    sys.modules["freed"] = types.ModuleType("freed")
    sys.modules["freed"].it = Freed()
sys.argv[1:] = ["point", "Llama 3 8B", "-H", "H100-paper", "--gpus", "1", "--batch", "1"]
main()
"""


@pytest.mark.parametrize("when", ["atexit", "teardown"])
def test_ctrl_c_after_the_command_has_ended_changes_nothing(when):
    """A SIGINT as the interpreter shuts down, after the command's exit code is settled: in
    an exit handler Python printed it as a traceback; later, with Python's default action
    back in place, it killed the process (exit -2)."""
    done = subprocess.run(
        [sys.executable, "-c", SIGINT_AT_EXIT, when], capture_output=True, timeout=120
    )
    assert done.returncode == 0 and b"H100" in done.stdout and not done.stderr, done


# --- output folders: a manifest of what the tool wrote -------------------------------------

TINY_STUDY = """\
title: Tiny
axes:
  model: [Llama 3 8B]
  precision:
    - {label: "=1+1", weight_bits: 16}
    - {label: "@SUM(A1:A2)", weight_bits: 8}
defaults: {hardware: H100-paper, grid_points: 8}
"""


def test_a_users_file_in_an_output_folder_is_never_replaced(tmp_path):
    """run --out and study --out replace only files the tool wrote there (its manifest),
    never a user's own file of an output's name; names that look like formulas start CSV
    cells quoted (OWASP); a report never overwrites the study it reads, even by symlink."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SMALL.replace("plots: [frontier, mfu, breakdown]", "plots: []")
                        .replace("label: A", "label: '=HYPERLINK(\"x\")'"))  # fmt: skip
    out = tmp_path / "run"
    out.mkdir()
    (out / "s-points.csv").write_text("mine\n")
    code, err = cli("run", scenario, "--out", out, "-q")
    assert (
        code == 2 and "did not write it" in err and (out / "s-points.csv").read_text() == "mine\n"
    )
    (out / "s-points.csv").unlink()
    for _ in range(2):  # the second run replaces what the first wrote
        assert cli("run", scenario, "--out", out, "-q")[0] == 0
    points = (out / "s-points.csv").read_text()
    assert '\n"\'=HYPERLINK(""x"")",' in points and "\n=" not in points
    assert "s-points.csv" in json.loads((out / MANIFEST).read_text())["files"]

    spec = tmp_path / "tiny.yaml"
    spec.write_text(TINY_STUDY)
    folder = tmp_path / "study"
    folder.mkdir()
    (folder / "study.json").write_text("{}")
    code, err = cli("study", spec, "--out", folder, "--jobs", "1", "-q")  # refused before any work
    assert code == 2 and "study.json: exists" in err and not (folder / "cache").exists()
    (folder / "study.json").unlink()
    assert cli("study", spec, "--out", folder, "--jobs", "1", "-q")[0] == 0
    keys = (folder / "key_points.csv").read_text()
    assert ",'=1+1," in keys and ",'@SUM(A1:A2)," in keys and ",=" not in keys
    before = (folder / "study.json").read_text()
    (folder / "r.html").symlink_to("study.json")
    code, err = cli("report", folder, "--out", folder / "r.html")
    assert code == 2 and "is an input of this command" in err
    assert (folder / "study.json").read_text() == before


def test_a_run_whose_output_is_its_measured_overlay_writes_nothing(tmp_path):
    """run --out . --measured s-points.csv: the points' CSV would overwrite the overlay. The
    refusal had come after the figures were written; every output is now checked once the
    inputs are read, before anything is written. A user's
    own file of an output's name is refused the same way, the folder left as it was."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SMALL)
    measured = tmp_path / "s-points.csv"
    measured.write_text("tokens_per_s,usd_per_mtok\n50,1.0\n")
    code, err = cli("run", scenario, "--out", tmp_path, "--measured", measured, "-q")
    assert code == 2 and err.count("\n") == 1 and "is an input of this command" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s-points.csv", "s.yaml"]
    out = tmp_path / "out"
    out.mkdir()
    (out / "s-points.md").write_text("mine\n")
    code, err = cli("run", scenario, "--out", out, "--measured", measured, "-q")
    assert code == 2 and "s-points.md" in err and "did not write it" in err
    assert [p.name for p in out.iterdir()] == ["s-points.md"]


# --- single files: the same record as output folders -------------------------------------

EXAMPLES = ROOT / "examples"
PRECIOUS = "precious\n"


def users_file(path: Path) -> Path:
    path.write_text(PRECIOUS)
    return path


#: The work of each writer below, as the command line reaches it (at call time, so a patched
#: attribute is what it calls): a frontier's points, a config's import, a fit, a reproduced
#: table, a report's sections and page.
WORK = (
    ("inference_econ.api", ("frontier", "frontier_columns", "import_hf_config", "import_hf_repo",
                            "calibrate", "run_table", "run_scenario", "sweep", "elasticities")),
    ("inference_econ.output.report_sections", ("study_section", "scenario_section")),
    ("inference_econ.output.report", ("write_report",)),
)  # fmt: skip


@pytest.fixture
def no_work(monkeypatch):
    """Every writer's work refused: a refusal that comes after any of it fails the test."""

    def began(*args, **kwargs):
        raise AssertionError("work began before the output was checked")

    for module, names in WORK:
        for name in names:
            monkeypatch.setattr(f"{module}.{name}", began)


@pytest.mark.parametrize(
    "writer",
    [
        lambda d: [*FRONTIER, "--out", d / "mine.csv"],  # a table's --out (cli/common)
        lambda d: [*FRONTIER, "--figure", d / "mine.png"],  # a figure (FigureFile)
        lambda d: ["import-hf", EXAMPLES / "config.json", "-o", d / "mine.yaml"],
        lambda d: ["calibrate", EXAMPLES / "measured-rows.csv", "-o", d / "mine.yaml"],
        lambda d: ["reproduce", "table-1", "--out", d / "mine.csv"],  # a file or a folder
        lambda d: ["report", d, "--out", d / "mine.html"],
    ],
    ids=["table", "figure", "import-hf", "calibrate", "reproduce", "report"],
)
def test_a_users_file_is_refused_by_every_writer_before_any_work(tmp_path, writer, no_work):
    """`echo precious > mine.csv; frontier ... --out mine.csv` replaced the user's file: a
    single file is replaced only if the tool wrote it (its folder's record, files.MANIFEST),
    checked before anything is computed (``no_work``: every writer's work refuses to start)."""
    args = writer(tmp_path)
    mine = users_file(Path(args[-1]))
    code, err = cli(*args)
    assert code == 2, err
    assert f"{mine}: exists, and inference-econ did not write it (it is not in {MANIFEST})" in err
    assert "(remove it, or choose another name; a file an earlier version wrote" in err
    assert mine.read_text() == PRECIOUS and not (tmp_path / MANIFEST).exists()


def test_export_refuses_a_users_file_in_its_folder(tmp_path):
    out = tmp_path / "plan"
    out.mkdir()
    users_file(out / "launch.sh")
    args = ["export", "Llama 3 8B", "-H", "H100", "--engine", "vllm", "--gpus", "1"]
    code, err = cli(*args, "--batch", "8", "--prompt-tokens", "1000", "--output-tokens", "100",
                    "--out", out)  # fmt: skip
    assert code == 2 and "launch.sh: exists, and inference-econ did not write it" in err, err
    assert (out / "launch.sh").read_text() == PRECIOUS


@pytest.mark.parametrize(
    "writer",
    [
        lambda d: [*FRONTIER, "--out", d / "t.csv"],
        lambda d: ["import-hf", EXAMPLES / "config.json", "-o", d / "m.yaml"],
    ],  # calibrate -o and the figures write through the same write_atomic (1 s CPU more)
    ids=["table", "import-hf"],
)
def test_a_second_run_replaces_its_own_file_but_not_one_changed_since(tmp_path, writer):
    args = writer(tmp_path)
    out = Path(args[-1])
    for _ in range(2):
        code, err = cli(*args)
        assert code == 0, err
    record = json.loads((tmp_path / MANIFEST).read_text())
    digest = hashlib.sha256(out.read_bytes()).hexdigest()
    assert record["files"] == [out.name]
    assert record["stamps"] == {out.name: [out.stat().st_size, digest]}
    os.utime(out, (0, 0))  # touched, or copied without its time: still the tool's
    assert cli(*args)[0] == 0
    text = out.read_text()
    for edited in (text + "# my note\n", text[:-2] + "x\n"):  # the user edits it: theirs now
        out.write_text(edited)
        code, err = cli(*args)
        assert code == 2 and f"{out}: has changed since inference-econ wrote it" in err, err
        assert out.read_text() == edited
    out.unlink()
    assert cli(*args)[0] == 0


def test_a_symlink_to_a_users_file_is_refused_by_its_target(tmp_path):
    """The record is kept beside the file a symlink points to, keyed on that file."""
    (tmp_path / "data").mkdir()
    mine = users_file(tmp_path / "data" / "mine.csv")
    link = tmp_path / "link.csv"
    link.symlink_to(mine)
    code, err = cli(*FRONTIER, "--out", link)
    assert code == 2 and f"--out {link}: exists, and inference-econ did not write it" in err
    assert mine.read_text() == PRECIOUS
    mine.unlink()
    assert cli(*FRONTIER, "--out", tmp_path / "data" / "mine.csv")[0] == 0
    assert cli(*FRONTIER, "--out", link)[0] == 0 and link.is_symlink()
    assert json.loads((tmp_path / "data" / MANIFEST).read_text())["files"] == ["mine.csv"]
    assert not (tmp_path / MANIFEST).exists()


def test_a_record_of_names_only_is_trusted_and_a_foreign_record_refused(tmp_path):
    """A folder an earlier version wrote (names, no stamps) keeps working; a file of the
    record's name that is not a record is the user's, refused and kept; so is --out of it."""
    (tmp_path / "t.csv").write_text("an earlier run's table\n")
    (tmp_path / MANIFEST).write_text('{"written_by": "inference-econ", "files": ["t.csv"]}')
    assert cli(*FRONTIER, "--out", tmp_path / "t.csv")[0] == 0
    assert (tmp_path / "t.csv").read_text().startswith("# Computed with")
    other = tmp_path / "other"
    other.mkdir()
    users_file(other / MANIFEST)
    code, err = cli(*FRONTIER, "--out", other / "t.csv")
    assert code == 2 and "is not inference-econ's record of the files it wrote" in err
    assert (other / MANIFEST).read_text() == PRECIOUS and not (other / "t.csv").exists()
    code, err = cli(*FRONTIER, "--out", tmp_path / MANIFEST)
    assert code == 2 and "is the name of inference-econ's record" in err


def test_a_record_that_cannot_be_written(tmp_path, monkeypatch):
    """A read-only record (or another user's in a shared folder such as /tmp): a new file is
    written, with a warning that a later run will refuse it; a user's file is refused."""
    from inference_econ.output import files

    record = tmp_path / MANIFEST
    record.write_text('{"written_by": "inference-econ", "files": []}')
    record.chmod(0o444)
    out = tmp_path / "t.csv"
    code, err = cli(*FRONTIER, "--out", out)
    assert code == 0 and out.read_text().startswith("# Computed with"), err
    assert f"warning: {out}: written, but {record} cannot be written to record it" in err
    assert cli(*FRONTIER, "--out", out)[0] == 0  # the same process wrote it: it may again
    monkeypatch.setattr(files, "_UNRECORDED", {})  # a later run
    before = out.read_text()
    code, err = cli(*FRONTIER, "--out", out)
    assert code == 2 and "did not write it" in err and out.read_text() == before
    assert json.loads(record.read_text())["files"] == []
    users_file(tmp_path / "mine.csv")
    code, err = cli(*FRONTIER, "--out", tmp_path / "mine.csv")
    assert (
        code == 2 and "did not write it" in err and (tmp_path / "mine.csv").read_text() == PRECIOUS
    )


def test_the_record_is_written_before_the_file(tmp_path, monkeypatch):
    """A run killed while it writes leaves the file's name recorded (without a stamp: taken
    as the tool's), so the next run replaces it."""
    from inference_econ.output import files

    out = tmp_path / "t.csv"

    unnamed = files._write_unnamed

    def killed(target, *args):
        if target.name == "t.csv":
            raise KeyboardInterrupt
        return unnamed(target, *args)

    monkeypatch.setattr(files, "_write_unnamed", killed)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(out, "x\n")
    assert json.loads((tmp_path / MANIFEST).read_text())["files"] == ["t.csv"]
    out.write_text("half\n")  # what an interrupted write could have left
    monkeypatch.undo()
    write_atomic(out, "whole\n")
    assert out.read_text() == "whole\n"


def test_an_output_is_named_as_typed(tmp_path):
    """Errors name an output option as the user types it (``--timeline-figure``), not as its
    Python parameter (``--timeline_figure``)."""
    run = ["simulate", "Llama 3 8B", "-H", "H100", "--gpus", "1", "--rate", "1"]
    run += ["--timeline-figure"]
    code, err = cli(*run, tmp_path)
    assert code == 2 and "--timeline-figure" in err and "--timeline_figure" not in err
    theirs = tmp_path / "theirs.png"
    theirs.write_bytes(b"a user's picture")
    code, err = cli(*run, theirs)
    assert code == 2 and "--timeline-figure" in err and "--timeline_figure" not in err
    assert "would destroy it" in err and theirs.read_bytes() == b"a user's picture"


SIMULATE = ["simulate", "Llama 3.1 8B", "-H", "H100", "--gpus", "1", "--rate", "2"]
EXPORT = ["export", "Llama 3 8B", "-H", "H100", "--engine", "vllm", "--gpus", "1", "--batch", "8"]


@pytest.mark.parametrize(
    ("option", "command"),
    [
        ("--out", FRONTIER),
        ("--figure", FRONTIER),
        ("--tornado", ["sweep", "Llama 3 8B", "-H", "H100-paper"]),
        ("--figure", ["infer", "feasibility", "paper-2025", "--model", "Llama 3 70B"]),
        ("--figure", ["compare-measured", EXAMPLES / "measured-rows.csv"]),
        ("-o", ["calibrate", EXAMPLES / "measured-rows.csv"]),
        ("-o", ["import-hf", EXAMPLES / "config.json"]),
        ("--timeline", SIMULATE),
        ("--timeline-figure", SIMULATE),
        ("--figure", ["capacity", "Llama 3.1 8B", "-H", "H100", "--rate", "2"]),
        ("--out", [*EXPORT, "--prompt-tokens", "1000", "--output-tokens", "100"]),
        ("--out", ["reproduce", "table-1"]),
        ("--out", ["run", "paper/figure-2"]),
        ("--out", ["study", EXAMPLES / "study.yaml"]),
        ("--out", ["report", EXAMPLES]),
    ],
    ids=lambda v: v if isinstance(v, str) else v[0],
)
def test_an_output_under_a_file_is_one_line_naming_the_option_and_the_file(
    tmp_path, option, command
):
    """An output path through a file (a/x.png where a is a file) is refused as it is parsed,
    before anything runs, by every command that writes: the option, the file that stands
    where a folder should and the fix, exit 2, never a traceback or a late OS error."""
    afile = users_file(tmp_path / "notes")
    suffix = {"--figure": ".png", "--tornado": ".png", "-o": ".yaml", "--timeline": ".json"}
    target = afile / "sub" / f"x{suffix.get(option, '.png' if 'figure' in option else '')}"
    if command[0] in ("frontier", "reproduce") and option == "--out":
        target = target.with_suffix(".csv")
    if command[0] == "report":
        target = target.with_suffix(".html")
    code, err = cli(*command, option, target)
    assert code == 2, err
    shown = "--out" if option == "-o" else option  # an option is named by its long form
    assert err == (
        f"error: {shown} {target}: cannot be created: {afile} is a file, not a folder (give a "
        "path whose existing parts are folders; missing folders are created)\n"
    )
    assert afile.read_text() == PRECIOUS and sorted(tmp_path.iterdir()) == [afile]


def test_an_output_in_missing_folders_creates_them(tmp_path):
    """Missing folders on an output's path are created (docs/errors.md, "Output safety"),
    the figure and the table written there."""
    figure = tmp_path / "new" / "deeper" / "f.png"
    table = tmp_path / "other" / "t.csv"
    code, err = cli(*FRONTIER, "--figure", figure, "--out", table)
    assert code == 0, err
    assert figure.read_bytes().startswith(b"\x89PNG") and table.read_text().startswith("# ")
    assert json.loads((figure.parent / MANIFEST).read_text())["files"] == ["f.png"]
