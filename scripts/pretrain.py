"""Pre-train the offline fill-mask model (or a small from-scratch BERT) on the corpus.

    python scripts/build_corpus.py                        # once: .cache/corpus/
    python scripts/pretrain.py --out .cache/runs/minilm   # MiniLM encoder + new MLM head
    python scripts/pretrain.py --init scratch --out .cache/runs/scratch

Writes into --out: config.json, log.jsonl (loss, learning rate, throughput, evaluations),
snapshots.json (probe predictions at 0, 1, 10, 25, 50, 100 % of the steps),
trained.safetensors (only the tensors the run changed; float16), checkpointed at every
evaluation, and final.json (held-out and everyday-cloze scores). Runs on CUDA when
there is one (``--device``), else on the CPU.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

from models import pretrain  # noqa: E402
from models.registry import get_spec, local_path  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
PROBES = [
    "The cat sat on the [MASK].",
    "She opened the [MASK] and walked in.",
    "The capital of France is [MASK].",
    "I drink a cup of [MASK] every morning.",
    "He was very [MASK] to see her again.",
    "It is a truth universally acknowledged that a single [MASK] in possession of a good fortune must be in want of a wife.",
]


def save_trained(model, path: Path, cfg: pretrain.PretrainConfig) -> None:
    state = pretrain.trained_state(model) if cfg.init == "minilm" else model.state_dict()
    state = {k: v.detach().to(torch.float16).contiguous() for k, v in state.items()
             if not k.endswith("decoder.weight") and not k.endswith("decoder.bias")}
    tmp = path.with_suffix(".tmp")
    save_file(state, str(tmp), metadata={"init": cfg.init, "format": "pt"})
    tmp.replace(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=REPO / ".cache" / "corpus")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--finish", action="store_true",
                        help="stop an interrupted run at its last checkpoint: evaluate it and "
                             "write final.json and a last snapshot (the learning rate had not decayed)")
    for f in dataclasses.fields(pretrain.PretrainConfig):
        if f.name == "snapshot_fractions":
            continue
        parser.add_argument("--" + f.name.replace("_", "-"), type=type(f.default), default=f.default)
    args = parser.parse_args(argv)
    cfg = pretrain.PretrainConfig(**{
        f.name: getattr(args, f.name) for f in dataclasses.fields(pretrain.PretrainConfig)
        if f.name != "snapshot_fractions"
    })
    from transformers import AutoTokenizer

    minilm = local_path(get_spec("minilm-l6"))
    tokenizer = AutoTokenizer.from_pretrained(str(minilm))
    train = pretrain.read_sentences(args.corpus / "train.txt")
    heldout = pretrain.read_sentences(args.corpus / "heldout.txt")
    model = pretrain.build_model(cfg, minilm)
    if args.finish:
        return finish(args, cfg, model, tokenizer, heldout)
    n_trained = sum(p.numel() for p in model.parameters() if p.requires_grad)
    args.out.mkdir(parents=True, exist_ok=True)
    pretrain.save_json(args.out / "config.json", {
        **dataclasses.asdict(cfg), "device": args.device, "trained_parameters": n_trained,
        "train_sentences": len(train), "heldout_sentences": len(heldout),
        "torch": torch.__version__, "threads": torch.get_num_threads(),
    })
    print(f"training {n_trained:,} parameters on {len(train):,} sentences, device {args.device}", flush=True)

    snapshots = []
    started = time.time()
    device = torch.device(args.device)
    with open(args.out / "log.jsonl", "w", encoding="utf-8") as log:
        for event in pretrain.train_mlm(cfg, model, tokenizer, train, heldout, PROBES, device=device):
            record = pretrain.event_record(event)
            log.write(json.dumps(record) + "\n")
            log.flush()
            line = f"step {event.step}/{event.steps} loss {event.loss:.3f} {event.tokens_per_s:.0f} tok/s"
            if event.eval:
                line += f" | held-out top1 {event.eval.top1:.3f} top5 {event.eval.top5:.3f} loss {event.eval.loss:.3f}"
                save_trained(model, args.out / "trained.safetensors", cfg)
            print(line, flush=True)
            if event.probes:
                snapshots.append({"step": event.step, "fraction": event.step / cfg.steps, "probes": event.probes})
                pretrain.save_json(args.out / "snapshots.json", snapshots)
    save_trained(model, args.out / "trained.safetensors", cfg)
    write_final(args.out, cfg, model, tokenizer, heldout, started)
    return 0


def finish(args, cfg, model, tokenizer, heldout) -> int:
    """Load the last checkpoint of an interrupted run; record where it stopped."""
    from safetensors.torch import load_file

    config = json.loads((args.out / "config.json").read_text())
    cfg = dataclasses.replace(cfg, **{k: v for k, v in config.items()
                                      if k in {f.name for f in dataclasses.fields(cfg)} and k != "snapshot_fractions"})
    model = pretrain.build_model(cfg, local_path(get_spec("minilm-l6")))
    state = {k: v.float() for k, v in load_file(str(args.out / "trained.safetensors")).items()}
    missing = set(pretrain.trained_state(model)) - set(state)
    if missing:
        raise SystemExit(f"checkpoint lacks {sorted(missing)[:5]}")
    model.load_state_dict(state, strict=False)
    records = [json.loads(line) for line in (args.out / "log.jsonl").read_text().splitlines() if line.strip()]
    step = max(r["step"] for r in records if r.get("eval"))  # checkpoints are written at evaluations
    snapshots = json.loads((args.out / "snapshots.json").read_text())
    snapshots = [s for s in snapshots if s["step"] <= step]
    if snapshots[-1]["step"] != step:
        snapshots.append({"step": step, "fraction": step / cfg.steps,
                          "probes": pretrain.probe_predictions(model, tokenizer, PROBES)})
    pretrain.save_json(args.out / "snapshots.json", snapshots)
    last = [r for r in records if r["step"] <= step]
    (args.out / "log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in last))
    config["stopped_at_step"] = step
    pretrain.save_json(args.out / "config.json", config)
    write_final(args.out, cfg, model, tokenizer, heldout, time.time() - last[-1]["elapsed_s"])
    return 0


def write_final(out: Path, cfg, model, tokenizer, heldout, started: float) -> None:
    full = pretrain.evaluate_masked(model, tokenizer, heldout, max_len=cfg.max_len)
    cloze = pretrain.evaluate_cloze(model, tokenizer, json.loads((REPO / "data" / "everyday_cloze.json").read_text())["items"])
    final = {"heldout": dataclasses.asdict(full), "everyday_top5": cloze["hit_rate"],
             "everyday": cloze["items"], "minutes": (time.time() - started) / 60}
    pretrain.save_json(out / "final.json", final)
    print(f"held-out top1 {full.top1:.3f} top5 {full.top5:.3f} loss {full.loss:.3f} "
          f"({full.n_tokens} tokens); everyday top5 {cloze['hit_rate']:.3f}", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
