"""The Compare tab's architecture table and speed benchmark for every family of the mini zoo,
through the tab's handlers (the side-by-side views are in tests/unit/mlm/test_fill_mask_every_family.py).

References: the model loaded again by transformers' Auto classes (``helpers.zoo_reference``):
its parameters counted here and its config; the shape each family was trained in, from the
record the training script wrote next to the weights.
"""

from __future__ import annotations

import json

import pytest

from components.compare import tab
from helpers import zoo_reference
from models import ZOO_KEYS
from models.registry.zoo_entries import zoo_folder


def _shape(key: str) -> dict:
    return json.loads((zoo_folder(key) / "record.json").read_text(encoding="utf-8"))["config"]["shape"]


def _count(text) -> int:
    return int(str(text).replace(",", ""))


@pytest.fixture(scope="module")
def table():
    frame = tab.show_architecture()
    return {row["model"]: row for row in frame.to_dict("records")}


@pytest.mark.parametrize("key", ZOO_KEYS)
def test_architecture_row_is_the_models_own_count_and_shape(table, key):
    model = zoo_reference(key)[1]
    config, shape, row = model.config, _shape(key), table[key]
    assert _count(row["params (encoder)"]) == sum(p.numel() for p in model.parameters())
    layers = getattr(config, "num_hidden_layers", None) or config.n_layers  # DistilBERT: n_layers
    assert row["layers"] == layers
    assert row["hidden"] == shape["hidden"] and row["vocab"] == shape["vocab"]
    assert row["max context"] == shape["max_len"]  # what the family was trained to read


@pytest.mark.parametrize("key", ZOO_KEYS)
def test_architecture_row_parts_are_transformers_num_parameters_and_config(table, key):
    """The row's other figures: transformers' own ``num_parameters()`` of the bare encoder, of
    its ``embeddings`` module's parameters, and AutoModelForMaskedLM built from the same config
    less its body (the MLM head; a tied decoder counted once, in the embedding), and the config's heads, feed-forward
    and embedding widths (DistilBERT's own key names)."""
    from transformers import AutoModelForMaskedLM

    model = zoo_reference(key)[1]
    config, row = model.config, table[key]
    mlm = AutoModelForMaskedLM.from_config(config)
    assert _count(row["params (encoder)"]) == model.num_parameters()
    assert _count(row["embedding"]) == sum(p.numel() for p in model.embeddings.parameters())
    assert _count(row["MLM head"]) == mlm.num_parameters() - mlm.base_model.num_parameters()
    assert row["heads"] == (getattr(config, "num_attention_heads", None) or config.n_heads)
    assert row["FFN"] == (getattr(config, "intermediate_size", None) or config.hidden_dim)
    assert row["embedding width"] == (getattr(config, "embedding_size", None) or getattr(config, "hidden_size", None)
                                      or config.dim)


def test_benchmark_times_every_family_with_its_own_weights_and_context():
    _, frame, notes = tab.run_benchmark(list(ZOO_KEYS), ["16", "256"], 1)
    assert list(frame["model"]) == list(ZOO_KEYS)  # one row each: 256 is past every context
    assert set(frame["length"]) == {16} and (frame["median ms"] > 0).all()
    assert set(frame["weights"]) == {"pretrained weights"}  # the trained miniatures, not random-init
    for key in ZOO_KEYS:
        assert f"beyond {key}'s max context of {_shape(key)['max_len']} tokens" in notes


WORDS_TEXT = "The cats sat, unbelievably still. Isn't it 2024's puzzle?"


@pytest.mark.parametrize("key", ZOO_KEYS)
def test_continue_a_word_is_one_rule_for_every_tokenizer(key):
    # the pieces the tokenizer itself marks as continuing a word (## in WordPiece; no Ġ / ▁ in
    # byte-level BPE and Unigram) are the ones counted, among pieces that start with a letter or
    # digit; a punctuation piece never continues a word, whichever way the tokenizer marks it
    from transformers import AutoTokenizer

    from models import compare_tokens

    (m,) = compare_tokens([key], WORDS_TEXT).models
    tok = AutoTokenizer.from_pretrained(str(zoo_folder(key)))
    assert m.pieces == tuple(tok.tokenize(WORDS_TEXT))  # the tokenizer's own pieces, in order
    wordpiece = m.tokenizer_kind.startswith("WordPiece")
    for k, (piece, continues) in enumerate(zip(m.pieces, m.continues)):
        bare = piece.removeprefix("##").lstrip("Ġ▁")
        if not bare[:1].isalnum():
            assert not continues, piece
        elif k:  # a piece that starts with a letter or digit: as its own marker says
            marked = piece.startswith("##") if wordpiece else not piece.startswith(("Ġ", "▁"))
            assert continues == marked, (piece, m.pieces)
    assert m.continuation_count == sum(m.continues) and len(m.continues) == m.piece_count


def test_config_column_shows_no_server_folders(table):
    """The "config" column (and its CSV) names files from the repository or from site-packages,
    never the server's absolute folders; each names the file the facts were read from."""
    from models.registry import catalogue

    for key, row in table.items():
        cell = row["config"]
        assert str(catalogue.REPO_ROOT) not in cell and ": /" not in cell and ".venv" not in cell, cell
        if cell.startswith("embedded model folder: "):
            shown = cell.removeprefix("embedded model folder: ")
            folder = catalogue.local_path(catalogue.get_spec(key))
            assert (folder / "config.json").as_posix().endswith(shown), (key, shown)
    from models.registry.zoo_entries import zoo_folder

    for key in ZOO_KEYS:  # the zoo the registry serves (weights/zoo, or the test zoo beside its decoder)
        shown = (zoo_folder(key) / "config.json").relative_to(catalogue.REPO_ROOT).as_posix()
        assert table[key]["config"] == f"embedded model folder: {shown}"
