"""The mini zoo on this machine, one family after another, over as many sittings as it takes.

    nice -n 19 .venv/bin/python -m scripts.zoo_local run --tokens 4000000 --trial-tokens 400000
    .venv/bin/python -m scripts.zoo_local status
    .venv/bin/python -m scripts.zoo_local install          # the finished zoo -> weights/zoo/ + cards

The same recipe as the GPU command (``scripts/zoo_gpu.py``'s worker, run here in turn for each
family): the family's shipped tokenizer, the same tuning search for every family (``--grid``,
each point on ``--trial-tokens``, chosen by the loss per masked piece on the tuning split of
the held-out sentences), then the full run of ``--tokens`` with its choice, scored and
exported. What differs is the schedule: one family at a time on the CPU (its two worker
threads use both cores), mini-bert before mini-distilbert (its teacher), and every step kept
on disk under ``--work``: a finished trial is not run again, the full run writes a checkpoint
every ``--checkpoint-every`` steps and resumes from it exactly, a finished family is skipped.
Stop it at any moment (Ctrl-C, the end of a sitting) and run the same command again.

The budget is fixed by the command (not by a deadline), the same figure for every family;
``run`` refuses to go on with a budget other than the one the work folder started with.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from scripts.zoo_gpu import training_args, worker_command

REPO = Path(__file__).resolve().parents[1]
WORK = REPO / ".cache" / "zoo-local"
FAMILIES = ("mini-bert", "mini-distilbert", "mini-roberta", "mini-albert", "mini-electra",
            "mini-deberta", "mini-modernbert")  # the teacher before DistilBERT
SETTINGS = ("tokens", "trial_tokens", "grid", "batch_size", "autocast", "seed", "warmup", "position_init")


def finished(work: Path, family: str) -> bool:
    return (work / "export" / family / "record.json").is_file()


def budget_for(args) -> dict:
    return {"tokens": args.tokens, "cap": args.tokens, "limited_by": None, "rates": {}, "left_s": None,
            "families": len(args.families), "distil_needs_s": 0.0,
            "concurrency": "one family at a time on this machine's CPU (scripts/zoo_local.py)",
            "script": "scripts.zoo_local",
            "settings": {k: getattr(args, k) for k in SETTINGS}}


def run(args) -> int:
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    corpus = work / "train_ordered.tsv"
    if not corpus.is_file():
        shutil.copyfile(args.corpus / "train_ordered.tsv", corpus)
    budget = budget_for(args)
    saved = work / "budget.json"
    if saved.is_file():
        before = json.loads(saved.read_text(encoding="utf-8")).get("settings")
        if before != budget["settings"]:
            raise SystemExit(f"{work} was started with {before}; this command asks for {budget['settings']}. "
                             "Run it with the same settings, or use another --work.")
    else:
        saved.write_text(json.dumps(budget, indent=1), encoding="utf-8")
    far = time.time() + 30 * 24 * 3600  # no deadline: the budget is in tokens
    for family in [f for f in FAMILIES if f in args.families]:
        if finished(work, family):
            print(f"{family}: finished earlier", flush=True)
            continue
        cmd = worker_command(args, family, work, far)
        print(f"{family}: training ({time.strftime('%H:%M:%S')})", flush=True)
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        with open(work / f"{family}.out", "a", encoding="utf-8") as out:
            code = subprocess.call(cmd, cwd=str(REPO), env=env, stdout=out, stderr=subprocess.STDOUT)
        if code != 0 or not finished(work, family):
            print(f"{family}: stopped (exit {code}); see {work / family / 'train.log'}", flush=True)
            return code or 1
        record = json.loads((work / "export" / family / "record.json").read_text(encoding="utf-8"))
        print(f"{family}: {record['tokens']:,} tokens in {record['wall_minutes']:.1f} min, piece loss "
              f"{record['heldout']['piece_loss']:.3f}, whole-word {record['heldout']['word_top1']:.1%}, "
              f"chosen {record['tuning']['chosen']}", flush=True)
    return 0


def status(args) -> int:
    work = args.work
    for family in FAMILIES:
        trials = work / family / "trials-partial.json"
        ckpt = work / family / "full.ckpt"
        if finished(work, family):
            state = "finished"
        elif ckpt.is_file():
            import torch

            saved = torch.load(ckpt, map_location="cpu", weights_only=False)
            state = f"full run at {saved['tokens']:,} tokens ({saved['step']:,} steps)"
        elif trials.is_file():
            state = f"{len(json.loads(trials.read_text(encoding='utf-8')))} trials done"
        else:
            state = "not started"
        print(f"{family}: {state}")
    return 0


def install(args) -> int:
    """Every family finished -> ``--out`` (the shipped folders), cards, the targets table."""
    missing = [f for f in FAMILIES if not finished(args.work, f)]
    if missing:
        raise SystemExit(f"not finished: {', '.join(missing)} (run the same 'run' command again)")
    from scripts.zoo_gpu import install_folders

    install_folders(args.work / "export", args.out, FAMILIES)
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="train what is not finished (resumes)")
    r.add_argument("--corpus", type=Path, default=REPO / ".cache" / "corpus")
    r.add_argument("--tokens", type=int, default=4_000_000, help="full-run tokens, every family")
    r.add_argument("--families", nargs="+", default=list(FAMILIES), choices=FAMILIES)
    training_args(r, device="cpu", grid="lr=1e-3,2e-3 dropout=0,0.1", trial_tokens=400_000, batch_size=16,
                  autocast="", work=WORK, checkpoint_every=200)
    status_parser = sub.add_parser("status", help="where each family stands")
    status_parser.add_argument("--work", type=Path, default=WORK)
    i = sub.add_parser("install", help="the finished zoo into weights/zoo/ with its cards")
    i.add_argument("--work", type=Path, default=WORK)
    i.add_argument("--out", type=Path, default=REPO / "weights" / "zoo")
    args = p.parse_args(argv)
    return {"run": run, "status": status, "install": install}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
