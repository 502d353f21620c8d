"""Pre-train the offline fill-mask model (or a small from-scratch BERT) on the corpus.

    python -m scripts.build_corpus                        # once: .cache/corpus/
    python -m scripts.pretrain --out .cache/runs/minilm   # MiniLM encoder + new MLM head
    python -m scripts.pretrain --init scratch --out .cache/runs/scratch

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
import time
from pathlib import Path


import torch
from safetensors.torch import save_file

from models.pretraining import evaluation
from models.pretraining import trainer as pretrain
from models.pretraining.mlm_data import read_sentences
from models.registry.catalogue import get_spec, local_path

REPO = Path(__file__).resolve().parent.parent
PROBES = [
    "The cat sat on the [MASK].",
    "She opened the [MASK] and walked in.",
    "The capital of France is [MASK].",
    "I drink a cup of [MASK] every morning.",
    "He was very [MASK] to see her again.",
    "It is a truth universally acknowledged that a single [MASK] in possession of a good fortune must be in want of a wife.",
    # facts (from data/facts_cloze.json): what the facts stages add
    "Hamlet was written by William [MASK].",
    "The largest planet in the solar system is [MASK].",
    "The heart pumps [MASK] around the body.",
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
    parser.add_argument("--resume", type=Path,
                        help="a finished run folder: start from its trained tensors and continue its "
                             "record (the log and snapshots go on from its last step)")
    parser.add_argument("--finish", action="store_true",
                        help="stop an interrupted run at its last checkpoint: evaluate it and "
                             "write final.json and a last snapshot (the learning rate had not decayed)")
    parser.add_argument("--snapshots", default="0,0.01,0.1,0.25,0.5,1",
                        help="shares of the run at which probe predictions are kept, comma-separated")
    for f in dataclasses.fields(pretrain.PretrainConfig):
        if f.name == "snapshot_fractions":
            continue
        parser.add_argument("--" + f.name.replace("_", "-"), type=type(f.default), default=f.default)
    args = parser.parse_args(argv)
    cfg = pretrain.PretrainConfig(**{
        f.name: getattr(args, f.name) for f in dataclasses.fields(pretrain.PretrainConfig)
        if f.name != "snapshot_fractions"
    }, snapshot_fractions=tuple(float(x) for x in args.snapshots.split(",")))
    from transformers import AutoTokenizer

    minilm = local_path(get_spec("minilm-l6"))
    tokenizer = AutoTokenizer.from_pretrained(str(minilm))
    train = read_sentences(args.corpus / "train.txt")
    heldout = read_sentences(args.corpus / "heldout.txt")
    model = pretrain.build_model(cfg, minilm)
    if args.finish:
        return finish(args, cfg, model, tokenizer, heldout)
    before = Previous.read(args.resume, model) if args.resume else Previous()
    n_trained = sum(p.numel() for p in model.parameters() if p.requires_grad)
    args.out.mkdir(parents=True, exist_ok=True)
    pretrain.save_json(args.out / "config.json", {
        **dataclasses.asdict(cfg), "device": args.device, "trained_parameters": n_trained,
        "train_sentences": len(train), "heldout_sentences": len(heldout),
        "torch": torch.__version__, "threads": torch.get_num_threads(),
        **({"continued_from": before.summary()} if args.resume else {}),
    })
    print(f"training {n_trained:,} parameters on {len(train):,} sentences, device {args.device}", flush=True)

    snapshots = list(before.snapshots)
    started = time.time()
    device = torch.device(args.device)
    with open(args.out / "log.jsonl", "w", encoding="utf-8") as log:
        for record in before.records:
            log.write(json.dumps(record) + "\n")
        for event in pretrain.train_mlm(cfg, model, tokenizer, train, heldout, PROBES, device=device):
            if before.records and event.step == 0:
                continue  # the previous run's last record already stands for this point
            record = before.shift(pretrain.event_record(event))
            log.write(json.dumps(record) + "\n")
            log.flush()
            line = f"step {record['step']}/{record['steps']} loss {event.loss:.3f} {event.tokens_per_s:.0f} tok/s"
            if event.eval:
                line += f" | held-out top1 {event.eval.top1:.3f} top5 {event.eval.top5:.3f} loss {event.eval.loss:.3f}"
                save_trained(model, args.out / "trained.safetensors", cfg)
            print(line, flush=True)
            if event.probes:
                snapshots.append({"step": record["step"], "stage": before.stage, "probes": event.probes})
            if event.probes or event.done:
                total = record["steps"]
                pretrain.save_json(args.out / "snapshots.json",
                                   [{**s, "fraction": s["step"] / total} for s in snapshots])
    save_trained(model, args.out / "trained.safetensors", cfg)
    write_final(args.out, cfg, model, tokenizer, heldout, started)
    return 0


@dataclasses.dataclass
class Previous:
    """The run a resumed run continues: its record, and the offsets for the new one's."""

    config: dict = dataclasses.field(default_factory=dict)
    records: list = dataclasses.field(default_factory=list)
    snapshots: list = dataclasses.field(default_factory=list)
    final: dict = dataclasses.field(default_factory=dict)

    @classmethod
    def read(cls, run: Path, model) -> "Previous":
        """Load ``run``'s trained tensors into ``model`` and read its record."""
        from safetensors.torch import load_file

        state = {k: v.float() for k, v in load_file(str(run / "trained.safetensors")).items()}
        unknown = set(state) - set(model.state_dict())
        if unknown:
            raise SystemExit(f"{run} holds tensors this model lacks: {sorted(unknown)[:5]}")
        model.load_state_dict(state, strict=False)
        records = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines() if line.strip()]
        stage = max(r.get("stage", 1) for r in records)
        records = [{**r, "stage": r.get("stage", 1)} for r in records]
        snapshots = [{k: v for k, v in s.items() if k != "fraction"} | {"stage": s.get("stage", 1)}
                     for s in json.loads((run / "snapshots.json").read_text())]
        prev = cls(json.loads((run / "config.json").read_text()), records, snapshots,
                   json.loads((run / "final.json").read_text()))
        prev.stage = stage + 1
        return prev

    stage: int = 1

    @property
    def last(self) -> dict:
        return self.records[-1] if self.records else {"step": 0, "elapsed_s": 0.0}

    @property
    def tokens(self) -> int:
        return pretrain.tokens_of(self.last)

    def shift(self, record: dict) -> dict:
        """A new run's record, placed after this run's (steps, time and tokens add up)."""
        extra = dict(record.get("extra") or {})
        if "tokens" in extra:
            extra["tokens"] += self.tokens
        return {**record, "step": record["step"] + self.last["step"], "steps": record["steps"] + self.last["step"],
                "elapsed_s": record["elapsed_s"] + self.last["elapsed_s"], "stage": self.stage, "extra": extra}

    def summary(self) -> dict:
        """What the new run's config.json says of the run it continues."""
        return {"config": self.config, "steps": self.last["step"], "tokens": self.tokens,
                "minutes": self.final.get("minutes"), "heldout": self.final.get("heldout"),
                "everyday_top5": self.final.get("everyday_top5")}


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
                          "probes": evaluation.probe_predictions(model, tokenizer, PROBES)})
    pretrain.save_json(args.out / "snapshots.json", snapshots)
    last = [r for r in records if r["step"] <= step]
    (args.out / "log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in last))
    config["stopped_at_step"] = step
    pretrain.save_json(args.out / "config.json", config)
    write_final(args.out, cfg, model, tokenizer, heldout, time.time() - last[-1]["elapsed_s"])
    return 0


def write_final(out: Path, cfg, model, tokenizer, heldout, started: float) -> None:
    full = evaluation.evaluate_masked(model, tokenizer, heldout, max_len=cfg.max_len)
    cloze = evaluation.evaluate_cloze(model, tokenizer, json.loads((REPO / "data" / "everyday_cloze.json").read_text())["items"])
    final = {"heldout": dataclasses.asdict(full), "everyday_top5": cloze["hit_rate"],
             "everyday": cloze["items"], "minutes": (time.time() - started) / 60}
    pretrain.save_json(out / "final.json", final)
    print(f"held-out top1 {full.top1:.3f} top5 {full.top5:.3f} loss {full.loss:.3f} "
          f"({full.n_tokens} tokens); everyday top5 {cloze['hit_rate']:.3f}", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
