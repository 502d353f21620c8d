"""The Masking lab for every family of the mini zoo, from plain text as the tab sends it.

References: transformers' ``DataCollatorForLanguageModeling`` (same seed, same draws) on the
family's own tokenizer; the MLM loss by ``cross_entropy`` of a second copy of the model
(``helpers.zoo_reference``); for whole words, the text's own whitespace-separated words.
"""

from __future__ import annotations

import re

import gradio as gr
import numpy as np
import pytest
import torch

from components.masking import objectives
from components.masking import tab
from helpers import zoo_encode, zoo_reference
from models import ZOO_KEYS, get_spec, pair_loss, sentence_order, simulate_masking
from models.registry.zoo_entries import zoo_folder

TEXT = "The capital of France is unbelievably quiet today, and the old mill turns slowly."
RATE, SEED, EPOCHS = 0.3, 4, 2
ARGS = (RATE, 0.8, 0.1, 0.1, False, EPOCHS, "dynamic", SEED)


def _collated(key: str):
    """The collator's corrupted inputs and labels for each epoch (dynamic: a fresh draw each)."""
    from transformers import DataCollatorForLanguageModeling

    tok = zoo_reference(key)[0]
    collator = DataCollatorForLanguageModeling(tok, mlm_probability=RATE, seed=SEED, return_tensors="pt")
    enc = tok(TEXT, return_special_tokens_mask=True)
    features = [{"input_ids": enc["input_ids"], "special_tokens_mask": enc["special_tokens_mask"]}]
    return enc["input_ids"], [collator(features) for _ in range(EPOCHS)]


@pytest.mark.parametrize("key", ZOO_KEYS)
def test_corruption_is_the_collators_and_the_loss_its_cross_entropy(key):
    ids, epochs = _collated(key)
    strips, summary = tab.run_simulation(TEXT, key, *ARGS)
    sim = tab._simulate(TEXT, key, *ARGS)  # what the strips drew (the same cached call)
    tok, model = zoo_reference(key, "mlm")
    assert list(sim.tokens) == tok.convert_ids_to_tokens(ids)
    for epoch, expected in zip(sim.epochs, epochs):
        assert list(epoch.shown_ids) == expected["input_ids"][0].tolist()
        assert [s.position for s in epoch.selected] == torch.nonzero(expected["labels"][0] != -100).flatten().tolist()
    assert f"selected per epoch: {', '.join(str(len(e.selected)) for e in sim.epochs)}" in summary
    for number, expected in enumerate(epochs, start=1):
        frame, explain = tab.run_loss(TEXT, key, *ARGS, number)
        with torch.no_grad():
            logits = model(input_ids=expected["input_ids"]).logits[0]
        labels = expected["labels"][0]
        picked = labels != -100
        nll = torch.nn.functional.cross_entropy(logits[picked], labels[picked], reduction="none")
        np.testing.assert_allclose(frame["-log p (nats)"], nll.numpy(), atol=1e-4)
        shown = re.search(r"Loss = ([\d.]+) nats", explain)  # four decimals, as the table's tolerance
        assert shown and abs(float(shown.group(1)) - float(nll.mean())) <= 1e-4 + 5e-5, explain


def _words(text: str, offsets, special) -> list[int]:
    """Per token, which whitespace-separated word of the text holds its last character; -1
    for special tokens."""
    starts = [m.start() for m in re.finditer(r"\S+", text)]
    return [-1 if s else int(np.searchsorted(starts, end - 1, side="right")) - 1
            for (_, end), s in zip(offsets, special)]


@pytest.mark.parametrize("key", ZOO_KEYS)
def test_whole_word_masking_selects_the_texts_words(key):
    """Whole words: the pieces of one word of the text are selected together, and never two
    words as one: for WordPiece, byte-level BPE and Unigram alike (the latter two count the
    space before a word in its first piece's offsets)."""
    tok = zoo_reference(key)[0]
    enc = tok(TEXT, return_offsets_mapping=True, return_special_tokens_mask=True)
    words = _words(TEXT, enc["offset_mapping"], enc["special_tokens_mask"])
    selected_any = False
    for seed in range(4):
        sim = simulate_masking(key, TEXT, rate=0.3, whole_word=True, epochs=1, seed=seed)
        assert list(sim.ids) == enc["input_ids"]
        # one word id per word of the text, the same partition of the tokens
        pairs = {(w, s) for w, s in zip(words, sim.word_ids) if w >= 0}
        assert len(pairs) == len({w for w, _ in pairs}) == len({s for _, s in pairs}), (seed, sim.word_ids)
        chosen = {s.position for s in sim.epochs[0].selected}
        for word in set(words) - {-1}:
            members = {i for i, w in enumerate(words) if w == word}
            assert members <= chosen or not members & chosen, (word, sim.tokens)
        selected_any |= 0 < len(chosen) < len(words) - 2
    assert selected_any


@pytest.mark.parametrize("key", ZOO_KEYS)
def test_pair_and_replaced_token_sections_say_which_families_have_the_head(key):
    """The NSP/SOP and RTD sections list only the families with the head; asked for another
    (through the API), they say so."""
    spec = get_spec(key)
    a, b = "The storm broke at night.", "By morning the river had risen."
    if spec.can("pair"):  # its pre-training head, loaded again, on [CLS] A [SEP] B [SEP], segments 0 / 1
        from transformers import AutoModelForPreTraining

        head = AutoModelForPreTraining.from_pretrained(zoo_folder(key), dtype=torch.float32).eval()
        with torch.no_grad():
            out = head(**zoo_encode(key, a, b))
        p = float((out.sop_logits if spec.pair_head == "sop" else out.seq_relationship_logits)[0].softmax(-1)[0])
        answer = pair_loss(key, a, b).p_is_next  # its own head: SOP or NSP
        assert answer == pytest.approx((sentence_order(key, a, b) if spec.pair_head == "sop" else answer), abs=1e-6)
        assert answer == pytest.approx(p, abs=1e-5)
        assert f" = {p:.3f}**" in objectives.pair_answer(key, a, b)
    else:
        with pytest.raises(gr.Error, match="(next-sentence|sentence-order)"):
            objectives.pair_answer(key, a, b)
    if spec.can("rtd"):
        assert objectives.replaced_view(key, a, 0, 0)[1]
    else:
        with pytest.raises(gr.Error, match="replaced-token"):
            objectives.replaced_view(key, a, 0, 0)
