"""The zoo on one GPU: pack the corpus here, train every family there at once, import the result here.

    .venv/bin/python -m scripts.zoo gpu pack --corpus .cache/corpus     # here: .gpu/zoo/ (~7 MB)
    python3 -m scripts.zoo gpu run --device cuda --out "$OUT"           # the GPU machine (525 s)
    .venv/bin/python -m scripts.zoo gpu import DIR                      # here: DIR -> weights/zoo/ (+ mini-albert's order reference)
    .venv/bin/python -m scripts.zoo gpu baseline                        # add the word-frequency baseline to records without it

``run`` starts one worker process per family (``python -m scripts.zoo worker``; separate CUDA
contexts on the one GPU, the CPU cores shared out), each: (1) tokenizes the packed corpus with
the family's tokenizer (the shipped one in ``weights/zoo/<key>/``); (2) times its training for
``--probe-s`` seconds, every family in the same window (each waits for the others to be
tokenized: they train side by side, so they are timed side by side; DistilBERT's rate is
estimated from its teacher's), from which the parent sets one token budget for every family:
``--tokens``, or less where the rates say a family would not end before the deadline
(DistilBERT's run waits for mini-bert's, its teacher, and runs after it); (3) the tuning
search, ``search``'s prefix search: every point of ``--grid`` is the opening
``--trial-fraction`` of its own full run on that budget's schedule, scored by the loss per
masked piece on the tuning split of the held-out sentences; (4) the chosen trial goes on to
the full budget. Every run stops at the wall-clock deadline wherever it is; what finished is
kept (the record says so). ``$OUT`` receives ``zoo.tar.gz.part-NN`` (15 MB pieces) and ``run.log``.

The defaults (``GPU_RECIPE``) are the CPU zoo's recipe at a GPU's scale: dropout 0, the
locality start, bf16 autocast, batches of 256 sequences (16x the CPU's 16), learning rates
2e-3 / 4e-3 / 8e-3 (the CPU's 5e-4 / 1e-3 / 2e-3 two steps up for the larger batch), at most
200 M tokens per family (10x the CPU zoo), 525 s in all. ``--search separate`` trains each
grid point from scratch on ``--trial-tokens`` with a schedule of its own, the budget set from
the trials' throughput once they ended.
"""

from __future__ import annotations

import io
import json
import lzma
import os
import shutil
import subprocess
import tarfile
import time
from pathlib import Path

from models.zoo import data as zd
from models.zoo import families as zm
from models.zoo import scores as zs

from .install import install_folders, reference_pairs_argument
from .worker import PROBE_GO, parse_grid, training_args, worker_command

REPO = Path(__file__).resolve().parents[2]
PACK = REPO / ".gpu" / "zoo"
PART_BYTES = 15 * 2**20
SOLO_SPEEDUP = 1.5  # DistilBERT's full run, after the others ended: assumed this much faster than in its trials
# the grid one step above 1e-3 / 2e-3 / 4e-3, of which every family whose trials all ran chose 4e-3
GPU_RECIPE = {"search": "prefix", "probe_s": 15.0, "batch_size": 256, "grid": "lr=2e-3,4e-3,8e-3 dropout=0"}


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


def train_all(args) -> int:
    if args.trials_only:
        raise SystemExit("gpu run: --trials-only is the search's (python -m scripts.zoo search --trials-only)")
    if args.search == "prefix" and args.probe_s <= 0:  # the budget must come before the trials
        raise SystemExit("gpu run: a prefix search sets its budget from a throughput probe: "
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
    install_folders(staging / "zoo", args.out, got, args.corpus, args.reference_pairs)
    return 0


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
def add_arguments(p) -> None:
    sub = p.add_subparsers(dest="step", required=True)
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
    i = sub.add_parser("import", help="here: unpack a GPU run's $OUT into weights/zoo/ and write the cards")
    i.add_argument("source", type=Path)
    i.add_argument("--out", type=Path, default=REPO / "weights" / "zoo")
    i.add_argument("--staging", type=Path, default=REPO / ".gpu" / "import")
    i.add_argument("--corpus", type=Path, default=REPO / ".cache" / "corpus",
                   help="the training corpus (mini-albert's order reference is made from it)")
    reference_pairs_argument(i)
    b = sub.add_parser("baseline", help="here: add the word-frequency baseline to a zoo's records that lack it")
    b.add_argument("--corpus", type=Path, default=REPO / ".cache" / "corpus")
    b.add_argument("--zoo", type=Path, default=REPO / "weights" / "zoo")


def run(args) -> int:
    return {"pack": pack, "run": train_all, "import": import_zoo, "baseline": baseline}[args.step](args)
