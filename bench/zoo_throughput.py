"""Mini-zoo training throughput: torch's stock kernels against the fast path, same run.

    nice -n 19 .venv/bin/python -m bench.zoo_throughput            # 7 families, 3 repeats
    nice -n 19 .venv/bin/python -m bench.zoo_throughput --recipe   # and the fast path without dropout
    nice -n 19 .venv/bin/python -m bench.zoo_throughput --recipe --autocast bf16   # the CPU zoo's recipe
    .venv/bin/python -m bench.zoo_throughput --families mini-bert --steps 10 --repeats 1
    .venv/bin/python -m bench.zoo_throughput --recipe --autocast bf16 --warmup 150 --steps 50   # steady state

Trains each family with the real trainer (``models.zoo.train.train_family``, the shipped
recipe: shape, batch, dropout, learning rate) for ``--warmup`` + ``--steps`` steps, once
with ``ZooConfig(fast_kernels=False)`` (the path the shipped zoo was trained on) and once
with ``fast_kernels=True`` (``models/zoo/fast.py``), alternating which goes first from one
repeat to the next (and, with ``--isolate none``, from one family to the next), and prints training tokens per second (non-padding inputs,
as the trainer counts them) over the steps after the warm-up, each path's figure over the
repeats with its spread, and the ratio fast / stock per family (median of the repeats'
ratios; the target is 2.0). Both paths see the same batches and masks.
Each family runs in a fresh Python process of its own (``--isolate family``, the default), as
``python -m scripts.zoo search`` trains each family: in one process that had trained the six families
before it, ModernBERT's fast path ran at 19,000-20,500 tokens/s, against 22,300-24,200 alone
(glibc's allocator hands an aging process fresh large buffers that page-fault).
``--isolate none`` keeps every family in this process (the tests' tiny runs).
The fast path runs with the allocator training runs with (``--allocator auto``: gperftools'
tcmalloc when installed, ``models/zoo/allocator.py``); the stock path always with glibc's, as
the stock recipe it stands for. An allocator is a process's choice, so with tcmalloc
each repeat of each path runs in a process of its own (the order of the two alternating from one
repeat to the next); ``--allocator glibc`` keeps one process per family for both paths.
``--paths`` runs one path only (the children of that split).
The fast path speeds up over its first ~200 steps in a fresh process, the stock path hardly:
on the Xeon of 2026-12-03, ALBERT's fast path read 22,000 tokens/s over steps 3-25 and 32,000
over steps 300-400, its stock path 11,600 and 13,700 from step 25 on (one run each). The
defaults (3 + 20 steps) are a quick read of the start; what a long training run gets is read
with ``--warmup 150 --steps 50`` (about three times as long).
``--autocast bf16`` runs the fast path's products in bfloat16 (float32 weights and
optimiser); the stock path stays in float32, as the zoo was first trained.

Figures from a shared machine are indicative only: take them on a quiet one.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as scripts/zoo/__init__.py (sleeping, not spinning, waits)

import torch  # noqa: E402

from bench.bench_common import machine_line, spread, spread_text  # noqa: E402
from models.zoo.allocator import ALLOCATORS, child_env, current_allocator, resolve  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TARGET = 2.0


def parse_args(argv=None) -> argparse.Namespace:
    from models.zoo.families import FAMILIES

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--families", nargs="+", default=list(FAMILIES), choices=FAMILIES)
    p.add_argument("--steps", type=int, default=20, help="timed steps per run (after the warm-up)")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps first (the first counts FLOPs)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=None, help="default: the shipped ZooConfig's")
    p.add_argument("--corpus", type=Path, default=REPO / ".cache" / "corpus" / "train_ordered.tsv",
                   help="train_ordered.tsv (source<TAB>sentence), or a plain text file of sentences")
    p.add_argument("--sentences", type=int, default=8000, help="corpus lines to tokenize")
    p.add_argument("--tiny", action="store_true", help="a 2-layer 32-wide shape (tests only)")
    p.add_argument("--json", type=Path, default=None, help="also write the figures here")
    p.add_argument("--isolate", default="family", choices=["family", "none"],
                   help="family: each family's runs in a fresh process of its own, as real training runs "
                        "(as python -m scripts.zoo search); none: every family in this process")
    p.add_argument("--recipe", action="store_true",
                   help="the recipes, not only the kernels: the fast path also without dropout (what the CPU "
                        "zoo's tuning search offers, as the cramming results suggest), against the "
                        "stock path with each config's dropout (0.1; ModernBERT 0), the stock recipe")
    p.add_argument("--autocast", default="", choices=["", "bf16"],
                   help="the fast path's precision: bf16 autocast (float32 weights and optimiser; "
                        "the products in bfloat16) or float32; the stock path stays float32")
    p.add_argument("--allocator", default="auto", choices=ALLOCATORS,
                   help="the fast path's processes' allocator (with --isolate family): auto = tcmalloc when "
                        "installed, as python -m scripts.zoo search trains; the stock path always runs with glibc's")
    p.add_argument("--paths", default="both", choices=["both", "stock", "fast"],
                   help="which paths to time (one: the processes of the allocator split)")
    args = p.parse_args(argv)
    if args.steps < 1 or args.repeats < 1 or args.warmup < 1:
        p.error("--steps, --repeats and --warmup must be at least 1")
    return args


def _corpus(path: Path, limit: int) -> tuple[list[str], list[str]]:
    from models.zoo import data as zd

    if path.suffix == ".tsv":
        sources, sentences = zd.read_ordered(path)
    else:
        sentences = [s for s in path.read_text(encoding="utf-8").splitlines() if s.strip()]
        sources = ["text"] * len(sentences)
    return sources[:limit], sentences[:limit]


def _shape(tiny: bool, vocab: int):
    from models.zoo.families import Shape

    if tiny:
        return Shape(layers=2, hidden=32, heads=2, ffn=64, vocab=vocab, max_len=64, albert_embedding=16,
                     electra_embedding=16, electra_generator_hidden=16)
    return Shape()


def one_run(family: str, fast: bool, setup: dict, args) -> tuple[float, float]:
    """(training tokens per second of wall time, per second of this process's CPU time) of one
    run, over the steps after the warm-up. The CPU-time figure moves less on a shared machine
    (time spent waiting for a core is not counted); the wall-time one is what a run takes."""
    from models.zoo import train as Z

    cfg = Z.ZooConfig(tokens=10 ** 12, evals=0, fast_kernels=fast, shape=setup["shape"],
                      dropout=0.0 if fast and args.recipe else None, autocast=args.autocast if fast else "",
                      **({"batch_size": args.batch_size} if args.batch_size else {}))
    marks = {}

    def on_step(step, tokens):
        if step in (args.warmup, args.warmup + args.steps):
            marks[step] = (time.perf_counter(), time.process_time(), tokens)

    Z.train_family(family, setup["tokenizer"], setup["chunks"], [], cfg, teacher=setup["teacher"],
                   log=lambda _: None, max_steps=args.warmup + args.steps, on_step=on_step)
    (t0, c0, n0), (t1, c1, n1) = marks[args.warmup], marks[args.warmup + args.steps]
    return (n1 - n0) / (t1 - t0), (n1 - n0) / (c1 - c0)


def family_setup(family: str, args, sources, sentences, cache: dict) -> dict:
    from transformers import AutoTokenizer

    from models.registry.zoo_entries import zoo_folder
    from models.zoo import data as zd
    from models.zoo.families import TOKENIZER_OF

    tokenizer = AutoTokenizer.from_pretrained(str(zoo_folder(family)))
    shape = _shape(args.tiny, len(tokenizer))
    kind = TOKENIZER_OF[family]
    if kind not in cache:
        ids = tokenizer(sentences, add_special_tokens=False)["input_ids"]
        cache[kind] = zd.make_chunks(sources, ids, shape.max_len - 3)
    teacher = None
    if family == "mini-distilbert":  # DistilBERT distils from a mini-bert of the same shape
        from transformers import BertConfig, BertForPreTraining

        if args.tiny:
            teacher = BertForPreTraining(BertConfig(vocab_size=shape.vocab, hidden_size=shape.hidden,
                                                    num_hidden_layers=shape.layers, num_attention_heads=shape.heads,
                                                    intermediate_size=shape.ffn, max_position_embeddings=shape.max_len,
                                                    pad_token_id=tokenizer.pad_token_id))
        else:
            teacher = BertForPreTraining.from_pretrained(str(zoo_folder("mini-bert")), dtype=torch.float32)
    return {"tokenizer": tokenizer, "chunks": cache[kind], "shape": shape, "teacher": teacher}


def header(args) -> str:
    from models.zoo import train as Z

    default = Z.ZooConfig()
    return (f"fast path: ZooConfig defaults (fast_kernels {default.fast_kernels}, workers {default.workers})"
            + (", dropout 0 (--recipe)" if args.recipe else "")
            + (", bf16 autocast" if args.autocast == "bf16" else ", float32") + "; stock: fast_kernels=False, float32"
            + (", each config's dropout" if args.recipe else "") + f"; {args.steps} timed steps after "
            f"{args.warmup} warm-up, {args.repeats} repeats, {args.threads} threads, "
            + ("each family in a fresh process" if args.isolate == "family" else "every family in one process")
            + "; " + allocator_text(args) + "; indicative only on a shared machine")


def allocator_text(args) -> str:
    if args.isolate == "none":
        return f"allocator: this process's ({current_allocator()})"
    library = resolve(args.allocator)
    if library is None:
        return "allocator: glibc's for both paths"
    return (f"allocator: the fast path's processes tcmalloc ({library}), the stock path's glibc's; "
            "a process per repeat and path")


def measure(args, families: list[str], print_) -> dict:
    """{family: {"stock", "fast", "stock_cpu", "fast_cpu": [one figure per repeat]}}, every
    family in this process, the repeats interleaved across families."""
    sources, sentences = _corpus(args.corpus, args.sentences)
    cache, setups = {}, {}
    for family in families:
        setups[family] = family_setup(family, args, sources, sentences, cache)
    figures = {f: {"stock": [], "fast": [], "stock_cpu": [], "fast_cpu": []} for f in families}
    k = 0
    wanted = {"both": (False, True), "stock": (False,), "fast": (True,)}[args.paths]
    for repeat in range(args.repeats):
        for family in families:
            order = (False, True) if k % 2 == 0 else (True, False)  # alternate which path goes first
            k += 1
            for fast in (f for f in order if f in wanted):
                wall, cpu = one_run(family, fast, setups[family], args)
                path = "fast" if fast else "stock"
                figures[family][path].append(wall)
                figures[family][path + "_cpu"].append(cpu)
            print_(repeat_line(repeat, family, figures[family]))
    return figures


def repeat_line(repeat: int, family: str, f: dict, allocator: dict | None = None) -> str:
    """One repeat's figures of the paths timed (the last of each), with each path's allocator
    when it is not this process's."""
    paths = [p for p in ("stock", "fast") if f[p]]
    where = {p: f" ({allocator[p]})" if allocator else "" for p in paths}
    return (f"  repeat {repeat + 1} {family}: " + ", ".join(f"{p} {f[p][-1]:,.0f}{where[p]}" for p in paths)
            + " tokens/s; per CPU-second " + ", ".join(f"{p} {f[p + '_cpu'][-1]:,.0f}" for p in paths))


def child_argv(args, family: str, out: Path) -> list[str]:
    """This bench's command line for one family in a process of its own (``--isolate none``)."""
    argv = [sys.executable, "-m", "bench.zoo_throughput", "--families", family, "--isolate", "none",
            "--steps", str(args.steps), "--warmup", str(args.warmup), "--repeats", str(args.repeats),
            "--threads", str(args.threads), "--corpus", str(args.corpus), "--sentences", str(args.sentences),
            "--autocast", args.autocast, "--json", str(out), "--allocator", args.allocator, "--paths", args.paths]
    if args.batch_size:
        argv += ["--batch-size", str(args.batch_size)]
    return argv + ["--tiny"] * args.tiny + ["--recipe"] * args.recipe


def _child(args, family: str, out: Path, env: dict, print_, echo: bool) -> dict:
    """One child process's figures (its JSON), its lines passed on as they come when ``echo``."""
    proc = subprocess.Popen(child_argv(args, family, out), cwd=str(REPO), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env={**env, "PYTHONUNBUFFERED": "1"})
    said = []
    for line in proc.stdout:
        said.append(line)
        if echo and line.startswith("  repeat "):
            print_(line.rstrip("\n"))
    if proc.wait() != 0:
        raise RuntimeError(f"the bench's process for {family} exited with {proc.returncode}; it printed:\n"
                           + "".join(said[-40:]))
    return json.loads(out.read_text(encoding="utf-8"))


def measure_isolated(args, print_) -> tuple[dict, dict]:
    """``measure`` for each family in fresh processes, one after the other. With glibc for both
    paths: one process per family, its lines passed on. With tcmalloc for the fast path: a
    process per repeat and path (stock with glibc's allocator), the order alternating. Returns
    (figures, {family: [{"pid", "paths", "allocator"} of each process]})."""
    figures, processes = {}, {}
    split = resolve(args.allocator) is not None
    with tempfile.TemporaryDirectory() as tmp:
        for family in args.families:
            out = Path(tmp) / f"{family}.json"
            if not split:
                child = _child(args, family, out, child_env("glibc"), print_, echo=True)
                figures[family] = child["raw"][family]
                processes[family] = [{"pid": child["processes"][family], "paths": "both",
                                      "allocator": child["allocator"]}]
                continue
            f = {"stock": [], "fast": [], "stock_cpu": [], "fast_cpu": []}
            processes[family], seen = [], {}
            for repeat in range(args.repeats):
                for path in [p for p in (("stock", "fast") if repeat % 2 == 0 else ("fast", "stock"))
                             if args.paths in ("both", p)]:
                    one = argparse.Namespace(**{**vars(args), "paths": path, "repeats": 1})
                    env = child_env(args.allocator if path == "fast" else "glibc")
                    child = _child(one, family, out, env, print_, echo=False)
                    for key in (path, path + "_cpu"):
                        f[key] += child["raw"][family][key]
                    seen[path] = child["allocator"]
                    processes[family].append({"pid": child["processes"][family], "paths": path,
                                              "allocator": child["allocator"]})
                print_(repeat_line(repeat, family, f, seen))
            figures[family] = f
    return figures, processes


def run(args, print_=print) -> dict:
    torch.set_num_threads(args.threads)
    print_(machine_line())
    print_(header(args))
    if args.isolate == "family":
        figures, processes = measure_isolated(args, print_)
    else:
        figures = measure(args, args.families, print_)
        processes = {family: os.getpid() for family in args.families}
    result = {"machine": machine_line(), "recipe": args.recipe, "autocast": args.autocast, "steps": args.steps,
              "allocator": current_allocator(), "paths": args.paths,
              "warmup": args.warmup, "repeats": args.repeats, "threads": args.threads, "isolate": args.isolate,
              "processes": processes, "families": {}, "raw": figures}
    for unit, suffix in (("tokens/s (wall)", ""), ("tokens per CPU-second", "_cpu")):
        print_(f"\n{unit}, median of {args.repeats} (range, spread); ratio fast / stock (target >= {TARGET})")
        for family, f in figures.items():
            stock, fast = f["stock" + suffix], f["fast" + suffix]
            if not (stock and fast):  # one path timed (--paths): its figures, no ratio
                path, runs = ("stock", stock) if stock else ("fast", fast)
                result["families"].setdefault(family, {})[path + suffix] = spread(runs)
                print_(f"  {family:16s} {path} {spread_text(runs, '{:,.0f}')}")
                continue
            ratios = [b / a for a, b in zip(stock, fast)]
            result["families"].setdefault(family, {}).update(
                {"stock" + suffix: spread(stock), "fast" + suffix: spread(fast), "ratio" + suffix: spread(ratios)})
            print_(f"  {family:16s} stock {spread_text(stock, '{:,.0f}')}\n  {'':16s} fast  "
                   f"{spread_text(fast, '{:,.0f}')}\n  {'':16s} ratio {spread_text(ratios)}"
                   f"{'' if statistics.median(ratios) >= TARGET else '  (below target)'}")
    return result


def main(argv=None) -> int:
    args = parse_args(argv)
    result = run(args)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
