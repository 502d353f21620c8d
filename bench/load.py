"""Load: N concurrent gradio_client users x M requests over the app's endpoints.

    .venv/bin/python -m bench.load [--users 20] [--requests 25] [--url URL]

Without --url it starts `python app.py` on a free port (as a user would) and measures the
server process's memory (RSS, sampled every 0.2 s). Prints errors, p50/p95 latency per
endpoint and overall, and the server memory after warm-up vs at the end. Targets: 0 errors,
memory flat after warm-up. A smaller run of the same code is in tests/api/test_load.py.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

MLM = os.environ.get("ENCODER_LAB_LOAD_MODEL", "minilm-mlm")
TEXT = "The cat sat on the [MASK] and looked at the [MASK]."
LAB = [TEXT.replace("[MASK]", "mat"), MLM, 0.15, 0.8, 0.1, 0.1, False, 2, "dynamic", 0]

# (api_name, arguments): every request a user sends, in turn (user i starts at item i).
MIX: list[tuple[str, tuple]] = [
    ("/fill_mask", (TEXT, MLM, 5)),
    ("/fill_mask_live", ("Paris is the [MASK] of France.", MLM, 5, True)),
    ("/list_models", ()),
    ("/model_card", (MLM,)),
    ("/simulate_masking", tuple(LAB)),
    ("/masked_lm_loss", tuple(LAB) + (1,)),
    ("/compare_policies", (LAB[0], MLM, 0.3, False, 0)),
    ("/masking_statistics", (MLM, 0.15, 0.8, 0.1, 0.1, False, 20, 0)),
    ("/training_snapshot", (0,)),
    ("/compare_fill_mask", (["minilm-mlm", "splade-tiny"], TEXT, 5)),
    ("/compare_tokens", (["minilm-mlm", "splade-tiny"], "Tokenisation differs by model.")),
    ("/architecture_table", ()),
    ("/attention", ("I sat by the river bank.", "I deposited cash at the bank.", "minilm-l6", 3, 5, "head")),
    ("/head_stats", ("I sat by the river bank.", "", "minilm-l6", "all heads")),
    ("/similarity", ("A cat sat on the mat.\nA kitten rested on the rug.\n\nStocks fell today.\n"
                     "Markets dropped sharply.", "minilm-l6", -1)),
    ("/word_in_context", ("I sat by the river bank.\nI deposited cash at the bank.", "bank", "minilm-l6", -1)),
    ("/next_sentence", ("mini-bert", "The weather was cold all morning.", "By noon it had started to snow.")),
    ("/detect_replaced", ("mini-electra", "The chef cooked a delicious meal for the guests.", 2, 0)),
    ("/input_embeddings", ("I sat by the river bank.", "", "minilm-mlm")),
    ("/explain_loss", tuple(LAB) + (1, "the textbook example", 0)),
    ("/generate_left_to_right", ("The weather today is", MLM, 3, 0, 5)),
    ("/why_this_guess", ("She opened the [MASK] and walked in.", MLM, 1, "", 8, ["leave_one_out"])),
    ("/search", ("The whale dived under the ship.", "minilm-l6", "mean", "exact", 5)),
    ("/zoo_comparison", ()),
]


@dataclass
class LoadResult:
    latencies: dict[str, list[float]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    wall_s: float = 0.0

    def all_latencies(self) -> list[float]:
        return [x for v in self.latencies.values() for x in v]


def run_load(url: str, users: int, requests: int) -> LoadResult:
    """``users`` threads, each its own Client, each sending ``requests`` requests."""
    from gradio_client import Client

    result = LoadResult()
    lock = threading.Lock()
    barrier = threading.Barrier(users)

    def user(i: int) -> None:
        try:
            client = Client(url, verbose=False, download_files=False)
        except Exception as exc:  # noqa: BLE001  (recorded, not raised: a load test counts)
            with lock:
                result.errors.append(f"user {i}: connect: {exc}")
            barrier.abort()
            return
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            return
        for r in range(requests):
            name, args = MIX[(i + r) % len(MIX)]
            start = time.perf_counter()
            try:
                client.predict(*args, api_name=name)
            except Exception as exc:  # noqa: BLE001
                with lock:
                    result.errors.append(f"user {i} {name}: {type(exc).__name__}: {exc}"[:300])
                continue
            with lock:
                result.latencies.setdefault(name, []).append(time.perf_counter() - start)

    threads = [threading.Thread(target=user, args=(i,)) for i in range(users)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    result.wall_s = time.perf_counter() - start
    return result


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


class RssSampler:
    """The RSS of a process, sampled in a background thread."""

    def __init__(self, pid: int, every_s: float = 0.2):
        self.pid, self.every_s, self.samples = pid, every_s, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def rss_mb(self) -> float:
        with open(f"/proc/{self.pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return float("nan")

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.samples.append(self.rss_mb())
            except OSError:
                return
            time.sleep(self.every_s)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def start_app() -> tuple[subprocess.Popen, str]:
    from tests.helpers import free_port, wait_for_http

    port = free_port()
    proc = subprocess.Popen([sys.executable, "app.py", "--port", str(port)], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    wait_for_http(url, proc=proc)
    return proc, url


def report(result: LoadResult) -> None:
    print(f"{'endpoint':<22} {'n':>5} {'p50 ms':>9} {'p95 ms':>9}")
    for name, values in sorted(result.latencies.items()):
        print(f"{name:<22} {len(values):>5} {percentile(values, 50) * 1e3:>9.0f} "
              f"{percentile(values, 95) * 1e3:>9.0f}")
    values = result.all_latencies()
    if values:
        print(f"{'all':<22} {len(values):>5} {percentile(values, 50) * 1e3:>9.0f} "
              f"{percentile(values, 95) * 1e3:>9.0f}")
        print(f"throughput: {len(values) / result.wall_s:.1f} requests/s over {result.wall_s:.1f} s")
    print(f"errors: {len(result.errors)}")
    for e in result.errors[:10]:
        print("  ", e)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--requests", type=int, default=25)
    parser.add_argument("--rounds", type=int, default=3, help="equal rounds; memory is read after each")
    parser.add_argument("--url", default=None, help="an app already running (memory not measured)")
    args = parser.parse_args()
    from bench.bench_common import machine_line

    print(machine_line())
    proc = None
    url = args.url
    if url is None:
        proc, url = start_app()
    try:
        # Warm-up: one request per endpoint, so that every model is loaded before measuring.
        run_load(url, users=1, requests=len(MIX))
        if proc is None:
            result = run_load(url, args.users, args.requests)
            report(result)
            return
        with RssSampler(proc.pid) as rss:
            marks = [rss.rss_mb()]  # after warm-up
            for round_no in range(1, args.rounds + 1):
                result = run_load(url, args.users, args.requests)
                marks.append(rss.rss_mb())
                print(f"\nround {round_no} of {args.rounds}: users {args.users} x requests "
                      f"{args.requests}, {len(MIX)} endpoints")
                report(result)
        growth = [b - a for a, b in zip(marks, marks[1:])]
        print("\nserver RSS MB after warm-up, then after each round: "
              + ", ".join(f"{m:.0f}" for m in marks) + f"; peak {max(rss.samples):.0f}")
        print("growth per round MB: " + ", ".join(f"{g:+.0f}" for g in growth))
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()
