"""Recount the shipped zoo's training FLOPs: one real training step per family, counted whole.

    python -m scripts.zoo flops            # rewrite flops_per_token and flops in weights/zoo/*/record.json
    python -m scripts.zoo flops --dry-run  # print the table only

For each family it loads the shipped model (and DistilBERT's teacher, ELECTRA's generator),
makes the first batch of the shipped run exactly as the trainer did (same corpus, seed,
batch size and masking: ``train_family`` with the record's config, stopped after one step)
and counts that step's forward and backward with one FlopCounterMode
(``models.zoo.train.train_step``). As a check it counts the same step again from a random
initialisation of the same shape (FLOPs depend on tensor shapes only): both must agree.
Only ``flops_per_token`` and ``flops`` (= per token x the record's training tokens) change;
then regenerate the cards and the README table (``python -m scripts.zoo cards``).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import torch

from models.zoo import data as zd
from models.zoo import families as zm
from models.zoo import train as Z

REPO = Path(__file__).resolve().parents[2]


def shipped_models(family: str, folder: Path) -> dict[str, torch.nn.Module]:
    """The shipped model(s) in float32, as ``build_models`` returns them (ELECTRA's tied)."""
    import transformers as T
    from transformers import AutoConfig

    def load(path: Path):
        cls = getattr(T, AutoConfig.from_pretrained(str(path)).architectures[0])
        return cls.from_pretrained(str(path), dtype=torch.float32)

    models = {"model": load(folder)}
    if family == "mini-electra":
        gen = load(folder / "generator")
        gen.electra.embeddings = models["model"].electra.embeddings  # shared, as trained
        gen.generator_lm_head.weight = models["model"].electra.embeddings.word_embeddings.weight
        models["generator"] = gen
    return models


def config_of(record: dict) -> Z.ZooConfig:
    """The run's config; a record without ``fast_kernels`` ran one batch per step on torch's
    stock kernels (recounted so: the split path cuts each part's padding)."""
    cfg = {"fast_kernels": False, **record["config"]}
    # a setting ZooConfig does not have (onednn_linear) is dropped; the shape is passed once, as a Shape
    known = {f.name for f in dataclasses.fields(Z.ZooConfig)} - {"shape"}
    return Z.ZooConfig(**{k: v for k, v in cfg.items() if k in known}, shape=zm.Shape(**cfg["shape"]))


def add_arguments(p) -> None:
    p.add_argument("--corpus", type=Path, default=REPO / ".cache" / "corpus")
    p.add_argument("--zoo", type=Path, default=REPO / "weights" / "zoo")
    p.add_argument("--families", nargs="+", default=list(zm.FAMILIES), choices=zm.FAMILIES)
    p.add_argument("--dry-run", action="store_true", help="print the table, write nothing")


def run(args) -> int:
    from transformers import AutoTokenizer, BertForPreTraining

    corpus = args.corpus / "train_ordered.tsv"
    sentences = len(zd.read_ordered(corpus)[1])  # each record's count is checked before its family tokenizes
    heldout: list[str] = []  # no evaluation happens in one step
    chunks_of, rows = {}, []
    teacher = BertForPreTraining.from_pretrained(str(args.zoo / "mini-bert"), dtype=torch.float32)
    for family in args.families:
        folder = args.zoo / family
        path = folder / "record.json"
        record = json.loads(path.read_text(encoding="utf-8"))
        if record["corpus"]["sentences"] != sentences:
            raise SystemExit(f"{family}: trained on {record['corpus']['sentences']:,} sentences, "
                             f"the corpus here has {sentences:,}: rebuild it (scripts/build_corpus.py).")
        cfg = config_of(record)
        torch.set_num_threads(max(1, cfg.threads or torch.get_num_threads()))
        tokenizer = AutoTokenizer.from_pretrained(str(folder))
        kind = zm.TOKENIZER_OF[family]
        if kind not in chunks_of:
            chunks_of[kind] = zd.corpus_chunks(corpus, tokenizer, cfg.shape.max_len)  # families share a tokenizer
        t = teacher if family == "mini-distilbert" else None
        counts = []
        for models in (shipped_models(family, folder), None):  # shipped weights, then a random init
            done = Z.train_family(family, tokenizer, chunks_of[kind], heldout, cfg,
                                  teacher=t, models=models, max_steps=1, log=lambda line: None)
            counts.append(done["record"]["flops_per_token"])
        if counts[0] != counts[1]:
            raise SystemExit(f"{family}: {counts[0]:.0f} FLOPs/token with the shipped weights, {counts[1]:.0f} "
                             "from a random init of the record's shape: the shapes differ.")
        old = record["flops_per_token"]
        record["flops_per_token"] = counts[0]
        record["flops"] = counts[0] * record["tokens"]
        rows.append((family, old, counts[0], record["flops"]))
        print(f"{family}: {old / 1e6:.2f} -> {counts[0] / 1e6:.2f} MFLOP/token, "
              f"{record['flops'] / 1e12:.1f} TFLOPs", flush=True)
        if not args.dry_run:
            path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print("\n| model | first count, MFLOP/token (backward only) | MFLOP/token (forward + backward) | training TFLOPs |")
    print("|---|---|---|---|")
    for family, old, new, total in rows:
        print(f"| `{family}` | {old / 1e6:.2f} | {new / 1e6:.2f} | {total / 1e12:.1f} |")
    return 0

