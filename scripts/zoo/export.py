"""A trained family's shipped folder: weights in float16, tokenizer, record; and the cards."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import numpy as np

from models.zoo.scores import PIECE_COUNTS


def write_cards_in(folder: Path) -> None:
    """The model cards of the zoo in ``folder`` (the card module reads the zoo's location)."""
    from models.registry import zoo_entries as zoo_module
    from models.zoo.cards import write_cards

    before = zoo_module.ZOO_DIR
    zoo_module.ZOO_DIR = folder
    try:
        write_cards(log=lambda line: None)
    finally:
        zoo_module.ZOO_DIR = before


def save_tokenizer(tokenizer, folder: Path) -> None:
    """The tokenizer as trained, without the truncation / padding state the last scoring call
    left in its backend (tokenizer.json would otherwise cut every text at 128 tokens)."""
    tokenizer.save_pretrained(str(folder))
    clear_backend_state(folder / "tokenizer.json")


def clear_backend_state(path: Path) -> None:
    if path.is_file():
        spec = json.loads(path.read_text(encoding="utf-8"))
        if spec.get("truncation") is not None or spec.get("padding") is not None:
            spec["truncation"], spec["padding"] = None, None
            path.write_text(json.dumps(spec, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


def export(family: str, objective, tokenizer, record: dict, out: Path, counts=None) -> None:
    """``out/<family>``: the model (ELECTRA's generator in ``generator/``) in float16, its
    tokenizer and ``record.json``; ``counts`` (a decoder's): how often each piece occurs in its
    training chunks, as ``piece_counts.npy`` (its word-frequency baseline without the corpus)."""
    folder = out / family
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    model = copy.deepcopy(objective.model).half()
    model.save_pretrained(str(folder))
    save_tokenizer(tokenizer, folder)
    if objective.generator is not None:
        gen = copy.deepcopy(objective.generator).half()
        gen.save_pretrained(str(folder / "generator"))
        save_tokenizer(tokenizer, folder / "generator")
    (folder / "record.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    if counts is not None:
        np.save(folder / PIECE_COUNTS, np.asarray(counts, dtype=np.int64))
