"""Stand-ins for the Hub's models: random weights in the real shapes, in a Hugging Face cache.

    python -m scripts.standins [--out DIR] [--keys bert-base,bert-large] [--small] [--corpus FILE]
    HF_HUB_CACHE=DIR HF_HUB_OFFLINE=1 python app.py --default-model bert-base

For every Hub model of the catalogue with a config in ``data/configs/`` (``index.json``), a
seeded random-init model of exactly that config (the heads the app loads: BERT's MLM and NSP,
the others' MLM head, DeBERTa-v3's bare encoder), laid out as the Hugging Face cache lays out a
download (``models--org--name/snapshots/<revision>/``, ``refs/main``), so the app finds it
cached and loads it offline through its normal Hub path. The tokenizer: the real one where it
is installed here (bert-base-uncased's WordPiece vocabulary ships with all-MiniLM-L6-v2: BERT,
DistilBERT and the ELECTRA generator use it), else the mini zoo's tokenizer of the family's kind
trained on ``--corpus`` up to the real vocabulary size (the embedding table keeps the real size
either way). A marker file (``models.registry.standins.MARKER``) in each snapshot makes every
view say "stand-in: random weights"; the app never opens on a stand-in unless the operator
names it (``--default-model``).

The folder defaults to ``.cache/standins-hub`` in this checkout, never the user's own Hugging
Face cache, where a stand-in would pass for the real model. ``--small``: 2 layers, 64 wide, the
real vocabulary and tokenizer (for the tests). Timings and memory depend on the shapes only,
so the benches run on these; what the real weights predict, they cannot show.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import tempfile
from pathlib import Path

from models.registry import catalogue
from models.registry.standins import MARKER

REPO = catalogue.REPO_ROOT
CONFIGS = REPO / "data" / "configs"
DEFAULT_OUT = REPO / ".cache" / "standins-hub"
# the family's tokenizer class where the installed WordPiece vocabulary is the real one
REAL_WORDPIECE = {"bert": "BertTokenizer", "distilbert": "DistilBertTokenizer", "electra": "ElectraTokenizer"}
ZOO_KIND = {"roberta": "bytelevel-bpe", "albert": "unigram-albert", "deberta-v2": "unigram-deberta",
            "modernbert": "modernbert-bpe"}
SMALL = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 2, "intermediate_size": 128,
         "embedding_size": 64, "n_layers": 2, "dim": 64, "n_heads": 2, "hidden_dim": 128,
         "global_attn_every_n_layers": 1}


def hub_keys() -> dict[str, dict]:
    """Registry key -> its index.json entry, for the catalogue's Hub models with a config here."""
    online = json.loads((CONFIGS / "index.json").read_text())["online"]
    return {s.key: online[s.key] for s in catalogue.SPECS if s.source_kind == "hub" and s.key in online}


def build_config(entry: dict, small: bool):
    from transformers import AutoConfig

    raw = json.loads((CONFIGS / entry["config"]).read_text())
    if small:
        raw.update({k: v for k, v in SMALL.items() if k in raw})
    return AutoConfig.for_model(**raw)


def head_class(spec):
    """The transformers class whose weights the app's loader finds every head it asks for in."""
    from transformers import AutoModel, AutoModelForMaskedLM, AutoModelForPreTraining

    if spec.pair_head == "nsp":
        return AutoModelForPreTraining  # BertForPreTraining: the MLM and NSP heads
    return AutoModelForMaskedLM if spec.has_mlm_head else AutoModel


def write_tokenizer(spec, config, folder: Path, corpus: Path) -> str:
    """The tokenizer's files in ``folder``; returns what it is, in words."""
    if spec.family in REAL_WORDPIECE:
        real = catalogue.local_path(catalogue.get_spec("minilm-l6"))
        if real is not None and (real / "vocab.txt").is_file():
            for name in ("vocab.txt", "tokenizer.json", "special_tokens_map.json"):
                shutil.copy2(real / name, folder / name)
            settings = json.loads((real / "tokenizer_config.json").read_text())
            settings.update(tokenizer_class=REAL_WORDPIECE[spec.family], name_or_path=spec.source)
            if spec.family == "distilbert":
                settings["model_input_names"] = ["input_ids", "attention_mask"]
            (folder / "tokenizer_config.json").write_text(json.dumps(settings, indent=2))
            return "the real bert-base-uncased WordPiece vocabulary (installed with all-MiniLM-L6-v2)"
    from models.zoo.tokenizers import train_tokenizer

    kind = ZOO_KIND.get(spec.family, "wordpiece")
    with tempfile.TemporaryDirectory() as tmp:
        tok = train_tokenizer(kind, [str(corpus)], Path(tmp), vocab_size=config.vocab_size)
        tok.model_max_length = min(512, int(getattr(config, "max_position_embeddings", 512)))
        if spec.family == "modernbert":
            tok.model_max_length = int(config.max_position_embeddings)
        tok.save_pretrained(str(folder))
        learnt = len(tok)
    pad_vocabulary(folder / "tokenizer.json", config.vocab_size)
    return (f"the mini zoo's {kind} tokenizer trained on {corpus.name} ({learnt:,} entries learnt), "
            f"padded with unused entries to the real {config.vocab_size:,}")


def pad_vocabulary(path: Path, size: int) -> None:
    """Unused entries ("[unused12345]") up to ``size``, so every id the model's real-size output
    layer can rank decodes to a token (a corpus this small learns fewer)."""
    spec = json.loads(path.read_text(encoding="utf-8"))
    vocab = spec["model"]["vocab"]
    if isinstance(vocab, dict):  # BPE, WordPiece: token -> id
        taken = set(vocab.values()) | {t["id"] for t in spec.get("added_tokens", ())}
        for i in (i for i in range(size) if i not in taken):
            vocab[f"[unused{i}]"] = i
    else:  # Unigram: [piece, log-probability], the id is the position
        vocab.extend([f"[unused{i}]", -99.0] for i in range(len(vocab), size))
    path.write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")


def write_standin(key: str, entry: dict, out: Path, small: bool, corpus: Path, seed: int = 0) -> Path:
    """One stand-in in the cache at ``out``; returns its snapshot folder."""
    import torch

    spec = catalogue.get_spec(key)
    repo = out / ("models--" + spec.source.replace("/", "--"))
    revision = hashlib.sha1(f"encoder-lab-stand-in {spec.source} small={small}".encode()).hexdigest()
    snapshot = repo / "snapshots" / revision
    if repo.exists():
        shutil.rmtree(repo)
    snapshot.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(revision)
    config = build_config(entry, small)
    torch.manual_seed(seed)
    model = head_class(spec).from_config(config)
    target = snapshot / spec.mlm_subfolder if spec.mlm_subfolder else snapshot
    model.save_pretrained(str(target))
    tokenizer = write_tokenizer(spec, config, snapshot, corpus)
    params = sum(p.numel() for p in model.parameters())
    (snapshot / MARKER).write_text(json.dumps({
        "stand_in": True, "weights": f"random (seed {seed}), {model.__class__.__name__}",
        "shape": "small (2 layers, 64 wide)" if small else f"the real {entry['checkpoint']} config "
                 f"(data/configs/{entry['config']})", "parameters": params, "tokenizer": tokenizer,
        "written_by": "python -m scripts.standins"}, indent=2) + "\n")
    return snapshot


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Random-weight stand-ins of the Hub models, in a Hub cache.")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"the cache folder (default {DEFAULT_OUT})")
    parser.add_argument("--keys", default="", help="comma-separated registry keys (default: every Hub model)")
    parser.add_argument("--small", action="store_true", help="2 layers, 64 wide (tests); the real vocabulary")
    parser.add_argument("--corpus", type=Path, default=REPO / "data" / "train_sample.txt",
                        help="text a tokenizer is trained on where the real one is not installed")
    args = parser.parse_args(argv)
    entries = hub_keys()
    keys = [k.strip() for k in args.keys.split(",") if k.strip()] or list(entries)
    unknown = [k for k in keys if k not in entries]
    if unknown:
        raise SystemExit(f"error: no Hub config for {', '.join(unknown)}; choose from {', '.join(entries)}")
    for key in keys:
        snapshot = write_standin(key, entries[key], args.out, args.small, args.corpus)
        print(f"{key}: {snapshot.relative_to(args.out)}")
    print(f"HF_HUB_CACHE={args.out} HF_HUB_OFFLINE=1 python app.py --default-model {keys[0]}")


if __name__ == "__main__":
    main()
