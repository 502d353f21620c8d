"""bench/startup.py as a user runs it: `python -m bench.startup --runs 1` in a process of
its own, starting the app itself and timing a real start (no figure asserted, only that it
measured one). It crashed on an import outside pytest from 2026-11-23 to 2026-12-03."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_startup_bench_times_a_start_and_a_first_answer():
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-m", "bench.startup", "--runs", "1"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "CPU:" in done.stdout or "machine:" in done.stdout  # the machine is printed first
    run = re.search(r"run 1: page served ([0-9.]+) s, first fill-mask answer ([0-9.]+) s", done.stdout)
    assert run, done.stdout
    page, answered = map(float, run.groups())
    assert 0 < page <= answered
