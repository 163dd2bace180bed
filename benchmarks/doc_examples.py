"""Run every example of the README, the user guide and every command's --help as written, from
a fresh clone of this checkout, and say which ran (exit 0), which did not, and what each cost.

The test suite runs the --help examples (tests/test_help_examples.py); the README's and the
guide's include long runs (``reproduce all``, the 600-cell study, 10,000-request capacity
searches), so this script checks them on demand. Commands run in order, one block after
another, each in a new process (``inference-econ`` on PATH), from the clone's top folder:
an example that reads what an earlier one wrote (a study's folder, a calibrated profile) finds
it. Python blocks run with ``python -c``. CPU seconds are the processes' user + system time
(``resource.getrusage(RUSAGE_CHILDREN)``).

    python benchmarks/doc_examples.py [--only WORDS] [--skip WORDS] [--timeout 1800]

Examples that need the network (``import-hf org/name`` reads the Hugging Face Hub) are listed
as such and skipped unless ``--network``; so is a study on a running Dask scheduler. (The test
suite runs the --help example of the Hub with a stand-in hub serving examples/config.json.)
"""

from __future__ import annotations

import argparse
import re
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = (ROOT / "README.md", ROOT / "docs" / "user-guide.md")
#: Examples that need what CI and this script do not have, and why.
NEEDS = {
    r"import-hf (?!examples/)[\w.-]+/[\w.-]+(\s|$)": "the network (the Hugging Face Hub), the hub extra",
    r"--dask tcp://": "a running Dask scheduler",
}


def doc_examples(path: Path):
    """(where, kind, text) of each command line of the bash blocks and each ``$ `` line of a
    plain block, and each Python block, of a Markdown file. A ``$ `` line whose printed
    output starts with ``error:`` shows a refusal: its kind is ``refused`` (it must exit with
    that one line, not succeed)."""
    text = path.read_text()
    for m in re.finditer(r"```(\w*)\n(.*?)```", text, re.S):
        lang, body = m.group(1), m.group(2)
        where = f"{path.relative_to(ROOT)}:{text[: m.start()].count(chr(10)) + 1}"
        if lang == "python":
            yield where, "python", body
            continue
        lines = re.sub(r"\\\n\s*", " ", body).splitlines()
        for i, line in enumerate(lines):
            line = line.strip()
            kind = "shell"
            if line.startswith("$ "):
                line = line[2:]
                shown = next((x for x in lines[i + 1 :] if not x.startswith("[")), "")
                kind = "refused" if shown.strip().startswith("error:") else "shell"
            elif lang not in ("bash", "sh"):
                continue
            if "inference-econ " not in line or line.startswith("#"):
                continue
            line = "inference-econ " + line.split("inference-econ ", 1)[1]
            yield where, kind, re.split(r"\s+#\s", line)[0].strip()


def help_examples():
    """(where, kind, text) of every example of every command's --help."""
    sys.path.insert(0, str(ROOT / "tests"))
    from conftest import help_examples as found

    for command, args in found():
        yield f"{command} --help", "shell", shlex.join(["inference-econ", *args])


def run(kind: str, text: str, cwd: Path, timeout: float) -> tuple[int, float, float, str]:
    """(exit code, CPU seconds, wall seconds, last line of stderr) of one example."""
    args = [sys.executable, "-c", text] if kind == "python" else shlex.split(text)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    try:
        done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout)
        code, err = done.returncode, done.stderr
    except subprocess.TimeoutExpired:
        code, err = -1, f"timed out after {timeout:g} s"
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    last = (err.strip().splitlines() or [""])[-1][:160]
    return code, cpu, time.perf_counter() - start, last


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="run only the examples containing these words")
    parser.add_argument(
        "--skip", action="append", default=[], help="skip examples with these words"
    )
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per example")
    parser.add_argument("--network", action="store_true", help="also run examples needing it")
    opts = parser.parse_args()
    clone = Path(tempfile.mkdtemp(prefix="fresh-clone-")) / "inference-econ"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    print(f"fresh clone of {ROOT} (HEAD) in {clone}")
    examples = [e for doc in DOCS for e in doc_examples(doc)] + list(help_examples())
    failed = 0
    for where, kind, text in examples:
        shown = text if kind != "python" else f"python: {text.strip().splitlines()[0]} ..."
        if opts.only and opts.only not in text or any(s in text for s in opts.skip):
            continue
        if kind != "python" and re.search(r"\s\.\.\.(\s|$)", text):
            print(f"{'part':>6} {'':>7} {'':>7}  {where}: {shown}  (an excerpt: ... elides flags)")
            continue
        need = next((why for words, why in NEEDS.items() if re.search(words, text)), None)
        if need and not opts.network:
            print(f"{'needs':>6} {'':>7} {'':>7}  {where}: {shown}  ({need})", flush=True)
            continue
        code, cpu, wall, last = run(kind, text, clone, opts.timeout)
        if kind == "refused":  # the documented refusal: one error line, exit 1 or 2
            bad = code not in (1, 2) or not last.startswith("error:")
            status = "exit 1" if bad else "refused"
        else:
            bad = code != 0
            status = "ok" if code == 0 else f"exit {code}"
        failed += bad
        print(f"{status:>6} {cpu:6.1f}s {wall:6.1f}s  {where}: {shown}", flush=True)
        if bad:
            print(f"{'':>23}{last}", flush=True)
    print(f"{failed} of the examples run failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
