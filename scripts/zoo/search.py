"""The shipped zoo's recipe on this CPU: a tuning search, then the full run, family after family (resumes).

    nice -n 19 .venv/bin/python -m scripts.zoo search            # 20 M tokens each, bf16: the shipped recipe
    .venv/bin/python -m scripts.zoo search --status               # where each family stands
    .venv/bin/python -m scripts.zoo install                       # the finished zoo -> weights/zoo/ + cards

Each family runs in a process of its own (``python -m scripts.zoo worker``, the same worker as
``gpu run``'s): the family's shipped tokenizer, the same tuning search for every family
(``--grid``, each point on ``--trial-tokens``, chosen by the loss per masked piece on the
tuning split of the held-out sentences), then the full run of ``--tokens`` with its choice,
scored and exported. The search is a prefix search (``--search prefix``): every trial is the
opening of its own full run, on the full budget's schedule, and the chosen one goes on from its
checkpoint, so the trials can be long enough to leave the loss plateau (at 0.5 M tokens every
family's trials sat within 0.1 nat of the word-frequency baseline, and the choice was noise)
while the chosen trial's tokens are not spent twice. ``--search separate`` trains each trial
from scratch on a schedule of its own.

Unlike ``gpu run``: one family at a time per process (its two worker threads use both
cores), mini-bert before mini-distilbert (its teacher), and every step kept on disk under
``--work``: a finished trial is not run again, trials and the full run write a checkpoint
every ``--checkpoint-every`` steps and resume from it exactly, a finished family is skipped.
Stop it at any moment (Ctrl-C, the end of a sitting) and run the same command again. Each
sitting of a family is written to ``--work``/sittings/ with the machine's load average every
30 s; the exported record's ``concurrency`` says which other families trained at the same
time (another process on the same folder) and the load seen.

``--trials-only`` runs the search and stops (each family's ``trials.json``; no full run): a
look at another grid point in a work folder of its own, e.g. ``--grid "lr=4e-3 dropout=0"``
with the same ``--tokens`` and ``--trial-tokens``, whose trial is the same prefix as the
search's. DistilBERT's trial needs ``mini-bert/final`` (its teacher) in that folder: run
mini-bert's full run there first, or copy it in.

The budget is fixed by the command (not by a deadline), the same figure for every family;
it refuses to go on with a budget other than the one the work folder started with.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from models.zoo.allocator import ALLOCATORS, child_env

from .worker import parse_grid, training_args, worker_command

REPO = Path(__file__).resolve().parents[2]
WORK = REPO / ".cache" / "zoo-local"
FAMILIES = ("mini-bert", "mini-distilbert", "mini-roberta", "mini-albert", "mini-electra",
            "mini-deberta", "mini-modernbert")  # the teacher before DistilBERT
SETTINGS = ("tokens", "trial_tokens", "grid", "batch_size", "autocast", "seed", "warmup", "position_init", "search")
LOAD_EVERY_S = 30.0  # how often a family's sitting samples the machine's load average


def finished(work: Path, family: str) -> bool:
    return (work / "export" / family / "record.json").is_file()


def budget_for(args) -> dict:
    return {"tokens": args.tokens, "cap": args.tokens, "limited_by": None, "rates": {}, "left_s": None,
            "families": len(FAMILIES), "distil_needs_s": 0.0,
            "concurrency": "one family at a time per `scripts.zoo search` process on this machine's CPU; "
                           "each record says what ran beside it",
            "script": "scripts.zoo search",
            "settings": {k: getattr(args, k) for k in SETTINGS}}


def search(args) -> int:
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
    previous = signal.signal(signal.SIGTERM, _stop)  # a kill ends a sitting through its finally: its end is written
    try:
        return _train(args, work)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _train(args, work: Path) -> int:
    """Each family not finished, in turn (the teacher first), one sitting each."""
    far = time.time() + 30 * 24 * 3600  # no deadline: the budget is in tokens
    for family in [f for f in FAMILIES if f in args.families]:
        if finished(work, family) or (args.trials_only and (work / family / "trials.json").is_file()):
            print(f"{family}: finished earlier", flush=True)
            continue
        cmd = worker_command(args, family, work, far)
        env = child_env(args.allocator, {**os.environ, "PYTHONUNBUFFERED": "1"})
        print(f"{family}: training ({time.strftime('%H:%M:%S')}; memory allocator "
              f"{'tcmalloc' if 'tcmalloc' in env.get('LD_PRELOAD', '') else 'glibc'})", flush=True)
        sitting = {"family": family, "pid": os.getpid(), "start": time.time(), "end": None, "load": []}
        _write_sitting(work, sitting)
        with open(work / f"{family}.out", "a", encoding="utf-8") as out:
            proc = subprocess.Popen(cmd, cwd=str(REPO), env=env, stdout=out, stderr=subprocess.STDOUT)
            try:
                while True:
                    try:
                        code = proc.wait(timeout=LOAD_EVERY_S)
                        break
                    except subprocess.TimeoutExpired:
                        sitting["load"].append(round(os.getloadavg()[0], 2))
                        _write_sitting(work, sitting)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
                sitting["end"] = time.time()
                _write_sitting(work, sitting)
        if args.trials_only and code == 0:
            trials = json.loads((work / family / "trials.json").read_text(encoding="utf-8"))["trials"]
            print(f"{family}: trials only: " + "; ".join(
                ", ".join(f"{k} {t[k]:g}" for k in parse_grid(args.grid)[0]) + f": {t['piece_loss']:.3f}"
                for t in trials), flush=True)
            continue
        if code != 0 or not finished(work, family):
            print(f"{family}: stopped (exit {code}); see {work / family / 'train.log'}", flush=True)
            return code or 1
        record_concurrency(work, family)
        record = json.loads((work / "export" / family / "record.json").read_text(encoding="utf-8"))
        print(f"{family}: {record['tokens']:,} tokens in {record['wall_minutes']:.1f} min, piece loss "
              f"{record['heldout']['piece_loss']:.3f}, whole-word {record['heldout']['word_top1']:.1%}, "
              f"chosen {record['tuning']['chosen']}", flush=True)
    return 0


def _stop(signum, frame):
    raise SystemExit(128 + signum)


def _write_sitting(work: Path, sitting: dict) -> None:
    """One file per sitting of a family under ``work/sittings/`` (start, end, load samples)."""
    folder = work / "sittings"
    folder.mkdir(exist_ok=True)
    path = folder / f"{sitting['family']}-{int(sitting['start'])}-{sitting['pid']}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(sitting), encoding="utf-8")
    tmp.replace(path)


def sittings(work: Path) -> list[dict]:
    """Every sitting written under ``work/sittings/``; ``written``: when its file was last written
    (where a sitting that was killed, and so never wrote its end, stopped at the latest)."""
    folder = work / "sittings"
    return [{**json.loads(p.read_text(encoding="utf-8")), "written": p.stat().st_mtime}
            for p in sorted(folder.glob("*.json"))] if folder.is_dir() else []


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def concurrency_of(family: str, all_sittings: list[dict], now: float | None = None, alive=_pid_alive) -> dict:
    """What ran beside ``family``'s sittings: other families' sittings that overlapped them in
    time (another search process on the same work folder), and the 1-minute load average
    sampled while it trained (other work on the machine shows there too). A sitting without an
    end is still running when its process is (``alive(pid)``), else it was killed and ended
    when its file was last written (a load sample every 30 s)."""
    now = now or time.time()

    def end(s: dict) -> float:
        if s["end"] is not None:
            return s["end"]
        return now if alive(s["pid"]) else s.get("written", s["start"])

    mine = [s for s in all_sittings if s["family"] == family]
    beside = sorted({o["family"] for s in mine for o in all_sittings
                     if o["family"] != family and o["start"] < end(s) and s["start"] < end(o)})
    load = sorted(x for s in mine for x in s["load"])
    cores = os.cpu_count() or 1
    text = (f"on this machine's CPU ({cores} cores), `scripts.zoo search`, "
            + (f"in {len(mine)} sittings; " if len(mine) > 1 else "")
            + (f"beside {', '.join(beside)} (another search process, the same cores)" if beside
               else "no other family training at the same time"))
    if load:
        text += (f"; 1-minute load average while it trained: median {load[len(load) // 2]:.1f} "
                 f"(range {load[0]:.1f}-{load[-1]:.1f}; a family alone keeps it near {cores})")
    return {"text": text, "beside": beside, "load": load, "sittings": len(mine)}


def record_concurrency(work: Path, family: str) -> None:
    """The exported record says what ran beside this family (the worker could not know)."""
    path = work / "export" / family / "record.json"
    record = json.loads(path.read_text(encoding="utf-8"))
    c = concurrency_of(family, sittings(work))
    record["concurrency"] = c["text"]
    record["concurrency_detail"] = {k: c[k] for k in ("beside", "load", "sittings")}
    path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


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


def add_arguments(r) -> None:
    r.add_argument("--status", action="store_true", help="print where each family stands, train nothing")
    r.add_argument("--corpus", type=Path, default=REPO / ".cache" / "corpus")
    r.add_argument("--tokens", type=int, default=20_000_000, help="full-run tokens, every family")
    r.add_argument("--families", nargs="+", default=list(FAMILIES), choices=FAMILIES)
    r.add_argument("--allocator", default="auto", choices=ALLOCATORS,
                   help="each family's process's memory allocator: auto = tcmalloc when installed "
                        "(models/zoo/allocator.py; BENCHMARKS.md's zoo throughput row), else glibc's")
    # the defaults are the shipped zoo's recipe (weights/zoo/*/record.json: budget.settings)
    training_args(r, device="cpu", grid="lr=5e-4,1e-3,2e-3 dropout=0", trial_tokens=2_500_000, batch_size=16,
                  autocast="bf16", work=WORK, checkpoint_every=200, search="prefix")


def run(args) -> int:
    return status(args) if args.status else search(args)
