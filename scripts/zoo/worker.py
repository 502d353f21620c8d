"""Internal: one family's tuning search and full run, in a process of its own (started by search and gpu run).

Steps: (1) tokenize the corpus with the family's shipped tokenizer; (2) a prefix search on a
GPU first times its training beside the other families (``probe_rate``) and waits for the
parent's common budget; (3) the tuning search over ``--grid``, each point scored by the loss
per masked piece on the tuning split of the held-out sentences (``search_grid``); (4) the
chosen point's full run (``full_run``); (5) the final scores and the exported folder
(``export_family``). Everything it does is written under ``--work``/<family>/.
"""

from __future__ import annotations

import copy
import json
import math
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from models.zoo import data as zd
from models.zoo import families as zm
from models.zoo import scores as zs
from models.zoo import train as Z

from .export import export
from .train import TINY

REPO = Path(__file__).resolve().parents[2]
SEARCHES = {  # what a record's tuning says of its search
    "separate": "each grid point trained from scratch on --trial-tokens with a schedule of its own; "
                "the chosen point then trained again from scratch on the full budget",
    "prefix": "each grid point is the opening --trial-tokens of its own full run (the full budget's "
              "schedule, the same seed); the chosen point's run went on from where its trial stopped",
}
PROBE_GO = "probe-go.json"  # the parent's start time for every family's probe window


class Stopped(Exception):
    """The worker cannot go on (what it waited for did not come before the deadline)."""


@dataclass
class Job:
    """One family's worker: its settings, files and tokenized data."""

    args: object
    family: str
    me: Path  # the family's folder under --work
    log: object
    device: torch.device
    tokenizer: object
    chunks: list
    corpus: dict  # the corpus's sentences and tokens
    tune: list[str]  # the held-out sentences the search scores on
    score: list[str]  # the held-out sentences the final scores use
    counts: object  # piece counts of the training chunks (the word-frequency baseline's)
    unigram_tune: dict  # the word-frequency baseline on the tuning split
    base: dict  # the ZooConfig settings every run of this family shares

    @property
    def prefix(self) -> bool:
        return self.args.search == "prefix"

    def wait_for(self, path: Path, until: float, what: str) -> None:
        if not _wait_for(path, until):
            raise Stopped(what)


def parse_grid(text: str) -> list[dict]:
    """"lr=1e-3,2e-3 dropout=0,0.1" -> every combination, as ZooConfig overrides."""
    axes = []
    for part in text.split():
        name, _, values = part.partition("=")
        if name not in ("lr", "dropout", "batch_size", "warmup", "init_std"):
            raise SystemExit(f"--grid: unknown setting {name!r} (lr, dropout, batch_size, warmup, init_std)")
        cast = int if name == "batch_size" else float
        axes.append([(name, cast(v)) for v in values.split(",")])
    points = [{}]
    for axis in axes:
        points = [{**p, k: v} for p in points for k, v in axis]
    return points


def _wait_for(path: Path, until: float, poll: float = 0.5) -> bool:
    while not path.exists():
        if time.time() > until:
            return False
        time.sleep(poll)
    return True


def _device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return "CPU"


def add_arguments(w) -> None:
    training_args(w)
    w.add_argument("--family", required=True, choices=zm.FAMILIES)
    w.add_argument("--deadline", type=float, required=True)


def run(args) -> int:
    job = start_job(args)
    try:
        budget = probe_and_budget(job)
        # a prefix trial's length: the parent's share of the budget (GPU), else the command's
        trial_tokens = (budget or {}).get("trial_tokens") or args.trial_tokens
        teacher = trial_teacher(job)
        trials, best = search_grid(job, budget, trial_tokens, teacher)
        if args.trials_only:  # the search alone (a look at another grid point): no full run
            job.log(json.dumps({"family": job.family, "trials_only": True, "chosen": best[1]}))
            return 0
        done, budget, teacher_note = full_run(job, best, teacher)
    except Stopped as stop:
        job.log(json.dumps({"family": job.family, "error": str(stop)}))
        return 1
    export_family(job, done, {"trial_tokens": trial_tokens, "chosen": best[1], "trials": trials}, budget,
                  teacher_note)
    return 0


def start_job(args) -> Job:
    """The family's folder and log, its tokenizer, the corpus chunked, the held-out splits."""
    from transformers import AutoTokenizer

    me = args.work / args.family
    me.mkdir(parents=True, exist_ok=True)
    log_file = open(me / "train.log", "a", encoding="utf-8")

    def log(line: str) -> None:
        log_file.write(line + "\n")
        log_file.flush()

    device = torch.device(args.device)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    shape = zm.Shape(**TINY, vocab=8192) if args.tiny else zm.Shape()
    tokenizer = AutoTokenizer.from_pretrained(str(REPO / "weights" / "zoo" / args.family))
    t0 = time.time()
    corpus = {}  # its sentences and tokens; the tokens of every sentence whole, before a chunk cuts one to max_len - 3
    chunks = zd.corpus_chunks(args.work / "train_ordered.tsv", tokenizer, shape.max_len, args.max_sentences,
                              counts=corpus)
    log(json.dumps({"family": args.family, "tokenized_s": round(time.time() - t0, 1), "chunks": len(chunks),
                    "corpus_tokens": corpus["tokens"]}))
    tune, score = zd.heldout_splits(args.heldout_limit)
    base = dict(batch_size=args.batch_size, autocast=args.autocast, seed=args.seed, shape=shape,
                warmup=args.warmup, eval_sentences=len(tune), position_init=args.position_init)
    counts = zs.piece_counts(chunks, len(tokenizer))
    return Job(args, args.family, me, log, device, tokenizer, chunks, corpus, tune, score, counts,
               zs.unigram_baseline(tokenizer, counts, tune), base)


def probe_and_budget(job: Job) -> dict | None:
    """A prefix search's budget, before its trials (each trial is its full run's opening): on a
    GPU the family's training is timed first, beside the others', and the parent sets it."""
    if not job.prefix:
        return None
    args, me, work = job.args, job.me, job.args.work
    if args.probe_s and job.family != "mini-distilbert" and not (me / "probe.json").is_file():
        (me / "ready").touch()  # tokenized: the parent starts the window once every family is
        job.wait_for(work / PROBE_GO, args.deadline, "no probe window before the deadline")
        start = json.loads((work / PROBE_GO).read_text(encoding="utf-8"))["at"]
        rate, steps = probe_rate(job.family, job.tokenizer, job.chunks, job.base, job.device, start, args.probe_s)
        (me / "probe.tmp").write_text(json.dumps({"tokens_per_s": rate, "steps": steps, "window_start": start,
                                                  "window_s": args.probe_s}), encoding="utf-8")
        (me / "probe.tmp").rename(me / "probe.json")
        job.log(json.dumps({"family": job.family, "probe_tokens_per_s": round(rate)}))
    job.wait_for(work / "budget.json", args.deadline, "a prefix search needs the budget before its trials")
    return json.loads((work / "budget.json").read_text(encoding="utf-8"))


def teacher_from(folder: Path, device: torch.device):
    from transformers import BertForPreTraining

    return BertForPreTraining.from_pretrained(str(folder), dtype=torch.float32).to(device)


def trial_teacher(job: Job):
    """DistilBERT's teacher in its trials: mini-bert's full run (a prefix trial is the start of
    the full run), else mini-bert's best trial; None for the other families."""
    if job.family != "mini-distilbert":
        return None
    source = job.args.work / "mini-bert" / ("final" if job.prefix else "trial-best")
    job.wait_for(source / "config.json", job.args.deadline, f"mini-bert's {source.name} did not come before the deadline")
    return teacher_from(source, job.device)


def search_grid(job: Job, budget: dict | None, trial_tokens: int, teacher) -> tuple[list[dict], tuple[dict, dict]]:
    """Every grid point not tried in an earlier sitting, on the trial budget: (trials, (best trial,
    its point)); written to trials-partial.json as they end, then trials.json."""
    args, partial = job.args, job.me / "trials-partial.json"
    trials = json.loads(partial.read_text(encoding="utf-8")) if partial.is_file() else []
    best = None
    for trial in trials:
        point = {k: trial[k] for k in parse_grid(args.grid)[0]}
        if best is None or trial_loss(trial) < trial_loss(best[0]):
            best = (trial, point)
    for point in parse_grid(args.grid):
        if any(all(t.get(k) == v for k, v in point.items()) for t in trials):
            continue
        trial, done = run_trial(job, point, budget, trial_tokens, teacher)
        trials.append(trial)
        partial.write_text(json.dumps(trials, indent=1), encoding="utf-8")
        job.log(json.dumps({"family": job.family, "trial": trial}))
        if best is None or trial_loss(trial) < trial_loss(best[0]):
            best = (trial, point)
            if job.family == "mini-bert" and not job.prefix:  # DistilBERT's teacher for its trials: the best BERT trial
                _save_teacher(done["objective"].model, args.work / "mini-bert" / "trial-best-tmp",
                              args.work / "mini-bert" / "trial-best")
        del done
    rate = sum(t["tokens"] for t in trials) / max(sum(t["wall_s"] for t in trials), 1e-9)
    (job.me / "trials.json").write_text(json.dumps({"trials": trials, "chosen": best[1], "tokens_per_s": rate,
                                                    "unigram_tuning_split": job.unigram_tune},
                                                   indent=1), encoding="utf-8")
    return trials, best


def run_trial(job: Job, point: dict, budget: dict | None, trial_tokens: int, teacher) -> tuple[dict, dict]:
    """One grid point's trial: (its figures, train_family's result)."""
    args = job.args
    if job.prefix:
        cfg = Z.ZooConfig(tokens=budget["tokens"], evals=args.evals, **{**job.base, **point})
        done = Z.train_family(job.family, job.tokenizer, job.chunks, job.tune, cfg, teacher=teacher,
                              device=job.device, log=job.log, deadline=args.deadline,
                              checkpoint=job.me / trial_checkpoint(point), checkpoint_every=args.checkpoint_every,
                              stop_tokens=trial_tokens)
    else:
        cfg = Z.ZooConfig(tokens=args.trial_tokens, evals=1, **{**job.base, **point})
        done = Z.train_family(job.family, job.tokenizer, job.chunks, job.tune, cfg, teacher=teacher,
                              device=job.device, log=job.log, deadline=args.deadline)
    r = done["record"]
    mlm = done["objective"].generator if job.family == "mini-electra" else done["objective"].model
    s = zs.whole_word_accuracy(job.family, mlm, job.tokenizer, job.tune, autocast=args.autocast)
    return {**point, "piece_loss": s["piece_loss"], "word_top1": s["word_top1"], "tokens": r["tokens"],
            "steps": r["steps"], "wall_s": r["wall_minutes"] * 60,
            "tokens_per_s": r["tokens"] / max(r["wall_minutes"] * 60, 1e-9),
            "stopped_at_deadline": r["stopped_at_deadline"]}, done


def full_run(job: Job, best: tuple[dict, dict], teacher) -> tuple[dict, dict, str | None]:
    """The chosen point on the parent's budget (a prefix search: its trial goes on):
    (train_family's result, the budget, what DistilBERT's teacher was)."""
    args, me, work = job.args, job.me, job.args.work
    job.wait_for(work / "budget.json", args.deadline, "no budget before the deadline")
    budget = json.loads((work / "budget.json").read_text(encoding="utf-8"))
    teacher_note = None
    if job.prefix:  # the chosen trial goes on: its checkpoint is where the full run resumes
        if not (me / "full.ckpt").is_file():
            shutil.copyfile(me / trial_checkpoint(best[1]), me / "full.ckpt")
        if job.family == "mini-distilbert":
            teacher_note = "mini-bert's full run (the shipped mini-bert), in the trials too"
    elif job.family == "mini-distilbert":
        final = work / "mini-bert" / "final"
        # wait for the trained mini-bert; if it comes too late to train on it, the best trial's
        if _wait_for(final / "config.json", args.deadline - budget["distil_needs_s"] * 0.5):
            teacher = teacher_from(final, job.device)
            teacher_note = "mini-bert's full run (the shipped mini-bert)"
        else:
            teacher_note = "mini-bert's best tuning trial (the full run ended too late)"
    cfg = Z.ZooConfig(tokens=budget["tokens"], evals=args.evals, **{**job.base, **best[1]})
    done = Z.train_family(job.family, job.tokenizer, job.chunks, job.tune, cfg, teacher=teacher, device=job.device,
                          log=job.log, deadline=args.deadline - args.final_eval_s,
                          checkpoint=(me / "full.ckpt") if args.checkpoint_every or job.prefix else None,
                          checkpoint_every=args.checkpoint_every)
    if job.family == "mini-bert":
        _save_teacher(done["objective"].model, work / "mini-bert" / "final-tmp", work / "mini-bert" / "final")
    return done, budget, teacher_note


def final_scores(job: Job, done: dict) -> dict:
    """The record with the final scores; a scoring error is kept in it, the model still exported."""
    objective, record, family = done["objective"], done["record"], job.family
    cloze = json.loads((REPO / "data" / "everyday_cloze.json").read_text(encoding="utf-8"))["items"]
    mlm = objective.generator if family == "mini-electra" else objective.model
    record["tuning_split"] = zs.whole_word_accuracy(family, mlm, job.tokenizer, job.tune, autocast=job.args.autocast)
    try:
        record.update(zs.final_scores(family, objective, job.tokenizer, done["examples"], job.score, cloze,
                                      job.args.autocast))
    except Exception as exc:  # never lose a trained model to a scoring error: export it, say so
        import traceback

        job.log(traceback.format_exc())
        objective.cpu()
        record["scoring_error"] = repr(exc)
        record.setdefault("heldout", zs.whole_word_accuracy(family, mlm.cpu(), job.tokenizer, job.score))
        record.setdefault("everyday", {"hit_rate": float("nan"), "items": []})
        record.setdefault("parameters", {name: sum(p.numel() for p in m.parameters())
                                         for name, m in (("model", objective.model), ("generator", objective.generator))
                                         if m is not None})
    return record


def export_family(job: Job, done: dict, tuning: dict, budget: dict, teacher_note: str | None) -> None:
    """The scored record, with how it was tuned and budgeted, and the folder under --work/export."""
    args, t1 = job.args, time.time()
    record = final_scores(job, done)
    record["heldout"]["split"] = f"data/heldout.txt without its last {zd.TUNING_SENTENCES} lines (the tuning split)"
    record["unigram"] = zs.unigram_baseline(job.tokenizer, job.counts, job.score)
    record["unigram_tuning_split"] = job.unigram_tune
    record["tokens_per_s"] = record["tokens"] / max(record["wall_minutes"] * 60, 1e-9)
    record.update({
        "tokenizer_kind": zm.TOKENIZER_OF[job.family],
        "corpus": {"sentences": job.corpus["sentences"], "file": "train_ordered.tsv"},
        "eval_minutes": (time.time() - t1) / 60, "torch": torch.__version__, "device": str(job.device),
        "device_name": _device_name(job.device),
        "tuning": {"grid": args.grid, **tuning,
                   "chosen_by": f"lowest loss per masked piece on the tuning split ({len(job.tune)} held-out sentences)",
                   "search": SEARCHES[args.search], "search_kind": args.search},
        "budget": budget, "script": budget.get("script", "scripts.zoo gpu"),
        "concurrency": budget.get("concurrency") or f"{budget['families']} families trained at once, one process each",
        **({"teacher": teacher_note} if teacher_note else {}),
    })
    export(job.family, done["objective"], job.tokenizer, record, args.work / "export")
    job.log(json.dumps({"family": job.family, "final": {k: record[k] for k in ("heldout", "tokens", "steps",
                                                                            "wall_minutes", "stopped_at_deadline")}}))


def probe_rate(family: str, tokenizer, chunks, base: dict, device: torch.device, start: float,
               window: float) -> tuple[float, int]:
    """(tokens/s, steps timed) of the family's training at the run's shape, batch and precision
    in the window of ``window`` seconds from ``start`` (a ``time.time()``) that every probing
    family shares, so that each is timed beside the others, as it will train (a family timed
    alone reads a higher rate than it keeps beside the others, and the budget set from it is
    then out of reach). Steps in the window's first quarter are not
    counted (allocation, kernel choice); the model is thrown away."""
    time.sleep(max(0.0, start - time.time()))
    marks = []

    def clock(step: int, tokens: int) -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        marks.append((time.time(), tokens))

    cfg = Z.ZooConfig(tokens=10**12, evals=0, **base)
    Z.train_family(family, tokenizer, chunks, [], cfg, device=device, log=lambda line: None,
                   deadline=start + window, on_step=clock)
    if device.type == "cuda":
        torch.cuda.empty_cache()
    timed = [m for m in marks if m[0] >= start + window / 4]
    if len(timed) < 2:
        raise SystemExit(f"{family}: {len(marks)} steps in the probe's {window:g} s window: too few to time "
                         "(give --probe-s more)")
    (t0, n0), (t1, n1) = timed[0], timed[-1]
    return (n1 - n0) / max(t1 - t0, 1e-9), len(timed) - 1


def trial_loss(trial: dict) -> float:
    """A trial's score for the search: its loss per masked piece; a diverged trial's (NaN or
    infinite) counts as infinite, so it is never chosen over one that learnt (a NaN compares
    false with everything: the first trial, diverged, would otherwise stay chosen)."""
    return trial["piece_loss"] if math.isfinite(trial["piece_loss"]) else math.inf


def trial_checkpoint(point: dict) -> str:
    """A prefix trial's checkpoint file name: {"lr": 0.001, "dropout": 0.0} -> trial-lr=0.001-dropout=0.0.ckpt"""
    return "trial-" + "-".join(f"{k}={v}" for k, v in point.items()) + ".ckpt"


def _save_teacher(model, tmp: Path, final: Path) -> None:
    """mini-bert as shipped (fp16 values, kept in float32), moved into place atomically."""
    if tmp.exists():
        shutil.rmtree(tmp)
    copy.deepcopy(model).half().float().save_pretrained(str(tmp))
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)


def training_args(q, **defaults) -> None:
    """The worker's settings on parser ``q`` (``gpu run``, ``worker``; ``search`` with its
    own ``defaults``: argument dest -> default)."""
    d = {"device": "cuda", "grid": "lr=1e-3,2e-3 dropout=0,0.1", "trial_tokens": 3_000_000, "batch_size": 64,
         "autocast": "bf16", "evals": 8, "work": Path("/tmp/zoo-gpu-work"), "checkpoint_every": 0, **defaults}
    q.add_argument("--device", default=d["device"])
    q.add_argument("--grid", default=d["grid"])
    q.add_argument("--trial-tokens", type=int, default=d["trial_tokens"],
                   help="tokens per tuning trial (gpu run's prefix search: --trial-fraction of the budget instead)")
    q.add_argument("--batch-size", type=int, default=d["batch_size"])
    q.add_argument("--warmup", type=float, default=Z.ZooConfig.warmup)
    q.add_argument("--autocast", default=d["autocast"], choices=["bf16", ""])
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--evals", type=int, default=d["evals"])
    q.add_argument("--final-eval-s", type=float, default=25.0, help="seconds kept for the final scores")
    q.add_argument("--max-sentences", type=int, default=0, help="first N corpus lines only (tests)")
    q.add_argument("--heldout-limit", type=int, default=0, help="first N sentences of each held-out split (tests)")
    q.add_argument("--tiny", action="store_true", help="a 2-layer 64-wide shape (tests only)")
    q.add_argument("--work", type=Path, default=d["work"])
    q.add_argument("--position-init", default="local", choices=["random", "sinusoidal", "local"],
                   help="how a learnt absolute position table starts (models/zoo/locality.py)")
    q.add_argument("--checkpoint-every", type=int, default=d["checkpoint_every"],
                   help="full run (and prefix trials): write a checkpoint every N steps and resume from it "
                        "(0: none; a prefix search still writes one at the end of each trial and run)")
    q.add_argument("--trials-only", action="store_true",
                   help="the tuning trials alone, then stop (trials.json; no full run, no export)")
    q.add_argument("--probe-s", type=float, default=d.get("probe_s", 0.0),
                   help="prefix search on the GPU schedule: seconds every family trains side by side, "
                        "timed, before the budget is set")
    q.add_argument("--search", default=d.get("search", "separate"), choices=sorted(SEARCHES),
                   help="separate: trials from scratch on their own schedule; prefix: each trial is the "
                        "opening of its full run and the chosen one goes on (needs the budget before the trials)")


def worker_command(args, family: str, work: Path, deadline: float) -> list[str]:
    """The command line of one family's worker, with every setting of ``training_args``."""
    return [sys.executable, "-m", "scripts.zoo", "worker", "--family", family, "--work", str(work),
            "--deadline", str(deadline), "--device", args.device, "--grid", args.grid,
            "--trial-tokens", str(args.trial_tokens), "--batch-size", str(args.batch_size),
            "--autocast", args.autocast, "--seed", str(args.seed), "--evals", str(args.evals),
            "--warmup", str(args.warmup), "--final-eval-s", str(args.final_eval_s),
            "--max-sentences", str(args.max_sentences), "--heldout-limit", str(args.heldout_limit),
            "--position-init", args.position_init, "--checkpoint-every", str(args.checkpoint_every),
            "--search", args.search, "--probe-s", str(args.probe_s),
            *(["--trials-only"] if args.trials_only else []),
            *(["--tiny"] if args.tiny else [])]

