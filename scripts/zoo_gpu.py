"""The mini zoo on one GPU: pack here, train there (the same tuning search for every family,
then the full run with each family's choice, all seven at once under one wall-clock budget),
import the result here.

    .venv/bin/python -m scripts.zoo_gpu pack --corpus .cache/corpus      # here: .gpu/zoo/ (~7 MB)
    python3 -m scripts.zoo_gpu run --device cuda --out "$OUT"                  # the GPU machine (525 s)
    .venv/bin/python -m scripts.zoo_gpu import DIR                         # here: DIR -> weights/zoo/ (+ mini-albert's order reference)

``run`` starts one process per family (separate CUDA contexts on the one GPU; the CPU cores
shared out), each: (1) tokenizes the packed corpus with the family's tokenizer (the shipped
one in ``weights/zoo/<key>/``); (2) times its training for ``--probe-s`` seconds, every family
in the same window (each waits for the others to be tokenized: they train side by side, so they
are timed side by side; DistilBERT's rate is estimated from its teacher's), from which the
parent sets one token budget for every family: ``--tokens``, or less where the rates say a
family would not end before the deadline (DistilBERT's run waits for mini-bert's, its
teacher, and runs after it); (3) the tuning search, the CPU zoo's prefix search
(``scripts/zoo_local.py``): every point of ``--grid`` is the opening ``--trial-fraction`` of
its own full run on that budget's schedule, scored by the loss per masked piece on the
tuning split of the held-out sentences; (4) the chosen trial goes on to the full budget.
Every run stops at the wall-clock deadline wherever it is; what finished is kept (the record
says so). ``$OUT`` receives ``zoo.tar.gz.part-NN`` (15 MB pieces) and ``run.log``.

The defaults (``GPU_RECIPE``) are the CPU zoo's recipe at a GPU's scale: dropout 0, the
locality start, bf16 autocast, batches of 256 sequences (16x the CPU's 16), learning rates
2e-3 / 4e-3 / 8e-3 (the CPU's 5e-4 / 1e-3 / 2e-3 two steps up for the larger batch), at most
200 M tokens per family (10x the CPU zoo), 525 s in all. ``--search separate`` is the
other schedule: each grid point from scratch on ``--trial-tokens`` with a schedule of its
own, the budget set from the trials' throughput once they ended.
"""

from __future__ import annotations

import argparse
import copy
import io
import json
import lzma
import math
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402

from models.zoo import data as zd  # noqa: E402
from models.zoo import families as zm  # noqa: E402
from models.zoo import scores as zs  # noqa: E402
from models.zoo import train as Z  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
PACK = REPO / ".gpu" / "zoo"
PART_BYTES = 15 * 2**20
SEARCHES = {  # what a record's tuning says of its search
    "separate": "each grid point trained from scratch on --trial-tokens with a schedule of its own; "
                "the chosen point then trained again from scratch on the full budget",
    "prefix": "each grid point is the opening --trial-tokens of its own full run (the full budget's "
              "schedule, the same seed); the chosen point's run went on from where its trial stopped",
}
SOLO_SPEEDUP = 1.5  # DistilBERT's full run, after the others ended: assumed this much faster than in its trials


# the grid: in the first GPU run (1e-3 / 2e-3 / 4e-3) every family whose trials all ran chose 4e-3
GPU_RECIPE = {"search": "prefix", "probe_s": 15.0, "batch_size": 256, "grid": "lr=2e-3,4e-3,8e-3 dropout=0"}
PROBE_GO = "probe-go.json"  # the parent's start time for every family's probe window


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


# ----------------------------------------------------------------------------- pack (here)
def pack(args) -> int:
    src = args.corpus / "train_ordered.tsv"
    if not src.is_file():
        raise SystemExit(f"{src} is missing: build the corpus first (python -m scripts.build_corpus)")
    PACK.mkdir(parents=True, exist_ok=True)
    data = src.read_bytes()
    (PACK / "train_ordered.tsv.xz").write_bytes(lzma.compress(data, preset=9 | lzma.PRESET_EXTREME))
    meta = {"source": str(src.name), "bytes": len(data), "lines": data.count(b"\n")}
    (PACK / "corpus.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    size = sum(p.stat().st_size for p in PACK.rglob("*") if p.is_file())
    print(f"{PACK.relative_to(REPO)}: {size / 2**20:.1f} MiB ({meta['lines']:,} corpus lines)")
    return 0


# ----------------------------------------------------------------------------- worker (GPU)
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


def worker(args) -> int:
    from transformers import AutoTokenizer, BertForPreTraining

    family, work, deadline = args.family, args.work, args.deadline
    me = work / family
    me.mkdir(parents=True, exist_ok=True)
    log_file = open(me / "train.log", "a", encoding="utf-8")

    def log(line: str) -> None:
        log_file.write(line + "\n")
        log_file.flush()

    device = torch.device(args.device)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    shape = _shape(args.tiny)
    tokenizer = AutoTokenizer.from_pretrained(str(REPO / "weights" / "zoo" / family))
    t0 = time.time()
    corpus = {}  # its sentences and tokens; the tokens of every sentence whole, before a chunk cuts one to max_len - 3
    chunks = zd.corpus_chunks(work / "train_ordered.tsv", tokenizer, shape.max_len, args.max_sentences,
                              counts=corpus)
    log(json.dumps({"family": family, "tokenized_s": round(time.time() - t0, 1), "chunks": len(chunks),
                    "corpus_tokens": corpus["tokens"]}))
    tune, score = zd.heldout_splits(args.heldout_limit)
    counts = zs.piece_counts(chunks, len(tokenizer))
    unigram_tune = zs.unigram_baseline(tokenizer, counts, tune)
    base = dict(batch_size=args.batch_size, autocast=args.autocast, seed=args.seed, shape=shape,
                warmup=args.warmup, eval_sentences=len(tune), position_init=args.position_init)

    def teacher_from(folder: Path):
        return BertForPreTraining.from_pretrained(str(folder), dtype=torch.float32).to(device)

    # ---- (1) the tuning search: every grid point on the trial budget, scored on the tuning split
    # "prefix": each trial is the opening --trial-tokens of its own full run (the full budget's
    # schedule, written to budget.json before the trials), and the chosen one goes on from there.
    prefix = args.search == "prefix"
    budget = None
    if prefix:
        if args.probe_s and family != "mini-distilbert" and not (me / "probe.json").is_file():
            (me / "ready").touch()  # tokenized: the parent starts the window once every family is
            if not _wait_for(work / PROBE_GO, deadline):
                log(json.dumps({"family": family, "error": "no probe window before the deadline"}))
                return 1
            start = json.loads((work / PROBE_GO).read_text(encoding="utf-8"))["at"]
            rate, steps = probe_rate(family, tokenizer, chunks, base, device, start, args.probe_s)
            (me / "probe.tmp").write_text(json.dumps({"tokens_per_s": rate, "steps": steps, "window_start": start,
                                                      "window_s": args.probe_s}),
                                          encoding="utf-8")
            (me / "probe.tmp").rename(me / "probe.json")
            log(json.dumps({"family": family, "probe_tokens_per_s": round(rate)}))
        if not _wait_for(work / "budget.json", deadline):
            log(json.dumps({"family": family, "error": "a prefix search needs the budget before its trials"}))
            return 1
        budget = json.loads((work / "budget.json").read_text(encoding="utf-8"))
    # a prefix trial's length: the parent's share of the budget (GPU), else the command's
    trial_tokens = (budget or {}).get("trial_tokens") or args.trial_tokens
    teacher = None
    if family == "mini-distilbert":
        # a prefix trial is the start of the full run, so it learns from the full run's teacher
        source = work / "mini-bert" / ("final" if prefix else "trial-best")
        if not _wait_for(source / "config.json", deadline):
            log(json.dumps({"family": family, "error": f"mini-bert's {source.name} did not come before the deadline"}))
            return 1
        teacher = teacher_from(source)
    # trials that ended in an earlier sitting (scripts/zoo_local.py resumes a family here)
    partial = me / "trials-partial.json"
    trials = json.loads(partial.read_text(encoding="utf-8")) if partial.is_file() else []
    best = None
    for trial in trials:
        point = {k: trial[k] for k in parse_grid(args.grid)[0]}
        if best is None or trial_loss(trial) < trial_loss(best[0]):
            best = (trial, point)
    for point in parse_grid(args.grid):
        if any(all(t.get(k) == v for k, v in point.items()) for t in trials):
            continue
        if prefix:
            cfg = Z.ZooConfig(tokens=budget["tokens"], evals=args.evals, **{**base, **point})
            done = Z.train_family(family, tokenizer, chunks, tune, cfg, teacher=teacher, device=device,
                                  log=log, deadline=deadline, checkpoint=me / trial_checkpoint(point),
                                  checkpoint_every=args.checkpoint_every, stop_tokens=trial_tokens)
        else:
            cfg = Z.ZooConfig(tokens=args.trial_tokens, evals=1, **{**base, **point})
            done = Z.train_family(family, tokenizer, chunks, tune, cfg, teacher=teacher, device=device,
                                  log=log, deadline=deadline)
        r = done["record"]
        mlm = done["objective"].generator if family == "mini-electra" else done["objective"].model
        s = zs.whole_word_accuracy(family, mlm, tokenizer, tune, autocast=args.autocast)
        trial = {**point, "piece_loss": s["piece_loss"], "word_top1": s["word_top1"], "tokens": r["tokens"],
                 "steps": r["steps"], "wall_s": r["wall_minutes"] * 60,
                 "tokens_per_s": r["tokens"] / max(r["wall_minutes"] * 60, 1e-9),
                 "stopped_at_deadline": r["stopped_at_deadline"]}
        trials.append(trial)
        partial.write_text(json.dumps(trials, indent=1), encoding="utf-8")
        log(json.dumps({"family": family, "trial": trial}))
        if best is None or trial_loss(trial) < trial_loss(best[0]):
            best = (trial, point)
            if family == "mini-bert" and not prefix:  # DistilBERT's teacher for its trials: the best BERT trial
                _save_teacher(done["objective"].model, work / "mini-bert" / "trial-best-tmp",
                              work / "mini-bert" / "trial-best")
        del done
    rate = sum(t["tokens"] for t in trials) / max(sum(t["wall_s"] for t in trials), 1e-9)
    (me / "trials.json").write_text(json.dumps({"trials": trials, "chosen": best[1], "tokens_per_s": rate,
                                                "unigram_tuning_split": unigram_tune},
                                               indent=1), encoding="utf-8")
    if args.trials_only:  # the search alone (a look at another grid point): no full run
        log(json.dumps({"family": family, "trials_only": True, "chosen": best[1]}))
        return 0

    # ---- (2) the full run: the budget the parent sets from every family's trial throughput
    if not _wait_for(work / "budget.json", deadline):
        log(json.dumps({"family": family, "error": "no budget before the deadline"}))
        return 1
    budget = json.loads((work / "budget.json").read_text(encoding="utf-8"))
    teacher_note = None
    if prefix:  # the chosen trial goes on: its checkpoint is where the full run resumes
        if not (me / "full.ckpt").is_file():
            shutil.copyfile(me / trial_checkpoint(best[1]), me / "full.ckpt")
        if family == "mini-distilbert":
            teacher_note = "mini-bert's full run (the shipped mini-bert), in the trials too"
    elif family == "mini-distilbert":
        final = work / "mini-bert" / "final"
        # wait for the trained mini-bert; if it comes too late to train on it, the best trial's
        if _wait_for(final / "config.json", deadline - budget["distil_needs_s"] * 0.5):
            teacher = teacher_from(final)
            teacher_note = "mini-bert's full run (the shipped mini-bert)"
        else:
            teacher_note = "mini-bert's best tuning trial (the full run ended too late)"
    cfg = Z.ZooConfig(tokens=budget["tokens"], evals=args.evals, **{**base, **best[1]})
    done = Z.train_family(family, tokenizer, chunks, tune, cfg, teacher=teacher, device=device,
                          log=log, deadline=deadline - args.final_eval_s,
                          checkpoint=(me / "full.ckpt") if args.checkpoint_every or prefix else None,
                          checkpoint_every=args.checkpoint_every)
    objective, record = done["objective"], done["record"]
    if family == "mini-bert":
        _save_teacher(objective.model, work / "mini-bert" / "final-tmp", work / "mini-bert" / "final")
    t1 = time.time()
    cloze = json.loads((REPO / "data" / "everyday_cloze.json").read_text(encoding="utf-8"))["items"]
    mlm = objective.generator if family == "mini-electra" else objective.model
    record["tuning_split"] = zs.whole_word_accuracy(family, mlm, tokenizer, tune, autocast=args.autocast)
    try:
        record.update(zs.final_scores(family, objective, tokenizer, done["examples"], score, cloze, args.autocast))
    except Exception as exc:  # never lose a trained model to a scoring error: export it, say so
        import traceback

        log(traceback.format_exc())
        objective.cpu()
        record["scoring_error"] = repr(exc)
        record.setdefault("heldout", zs.whole_word_accuracy(family, mlm.cpu(), tokenizer, score))
        record.setdefault("everyday", {"hit_rate": float("nan"), "items": []})
        record.setdefault("parameters", {name: sum(p.numel() for p in m.parameters())
                                         for name, m in (("model", objective.model), ("generator", objective.generator))
                                         if m is not None})
    record["heldout"]["split"] = f"data/heldout.txt without its last {zd.TUNING_SENTENCES} lines (the tuning split)"
    record["unigram"] = zs.unigram_baseline(tokenizer, counts, score)
    record["unigram_tuning_split"] = unigram_tune
    record["tokens_per_s"] = record["tokens"] / max(record["wall_minutes"] * 60, 1e-9)
    record.update({
        "tokenizer_kind": zm.TOKENIZER_OF[family],
        "corpus": {"sentences": corpus["sentences"], "file": "train_ordered.tsv"},
        "eval_minutes": (time.time() - t1) / 60, "torch": torch.__version__, "device": str(device),
        "device_name": _device_name(device),
        "tuning": {"grid": args.grid, "trial_tokens": trial_tokens, "chosen": best[1], "trials": trials,
                   "chosen_by": f"lowest loss per masked piece on the tuning split ({len(tune)} held-out sentences)",
                   "search": SEARCHES[args.search], "search_kind": args.search},
        "budget": budget, "script": budget.get("script", "scripts.zoo_gpu"),
        "concurrency": budget.get("concurrency") or f"{budget['families']} families trained at once, one process each",
        **({"teacher": teacher_note} if teacher_note else {}),
    })
    from scripts.train_zoo import export

    export(family, objective, tokenizer, record, work / "export")
    log(json.dumps({"family": family, "final": {k: record[k] for k in ("heldout", "tokens", "steps",
                                                                    "wall_minutes", "stopped_at_deadline")}}))
    return 0


def probe_rate(family: str, tokenizer, chunks, base: dict, device: torch.device, start: float,
               window: float) -> tuple[float, int]:
    """(tokens/s, steps timed) of the family's training at the run's shape, batch and precision
    in the window of ``window`` seconds from ``start`` (a ``time.time()``) that every probing
    family shares, so that each is timed beside the others, as it will train. (Timed in turns,
    as each family finished tokenizing, the H200's first run read 1.4-2.1x the trials' rates and
    set a budget that four families did not reach.) Steps in the window's first quarter are not
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


def _shape(tiny: bool) -> zm.Shape:
    return zm.Shape(layers=2, hidden=64, heads=2, ffn=128, vocab=8192, albert_embedding=32, electra_embedding=32,
                    electra_generator_hidden=16) if tiny else zm.Shape()


# ----------------------------------------------------------------------------- run (GPU)
def common_budget(rates: dict[str, float], left_s: float, cap: int, eval_s: float, passes: float = 1.0) -> dict:
    """One token budget for every family that every family can reach in ``left_s`` seconds.

    ``rates``: each family's tokens/s in its trials or probe (all families running at once).
    ``passes``: tokens trained per budget token (a prefix search of n points, each the
    opening fraction f of its run: 1 + (n - 1) f; the trials already ran: 1).
    DistilBERT runs after mini-bert (its teacher), so the two run times add up; by then the
    other families are done, so DistilBERT is assumed ``SOLO_SPEEDUP`` times faster than in
    its trials (if it is not, the deadline stops it and its record says so).
    """
    usable = max(left_s - eval_s, 1.0) * 0.85 / passes
    limits = {f: r * usable for f, r in rates.items() if f != "mini-distilbert"}
    if "mini-distilbert" in rates and "mini-bert" in rates:
        limits["mini-distilbert"] = usable / (1 / rates["mini-bert"] + 1 / (SOLO_SPEEDUP * rates["mini-distilbert"]))
    tokens = int(min([cap, *limits.values()]))
    distil_needs = passes * tokens / (SOLO_SPEEDUP * rates["mini-distilbert"]) if "mini-distilbert" in rates else 0.0
    slowest = min(limits, key=limits.get) if limits else None
    return {"tokens": tokens, "cap": cap, "limited_by": slowest if slowest and limits[slowest] < cap else "the cap",
            "rates": rates, "left_s": left_s, "families": len(rates), "distil_needs_s": distil_needs,
            "passes": passes}


def training_args(q, **defaults) -> None:
    """The worker's settings on parser ``q`` (``run``, ``worker``; scripts/zoo_local.py with its
    own ``defaults``: argument dest -> default)."""
    d = {"device": "cuda", "grid": "lr=1e-3,2e-3 dropout=0,0.1", "trial_tokens": 3_000_000, "batch_size": 64,
         "autocast": "bf16", "evals": 8, "work": Path("/tmp/zoo-gpu-work"), "checkpoint_every": 0, **defaults}
    q.add_argument("--device", default=d["device"])
    q.add_argument("--grid", default=d["grid"])
    q.add_argument("--trial-tokens", type=int, default=d["trial_tokens"],
                   help="tokens per tuning trial (zoo_gpu run's prefix search: --trial-fraction of the budget instead)")
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
    return [sys.executable, "-m", "scripts.zoo_gpu", "worker", "--family", family, "--work", str(work),
            "--deadline", str(deadline), "--device", args.device, "--grid", args.grid,
            "--trial-tokens", str(args.trial_tokens), "--batch-size", str(args.batch_size),
            "--autocast", args.autocast, "--seed", str(args.seed), "--evals", str(args.evals),
            "--warmup", str(args.warmup), "--final-eval-s", str(args.final_eval_s),
            "--max-sentences", str(args.max_sentences), "--heldout-limit", str(args.heldout_limit),
            "--position-init", args.position_init, "--checkpoint-every", str(args.checkpoint_every),
            "--search", args.search, "--probe-s", str(args.probe_s),
            *(["--trials-only"] if args.trials_only else []),
            *(["--tiny"] if args.tiny else [])]


def run(args) -> int:
    if args.trials_only:
        raise SystemExit("scripts.zoo_gpu run: --trials-only is scripts.zoo_local's")
    if args.search == "prefix" and args.probe_s <= 0:  # the budget must come before the trials
        raise SystemExit("scripts.zoo_gpu run: a prefix search sets its budget from a throughput probe: "
                         "--probe-s more than 0")
    t_start = time.time()
    deadline = t_start + args.budget_s
    work, out = args.work, args.out
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    out.mkdir(parents=True, exist_ok=True)
    (work / "train_ordered.tsv").write_bytes(lzma.decompress((args.pack / "train_ordered.tsv.xz").read_bytes()))
    families = list(args.families)
    threads = max(1, (os.cpu_count() or 2) // len(families))
    procs = {}
    for family in families:
        cmd = worker_command(args, family, work, deadline - args.pack_s)
        env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads),
               "TOKENIZERS_PARALLELISM": "true", "PYTHONUNBUFFERED": "1"}
        procs[family] = subprocess.Popen(cmd, cwd=str(REPO), env=env, stdout=open(work / f"{family}.out", "w"),
                                         stderr=subprocess.STDOUT)
    print(f"started {len(procs)} workers ({threads} CPU threads each), deadline in {args.budget_s:.0f} s", flush=True)
    try:
        _coordinate(args, work, families, procs, t_start, deadline)
    finally:  # whatever happened, stop the workers and pack what finished
        for family, p in procs.items():
            if p.poll() is None:
                p.kill()
                print(f"{family}: killed at the deadline", flush=True)
            p.wait()
        _pack_out(work, out, families, t_start)
    return 0


def _coordinate(args, work: Path, families: list[str], procs: dict, t_start: float, deadline: float) -> None:
    """Wait for the workers; once every family's trials (a prefix search: probes) ended, write
    the common budget (and, for a prefix search, each trial's share of it)."""
    budget_written = False
    prefix = args.search == "prefix"
    passes = 1 + (len(parse_grid(args.grid)) - 1) * args.trial_fraction if prefix else 1.0
    probing = [f for f in families if f != "mini-distilbert"] if prefix else []
    while time.time() < deadline - args.pack_s + 5 and any(p.poll() is None for p in procs.values()):
        if probing and not (work / PROBE_GO).exists() and all(
                (work / f / "ready").exists() or procs[f].poll() is not None for f in probing):
            # every family tokenized (or gone): one window for all, a moment from now
            (work / "probe-go.tmp").write_text(json.dumps({"at": time.time() + 1.0}), encoding="utf-8")
            (work / "probe-go.tmp").rename(work / PROBE_GO)
            print(f"[{time.time() - t_start:5.0f} s] every family tokenized: the probes' {args.probe_s:g} s window "
                  "starts", flush=True)
        if not budget_written:
            rates = {}
            for f in families:
                tf = work / f / ("probe.json" if prefix else "trials.json")
                if tf.exists():
                    rates[f] = json.loads(tf.read_text(encoding="utf-8"))["tokens_per_s"]
            others = [f for f in families if f != "mini-distilbert"]
            dead = [f for f in others if procs[f].poll() not in (None, 0) and f not in rates]
            if all(f in rates or f in dead for f in others):
                if "mini-distilbert" in families and "mini-distilbert" not in rates and "mini-bert" in rates:
                    rates["mini-distilbert"] = rates["mini-bert"] * 1.2  # estimate (it trains after its teacher): 2 layers + a teacher forward
                left = deadline - args.pack_s - time.time()
                b = common_budget(rates, left, args.tokens, args.final_eval_s, passes)
                if prefix:
                    b["trial_tokens"] = int(b["tokens"] * args.trial_fraction)
                (work / "budget.tmp").write_text(json.dumps(b, indent=1), encoding="utf-8")
                (work / "budget.tmp").rename(work / "budget.json")
                budget_written = True
                print(f"[{time.time() - t_start:5.0f} s] {'probes' if prefix else 'trials'} done: full budget {b['tokens']:,} tokens "
                      f"(cap {args.tokens:,}; limited by {b['limited_by']}); rates "
                      + ", ".join(f"{f} {r:,.0f}/s" for f, r in rates.items()), flush=True)
        time.sleep(1.0)


def _pack_out(work: Path, out: Path, families: list[str], t_start: float) -> None:
    """$OUT: the trained folders and the logs as 15 MB pieces of one tar.gz, plus run.log."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for family in families:
            folder = work / "export" / family
            if folder.is_dir():
                tar.add(str(folder), arcname=f"zoo/{family}")
            for name in ("train.log", "trials.json"):
                if (work / family / name).is_file():
                    tar.add(str(work / family / name), arcname=f"logs/{family}/{name}")
            if (work / f"{family}.out").is_file():
                tar.add(str(work / f"{family}.out"), arcname=f"logs/{family}/stdout.txt")
        if (work / "budget.json").is_file():
            tar.add(str(work / "budget.json"), arcname="logs/budget.json")
    data = buf.getvalue()
    for k in range(0, max(len(data), 1), PART_BYTES):
        (out / f"zoo.tar.gz.part-{k // PART_BYTES:02d}").write_bytes(data[k : k + PART_BYTES])
    lines = [f"wall {time.time() - t_start:.0f} s; tar.gz {len(data) / 2**20:.1f} MiB"]
    for family in families:
        rec = work / "export" / family / "record.json"
        if rec.is_file():
            r = json.loads(rec.read_text(encoding="utf-8"))
            lines.append(f"{family}: {r['tokens']:,} tokens, {r['steps']:,} steps, {r['wall_minutes']:.1f} min, "
                         f"piece loss {r['heldout']['piece_loss']:.3f}, whole-word {r['heldout']['word_top1']:.1%}, "
                         f"chosen {r['tuning']['chosen']}, stopped at deadline: {r['stopped_at_deadline']}")
        else:
            lines.append(f"{family}: no finished run")
        tail = (work / f"{family}.out")
        if tail.is_file():
            lines += ["   " + x for x in tail.read_text(encoding="utf-8", errors="replace").splitlines()[-5:]]
    (out / "run.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines), flush=True)


# ----------------------------------------------------------------------------- import (here)
def import_zoo(args) -> int:
    parts = sorted(args.source.glob("zoo.tar.gz.part-*"))
    if not parts:
        raise SystemExit(f"no zoo.tar.gz.part-* in {args.source}")
    data = b"".join(p.read_bytes() for p in parts)
    staging = args.staging
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(str(staging), filter="data")
    got = sorted(p.name for p in (staging / "zoo").iterdir()) if (staging / "zoo").is_dir() else []
    if not got:
        raise SystemExit("the archive has no trained family")
    install_folders(staging / "zoo", args.out, got, args.corpus)
    return 0


def install_folders(source: Path, out: Path, families, corpus: Path) -> None:
    """Each family's exported folder in ``source`` replaces its folder in ``out``; a new
    mini-albert gets its bag-of-words order reference (from ``corpus``); then the cards of
    ``out`` are written and the targets table printed."""
    from scripts.train_zoo import clear_backend_state, write_cards_in
    from scripts.zoo_heads import install_reference, need_corpus
    from models.zoo.cards import targets_table

    if "mini-albert" in families:
        need_corpus(corpus)  # before anything is replaced
    out.mkdir(parents=True, exist_ok=True)
    for family in families:
        target = out / family
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(source / family, target)
        for path in target.rglob("tokenizer.json"):  # runs exported before save_tokenizer existed
            clear_backend_state(path)
        print(f"{family}: installed into {target}")
    if "mini-albert" in families:
        ref = install_reference(out / "mini-albert", corpus)
        print(f"mini-albert: the bag-of-words order reference, {ref['accuracy']:.1%} on {ref['pairs']:,} held-out pairs")
    write_cards_in(out)
    print(targets_table(out))


# ----------------------------------------------------------------------------- baseline (here)
def baseline(args) -> int:
    """Add the word-frequency baseline to the records of a trained zoo that lack it (the CPU
    zoo's): piece counts of the corpus's training chunks, scored on the record's own split."""
    from transformers import AutoTokenizer

    all_heldout = [s for s in (REPO / "data" / "heldout.txt").read_text(encoding="utf-8").splitlines() if s]
    counts_of = {}
    for family in zm.FAMILIES:
        path = args.zoo / family / "record.json"
        if not path.is_file():
            continue
        record = json.loads(path.read_text(encoding="utf-8"))
        kind = record["tokenizer_kind"]
        tokenizer = AutoTokenizer.from_pretrained(str(args.zoo / family))
        if kind not in counts_of:
            chunks = zd.corpus_chunks(args.corpus / "train_ordered.tsv", tokenizer,
                                      record["config"]["shape"]["max_len"])
            counts_of[kind] = zs.piece_counts(chunks, len(tokenizer))
        split = zd.heldout_splits()[1] if "tuning split" in record["heldout"].get("split", "") else all_heldout
        record["unigram"] = zs.unigram_baseline(tokenizer, counts_of[kind], split)
        path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        print(f"{family}: word-frequency baseline {record['unigram']['piece_loss']:.3f} nats per piece, "
              f"whole-word top-1 {record['unigram']['word_top1']:.1%} (model {record['heldout']['piece_loss']:.3f}, "
              f"{record['heldout']['word_top1']:.1%})")
    return 0


# ----------------------------------------------------------------------------- CLI
def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("pack", help="here: the corpus, packed small, into .gpu/zoo/")
    a.add_argument("--corpus", type=Path, default=REPO / ".cache" / "corpus")

    r = sub.add_parser("run", help="the GPU machine: search + full run of every family, then pack $OUT")
    # the CPU zoo's recipe at a GPU's scale: its prefix search (each trial an eighth of its run),
    # dropout 0, the locality start, bf16; batches 16x the CPU's (the learning rates one step up)
    training_args(r, **GPU_RECIPE)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--pack", type=Path, default=PACK)
    r.add_argument("--tokens", type=int, default=200_000_000,
                   help="the most full-run tokens per family (10x the CPU zoo's 20 M)")
    r.add_argument("--budget-s", type=float, default=525.0, help="hard wall-clock budget, packing included")
    r.add_argument("--pack-s", type=float, default=15.0, help="seconds kept at the end for packing $OUT")
    r.add_argument("--trial-fraction", type=float, default=0.125,
                   help="prefix search: each trial is this share of the budget (its own run's opening)")
    r.add_argument("--families", nargs="+", default=list(zm.FAMILIES), choices=zm.FAMILIES)
    w = sub.add_parser("worker", help="internal: one family (started by run)")
    training_args(w)
    w.add_argument("--family", required=True, choices=zm.FAMILIES)
    w.add_argument("--deadline", type=float, required=True)
    i = sub.add_parser("import", help="here: unpack a GPU run's $OUT into weights/zoo/ and write the cards")
    i.add_argument("source", type=Path)
    i.add_argument("--out", type=Path, default=REPO / "weights" / "zoo")
    i.add_argument("--staging", type=Path, default=REPO / ".gpu" / "import")
    i.add_argument("--corpus", type=Path, default=REPO / ".cache" / "corpus",
                   help="the training corpus (mini-albert's order reference is made from it)")
    b = sub.add_parser("baseline", help="here: add the word-frequency baseline to a zoo's records that lack it")
    b.add_argument("--corpus", type=Path, default=REPO / ".cache" / "corpus")
    b.add_argument("--zoo", type=Path, default=REPO / "weights" / "zoo")
    args = p.parse_args(argv)
    return {"pack": pack, "run": run, "worker": worker, "import": import_zoo, "baseline": baseline}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
