"""The mini zoo's text path: a word masked in typed text reaches each model exactly as a
masked word did in training (issue 24: mini-modernbert read "the [MASK]" as Ġthe, Ġ, [MASK])."""

from __future__ import annotations

import logging
import re

import numpy as np
import pytest

from models.mlm.fill_mask import encode_masks, mask_spans
from models.registry.catalogue import get_spec
from models.registry.zoo_entries import ZOO_KEYS
from models.runtime.loading import load_model
from models.zoo import data as zd

SENTENCES = [
    "The old man sat by the fire and told the children a story.",
    "She opened the door and walked into the garden.",
    "It was a cold morning, and the river was full of ice.",
    "They said that the king would come to the city in the spring.",
]


def training_ids(tokenizer, sentence: str, start: int, end: int):
    """The sentence through the training data path (tokenised without specials, one chunk,
    ``Examples.packed``), the word at [start, end) masked; None when it is not one piece."""
    enc = tokenizer(sentence, add_special_tokens=False, return_offsets_mapping=True)
    chunks = zd.make_chunks(["s"], [enc["input_ids"]], 125)
    ids, _ = zd.Examples(tokenizer, chunks, 128, seed=0).packed(0)
    hits = [k for k, (s, e) in enumerate(enc["offset_mapping"]) if s < end and e > start]
    if len(hits) != 1 or enc["offset_mapping"][hits[0]][1] != end:
        return None  # several pieces, or one that also holds the next comma (Unigram's "▁morning,")
    ids = ids.copy()
    ids[hits[0] + 1] = tokenizer.mask_token_id  # +1: [CLS] / <s> first
    return ids


@pytest.mark.parametrize("key", ZOO_KEYS)
def test_a_typed_mask_reads_as_a_masked_word_did_in_training(key):
    loaded = load_model(get_spec(key), head="mlm")
    checked = 0
    for sentence in SENTENCES:
        for m in re.finditer(r"[A-Za-z]+", sentence):
            expected = training_ids(loaded.tokenizer, sentence, *m.span())
            if expected is None:
                continue
            typed = sentence[: m.start()] + "[MASK]" + sentence[m.end() :]
            got = encode_masks(loaded, typed, mask_spans(typed)).inputs["input_ids"][0].numpy()
            assert np.array_equal(got, expected), (key, typed, loaded.tokenizer.convert_ids_to_tokens(got),
                                                   loaded.tokenizer.convert_ids_to_tokens(expected))
            checked += 1
    assert checked >= 20  # most words of these sentences are one piece in every vocabulary


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


@pytest.mark.parametrize("key,head", [("mini-bert", "mlm"), ("mini-albert", "mlm"), ("mini-electra", "base")])
def test_loading_a_pretraining_checkpoint_prints_no_load_report(key, head):
    """BERT's pooler / NSP head, ALBERT's SOP head, ELECTRA's discriminator head are in the
    checkpoint but not in the class the app loads: no "LOAD REPORT" about them in the log
    (transformers logs one for the same load without the app's loader)."""
    from transformers import AutoModel, AutoModelForMaskedLM

    from models.registry.catalogue import get_spec
    from models.runtime.loading import _load, get_device, unexpected_keys_to_report

    spec = get_spec(key)
    collect = _Collect()
    library = logging.getLogger("transformers")  # every transformers logger propagates here
    library.addHandler(collect)
    try:
        (AutoModelForMaskedLM if head == "mlm" else AutoModel).from_pretrained(spec.source)
        assert any("LOAD REPORT" in line for line in collect.lines)  # the control: transformers' report
        collect.lines.clear()
        loaded = _load(spec, head, None, get_device())
    finally:
        library.removeHandler(collect)
    assert loaded.model is not None
    # nothing at all: neither the report nor, as a level on modeling_utils once set off,
    # transformers' "The following layers were not sharded" (its tensor-parallel check)
    assert collect.lines == []
    assert unexpected_keys_to_report({"unexpected_keys": {"bert.pooler.dense.weight", "cls.seq_relationship.bias",
                                                          "encoder.layer.9.weird"}}) == ["encoder.layer.9.weird"]


@pytest.mark.parametrize("key", [k for k in ZOO_KEYS if k in ("mini-bert", "mini-albert", "mini-electra")])
def test_a_typed_pair_reads_as_a_pair_did_in_training(key):
    # the families trained with segment embeddings (NSP / SOP, type_vocab_size 2): the shipped
    # tokenizer, loaded as anyone loads it, writes the ids and segments of training's pairs
    # (mini-albert's generic tokenizer class once listed no segment ids: B read as segment 0)
    from transformers import AutoTokenizer

    folder = load_model(get_spec(key)).spec.source
    tok = AutoTokenizer.from_pretrained(folder)
    a, b = SENTENCES[0], SENTENCES[1]
    enc = tok(a, b)
    assert "token_type_ids" in enc
    pieces = [np.asarray(tok(s, add_special_tokens=False)["input_ids"]) for s in (a, b)]
    chunk = zd.make_chunks(["s", "s"], pieces, 125)  # one source: one chunk of two sentences
    assert len(chunk) == 1 and len(chunk[0]) == 2
    ids, types, label = zd.Examples(tok, chunk, 128, seed=0).pair(0, _UnswappedDraws(), "sop")
    assert label == 0
    assert enc["input_ids"] == ids.tolist()
    assert enc["token_type_ids"] == types.tolist() and set(types[-len(pieces[1]) - 1:]) == {1}


class _UnswappedDraws:
    """rng for Examples.pair: the cut after the first sentence, and no swap / no random B."""

    def integers(self, low, high=None):
        return 1

    def random(self):
        return 0.9
