"""Start-up: `python app.py` to a page that answers fill-mask, on the app's default model.

    .venv/bin/python -m bench.startup [--runs 3]

Each run starts a fresh process, then polls the page until it answers (page served), then
calls /fill_mask through gradio_client until it returns (first answer includes loading the
model). Prints each phase per run, then its median and range. On bert-base's stand-in (its
real shape, random weights; docs/memory.md): ``HF_HUB_CACHE=.cache/standins-hub HF_HUB_OFFLINE=1
ENCODER_LAB_DEFAULT=bert-base``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def one_run() -> tuple[float, float]:
    from gradio_client import Client

    from tests.helpers import free_port, wait_for_http
    from models.registry.catalogue import default_model_key

    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "app.py", "--port", str(port)], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_http(url, proc=proc, poll_s=0.05)
        page = time.perf_counter() - start
        client = Client(url, verbose=False, download_files=False)
        client.predict("The capital of France is [MASK].", default_model_key(), 5, api_name="/fill_mask")
        answered = time.perf_counter() - start
        return page, answered
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    from bench.bench_common import machine_line, spread_text
    from models.registry.catalogue import default_model_key

    print(machine_line())
    print(f"default model: {default_model_key()}")
    pages, answers = [], []
    for i in range(args.runs):
        page, answered = one_run()
        pages.append(page)
        answers.append(answered)
        print(f"run {i + 1}: page served {page:.1f} s, first fill-mask answer {answered:.1f} s")
    print(f"page served: {spread_text(pages, '{:.1f}')} s; first fill-mask answer: {spread_text(answers, '{:.1f}')} s")


if __name__ == "__main__":
    main()
