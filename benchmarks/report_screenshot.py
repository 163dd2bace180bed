"""Open an HTML report in Debian's headless Chromium, offline: a screenshot, and what rendered.

    python benchmarks/report_screenshot.py docs/study/accelerators-models.html --png shot.png

Prints the number of scatter traces Chromium drew in the plot's SVG, the y-axis tick labels and
the time the page took; the PNG is what a reader sees first (look at it). Needs `chromium`
(apt-get install chromium).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
]


def chromium(*args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        sys.exit("chromium is not installed (apt-get install chromium)")
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [exe, *FLAGS, f"--user-data-dir={profile}", *args],
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path)
    parser.add_argument("--png", type=Path, default=Path("report.png"))
    parser.add_argument("--size", default="1300,1000", help="window width,height in pixels")
    parser.add_argument("--budget-ms", type=int, default=15000, help="virtual time to render")
    args = parser.parse_args()
    url = args.report.resolve().as_uri()
    budget = f"--virtual-time-budget={args.budget_ms}"
    start = time.perf_counter()
    dom = chromium(budget, "--dump-dom", url).stdout
    rendered = time.perf_counter() - start
    chromium(budget, f"--window-size={args.size}", f"--screenshot={args.png.resolve()}", url)
    traces = len(re.findall(r'class="trace scatter', dom))
    ticks = re.findall(r'class="ytick"[^>]*>.*?>(\$[^<]*)<', dom)
    print(f"report: {args.report} ({args.report.stat().st_size / 1e6:.1f} MB)")
    svg = 'class="main-svg"' in dom
    print(f"plot SVG present: {svg}")
    print(f"scatter traces drawn: {traces}")
    print(f"y ticks: {' '.join(ticks)}")
    print(f"load and render (dump-dom, {args.budget_ms} ms virtual budget): {rendered:.1f} s wall")
    print(f"screenshot: {args.png}")


if __name__ == "__main__":
    main()
