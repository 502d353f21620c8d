"""Where a mini-zoo training step's time goes on this machine's CPU (torch.profiler).

    nice -n 19 .venv/bin/python -m scripts.zoo profile --family mini-bert --steps 12 --corpus .cache/corpus

Trains ``--steps`` steps of one family with the real trainer (``models.zoo.train``) under
torch.profiler, skipping the first (FLOP count, warm-up), and prints the shares of a step:
batch preparation, forward, backward, optimizer (clip + AdamW), the rest (Python between
them); then the operators taking the most self CPU time. Shares, not timings: on a shared
machine only the proportions mean anything. ``--stock`` profiles torch's stock kernels on
one batch; otherwise the fast kernels, on one
worker thread by default: torch.profiler records the operators of the thread that entered
it, so with the batch split over worker threads (``--workers 2``, the trainer's default)
their forward and backward would not show.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, schedule

from models.zoo import data as zd
from models.zoo import families as zm
from models.zoo import train as Z

REPO = Path(__file__).resolve().parents[2]
PHASES = ("zoo.data", "zoo.forward", "zoo.backward", "zoo.optimizer")


def add_arguments(p) -> None:
    p.add_argument("--family", default="mini-bert", choices=zm.FAMILIES)
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--batch-size", type=int, default=Z.ZooConfig.batch_size)
    p.add_argument("--dropout", type=float, default=None)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--corpus", type=Path, default=REPO / ".cache" / "corpus")
    p.add_argument("--sentences", type=int, default=20000, help="corpus lines to tokenize (enough for the steps)")
    p.add_argument("--top", type=int, default=15)
    p.add_argument("--stock", action="store_true", help="torch's stock kernels (ZooConfig.fast_kernels=False)")
    p.add_argument("--workers", type=int, default=1,
                   help="threads a batch's rows are split over (their operators are not profiled)")
    p.add_argument("--autocast", default="", choices=["", "bf16"], help="bf16 autocast (the products in bfloat16)")


def run(args) -> int:
    from transformers import AutoTokenizer

    torch.set_num_threads(args.threads)
    tokenizer = AutoTokenizer.from_pretrained(str(REPO / "weights" / "zoo" / args.family))
    max_len = Z.ZooConfig().shape.max_len
    chunks = zd.corpus_chunks(args.corpus / "train_ordered.tsv", tokenizer, max_len, args.sentences)
    teacher = None
    if args.family == "mini-distilbert":
        from transformers import BertForPreTraining

        teacher = BertForPreTraining.from_pretrained(str(REPO / "weights" / "zoo" / "mini-bert"), dtype=torch.float32)
    cfg = Z.ZooConfig(tokens=10**12, batch_size=args.batch_size, evals=0, dropout=args.dropout,
                      fast_kernels=not args.stock, workers=args.workers, autocast=args.autocast)
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=args.steps - 1, repeat=1),
                 record_shapes=False) as prof:
        Z.train_family(args.family, tokenizer, chunks, [], cfg, teacher=teacher, log=lambda _: None,
                       max_steps=args.steps, step_hook=prof.step)
    events = prof.key_averages()
    total = {e.key: e.cpu_time_total for e in events}
    step_total = sum(e.cpu_time_total for e in events if e.key.startswith("ProfilerStep"))
    if not step_total:
        raise SystemExit("no profiled step: " + ", ".join(sorted(total)[:20]))
    print(f"{args.family}: {args.steps - 1} profiled steps of {args.batch_size} sequences, {args.threads} threads, "
          f"{'stock kernels' if args.stock else f'fast kernels, {args.workers} worker thread(s)'}")
    shares = {k: total.get(k, 0.0) / step_total for k in PHASES}
    for k, v in shares.items():
        print(f"  {k:15s} {v:6.1%}")
    print(f"  {'other':15s} {1 - sum(shares.values()):6.1%}  (Python between the phases, logging)")
    own = sorted((e for e in events if not e.key.startswith(("zoo.", "ProfilerStep"))),
                 key=lambda e: e.self_cpu_time_total, reverse=True)[: args.top]
    print(f"  operators by self CPU time (share of the profiled steps; calls per step):")
    for e in own:
        print(f"    {e.key[:60]:60s} {e.self_cpu_time_total / step_total:6.1%}  {e.count / (args.steps - 1):7.1f}")
    return 0

