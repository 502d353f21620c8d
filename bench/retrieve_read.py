"""Benchmark: ``retrieve_then_read`` per question, on the default encoder and the shipped reader.

    python -m bench.retrieve_read [--runs 3] [--threads 2] [--json]

The questions are the five a student phrased (``weights/span-reader/record.json``'s
``student_questions``). One warm-up call per question (the passage index is built or read
from disk, the models loaded); then each run asks all five, k=3, and its figure is the median
time of one question, whole (the question encoded, the index searched, the passages read) and
by part (the result's own ``encode_ms``, ``search_ms``, ``read_ms``). ``--runs``
measurements (default 3), their median and spread, the machine first; the target is under
one second per question.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path


from bench.bench_common import machine_line, runs_arguments, spread, spread_text
from models import retrieve_then_read

RECORD = Path(__file__).resolve().parents[1] / "weights" / "span-reader" / "record.json"
TARGET_S = 1.0


def questions() -> list[str]:
    return [q["question"] for q in json.loads(RECORD.read_text(encoding="utf-8"))["student_questions"]]


def one_run(asked: list[str]) -> dict:
    whole, parts = [], {"encode_ms": [], "search_ms": [], "read_ms": []}
    for question in asked:
        start = time.perf_counter()
        result = retrieve_then_read(question, k=3)
        whole.append(time.perf_counter() - start)
        for name in parts:
            parts[name].append(getattr(result, name))
    return {"whole_s": statistics.median(whole), **{k: statistics.median(v) for k, v in parts.items()}}


def main(argv=None) -> dict:
    args = runs_arguments(__doc__, argv)
    asked = questions()
    for question in asked:  # warm: the index, the encoder and the reader
        retrieve_then_read(question, k=3)
    runs = [one_run(asked) for _ in range(args.runs)]
    out = {name: spread([r[name] for r in runs]) for name in runs[0]}
    if args.json:
        print(json.dumps(out))
        return out
    print(machine_line())
    print(f"retrieve_then_read, {len(asked)} student questions, k=3, median per question:")
    print(f"  whole: {spread_text([r['whole_s'] for r in runs], '{:.3f}')} s (target < {TARGET_S:.0f} s)")
    for name in ("encode_ms", "search_ms", "read_ms"):
        print(f"  {name[:-3]}: {spread_text([r[name] for r in runs], '{:.1f}')} ms")
    return out


if __name__ == "__main__":
    main()
