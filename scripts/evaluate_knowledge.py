"""The facts stages' goals for the offline fill-mask model, before and after a facts stage.

    python -m scripts.evaluate_knowledge --before weights/minilm-mlm --after .cache/runs/minilm-c

Each model is a run folder (its ``trained.safetensors`` applied on MiniLM's exact installed
weights, as ``make setup`` assembles the shipped model) or a complete model folder
(e.g. ``.cache/models/minilm-mlm``). Printed for each, with the targets:

* facts: ``data/facts_cloze.json`` (113 sentences written for this project), a hit when an
  accepted answer is the first guess / among the top 5; the rank of "paris" in
  "The capital of France is [MASK]."; the top 5 by topic;
* everyday: ``data/everyday_cloze.json`` (36 sentences), the same scoring;
* held-out: ``data/heldout.txt`` (the older sources' 3,191 held-out sentences, never trained
  on), 15 % of the tokens masked with the fixed seed of scripts/evaluate.py, top-1 / top-5 /
  mean loss.

The cloze sets are scored with the trainer's scorer (``models.pretraining.evaluation.probe_predictions``:
softmax top-5 at the mask); ``knowledge_probe`` gives the same top-5 through the app's
fill-mask path for a registry model (tests check both against transformers' pipeline).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from models.pretraining.evaluation import evaluate_masked, heldout_sentences, probe_predictions
from models.mlm.knowledge import normalise_guess, probe_items

REPO = Path(__file__).resolve().parent.parent
FRANCE = "The capital of France is [MASK]."
TARGETS = {"facts_top5": 0.80, "everyday_top5": 0.90, "heldout_top1": 0.376, "heldout_top5": 0.574}


def load_overlay_model(path: Path):
    """(model, tokenizer) of a run folder (MiniLM + its trained tensors) or a model folder."""
    from transformers import AutoTokenizer, BertForMaskedLM

    if not (path / "trained.safetensors").is_file():
        return BertForMaskedLM.from_pretrained(str(path)).eval(), AutoTokenizer.from_pretrained(str(path))
    import dataclasses

    from safetensors.torch import load_file

    from models.pretraining import trainer as pretrain
    from models.registry.catalogue import get_spec, local_path

    config = json.loads((path / "config.json").read_text())
    fields = {f.name for f in dataclasses.fields(pretrain.PretrainConfig)} - {"snapshot_fractions"}
    cfg = pretrain.PretrainConfig(**{k: v for k, v in config.items() if k in fields})
    minilm = local_path(get_spec("minilm-l6"))
    model = pretrain.build_model(cfg, minilm)
    state = {k: v.float() for k, v in load_file(str(path / "trained.safetensors")).items()}
    missing = set(pretrain.trained_state(model)) - set(state)
    if missing:
        raise SystemExit(f"{path}: the checkpoint lacks {sorted(missing)[:3]}")
    model.load_state_dict(state, strict=False)
    return model.eval(), AutoTokenizer.from_pretrained(str(minilm))


def cloze_scores(model, tokenizer, probe_set: str) -> dict:
    """top-1 / top-5 hit rates, per-topic top-5 counts and each sentence's top 5 and rank."""
    items = probe_items(probe_set)
    rows = []
    for (text, top), item in zip(probe_predictions(model, tokenizer, [i["text"] for i in items]), items):
        guesses = [normalise_guess(t) for t, _ in top]
        rank = next((r + 1 for r, g in enumerate(guesses) if g in item["answers"]), None)
        rows.append({"text": text, "category": item["category"], "top": guesses, "rank": rank})
    topics: dict[str, list[int]] = {}
    for r in rows:
        t = topics.setdefault(r["category"], [0, 0])
        t[0] += 1
        t[1] += r["rank"] is not None
    n = max(len(rows), 1)
    return {"top1": sum(r["rank"] == 1 for r in rows) / n, "top5": sum(r["rank"] is not None for r in rows) / n,
            "n": len(rows), "topics": topics, "items": rows}


def scores(path: Path, limit: int | None = None) -> dict:
    model, tokenizer = load_overlay_model(path)
    facts, everyday = cloze_scores(model, tokenizer, "facts"), cloze_scores(model, tokenizer, "everyday")
    held = evaluate_masked(model, tokenizer, heldout_sentences()[:limit])
    france = next(r for r in facts["items"] if r["text"] == FRANCE)
    return {"facts": facts, "everyday": everyday, "france": france,
            "heldout": {"top1": held.top1, "top5": held.top5, "loss": held.loss, "n_tokens": held.n_tokens}}


def report(rows: list[tuple[str, dict]], markdown: bool) -> str:
    header = ["model", "facts top-1", "facts top-5", "paris rank", "everyday top-1", "everyday top-5",
              "held-out top-1", "held-out top-5", "held-out loss"]
    target = ["target", "", f"≥ {TARGETS['facts_top5']:.0%}", "1", "", f"≥ {TARGETS['everyday_top5']:.0%}",
              f"≥ {TARGETS['heldout_top1']:.1%}", f"≥ {TARGETS['heldout_top5']:.1%}", ""]
    lines = [target]
    for name, s in rows:
        lines.append([name, f"{s['facts']['top1']:.1%}", f"{s['facts']['top5']:.1%}",
                      str(s["france"]["rank"] or "not in top 5"), f"{s['everyday']['top1']:.1%}",
                      f"{s['everyday']['top5']:.1%}", f"{s['heldout']['top1']:.1%}", f"{s['heldout']['top5']:.1%}",
                      f"{s['heldout']['loss']:.3f}"])
    if markdown:
        out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        out += ["| " + " | ".join(line) + " |" for line in lines]
    else:
        widths = [max(len(x[i]) for x in [header, *lines]) for i in range(len(header))]
        out = ["  ".join(c.ljust(w) for c, w in zip(line, widths)) for line in [header, *lines]]
    for name, s in rows:
        topics = "; ".join(f"{t} {h}/{n}" for t, (n, h) in s["facts"]["topics"].items())
        out += ["", f"{name}: {FRANCE} -> {', '.join(s['france']['top'])}", f"{name}: facts top-5 by topic: {topics}"]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="run or model folder (e.g. weights/minilm-mlm)")
    parser.add_argument("--after", type=Path, default=REPO / ".cache" / "models" / "minilm-mlm",
                        help="run or model folder (default: the assembled shipped model)")
    parser.add_argument("--limit", type=int, default=None, help="first N held-out sentences only")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--json", type=Path, help="also write every score and top 5 here")
    args = parser.parse_args(argv)
    rows = [(str(p), scores(p, args.limit)) for p in (args.before, args.after) if p is not None]
    print(report(rows, args.markdown))
    if args.json:
        args.json.write_text(json.dumps(dict(rows), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
