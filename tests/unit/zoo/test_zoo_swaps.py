"""models/zoo/swaps.py: ELECTRA's detector on single-swap sentences, read against the
discriminator's own logits; the held-out swaps change one word each."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from models.registry.zoo_entries import zoo_folder
from models.zoo import swaps


@pytest.fixture(scope="module")
def electra():
    from transformers import AutoTokenizer, ElectraForPreTraining

    folder = zoo_folder("mini-electra")
    if not (folder / "model.safetensors").is_file():
        pytest.skip("no mini-electra weights")
    return AutoTokenizer.from_pretrained(folder), ElectraForPreTraining.from_pretrained(folder, dtype=torch.float32).eval()


def _by_hand(tok, disc, text: str, start: int) -> tuple[float, list[float]]:
    """(the swapped word's P(replaced), every other word's): each word's pieces found from the
    tokenizer's own pre-tokenization (its words and their offsets), the probability the
    sigmoid of ElectraForPreTraining's logit, a word's the highest of its pieces'."""
    words = tok.backend_tokenizer.pre_tokenizer.pre_tokenize_str(text)
    enc = tok(text, return_offsets_mapping=True, return_tensors="pt")
    offsets = enc.pop("offset_mapping")[0].tolist()
    with torch.no_grad():
        p = torch.sigmoid(disc(**enc).logits[0]).tolist()
    scores = [max(p[k] for k, (a, b) in enumerate(offsets) if b > a and ws <= a < we) for _, (ws, we) in words]
    hit = next(k for k, (_, (ws, we)) in enumerate(words) if ws <= start < we)
    return scores[hit], scores[:hit] + scores[hit + 1:]


def test_a_swapped_words_rank_is_the_discriminators_own_reading(electra):
    tok, disc = electra
    items = swaps.written_swaps()[:8]
    for item in items:
        start = item["text"].index(item["swapped"])
        swapped, others = _by_hand(tok, disc, item["text"], start)
        got = swaps.swap_rank(tok, disc, item)
        assert got["p_swapped"] == pytest.approx(swapped, abs=1e-5)
        assert sorted(got["others"]) == pytest.approx(sorted(others), abs=1e-5)
        assert got["rank"] == 1 + sum(o >= swapped for o in others)
    summary = swaps.swap_summary(tok, disc, items)
    ranks = [swaps.swap_rank(tok, disc, it)["rank"] for it in items]
    assert summary["first"] == pytest.approx(np.mean([r == 1 for r in ranks]))


def test_the_written_swaps_name_one_word_that_is_in_their_text():
    items = swaps.written_swaps()
    assert 20 <= len(items) <= 40
    for item in items:
        assert item["text"].count(item["swapped"]) == 1
        assert item["original"] not in item["text"].split()
    assert "written for Encoder Lab" in json.loads(swaps.WRITTEN.read_text(encoding="utf-8"))["description"]


def test_a_held_out_swap_changes_exactly_one_word_for_another():
    sentences = ["The old ship sailed slowly into the harbour at dawn.", "Too short here.",
                 "My sister bought a new piano for the house.", "Rain fell on the quiet village all night."]
    out = swaps.swapped_sentences(sentences, seed=3)
    assert len(out) == 3  # the four-word sentence is left out
    for item, original in zip(out, [sentences[0], sentences[2], sentences[3]]):
        before, after = original.split(), item["text"].split()
        changed = [(x, y) for x, y in zip(before, after) if x != y]
        assert len(before) == len(after) and len(changed) == 1
        assert changed[0][1].strip(".").lower() == item["swapped"].lower() != item["original"].lower()
        assert item["text"][item["start"]:].startswith(item["swapped"])


def test_the_detector_trainers_labels_mark_the_swapped_words_pieces_alone(electra):
    from scripts.zoo.detector import swap_batch

    tok, _ = electra
    items = swaps.swapped_sentences(["The old ship sailed slowly into the harbour at dawn.",
                                     "My sister bought a new piano for the house."], seed=5)
    items.append({"text": "Rain fell all night.", "swapped": "", "start": None})  # a sentence left whole
    enc, labels = swap_batch(tok, items)
    for k, item in enumerate(items[:2]):
        before = len(tok(item["text"][: item["start"]], add_special_tokens=False)["input_ids"])
        pieces = len(tok(item["swapped"], add_special_tokens=False)["input_ids"])
        expected = torch.zeros(labels.shape[1])
        expected[1 + before : 1 + before + pieces] = 1  # after [CLS]
        assert torch.equal(labels[k], expected)
    assert labels[2].sum() == 0


def test_wordnet_nouns_are_the_noun_lemmas_that_are_not_adjectives(tmp_path):
    """Read from WordNet's own index files (their licence header lines start with spaces)."""
    (tmp_path / "index.noun").write_text("  1 This software and database...\ncat n 8 ...\nengine n 4 ...\n"
                                         "green n 7 ...\ncar_park n 1 ...\n", encoding="latin-1")
    (tmp_path / "index.adj").write_text("  1 This software...\ngreen a 13 ...\n", encoding="latin-1")
    assert swaps.wordnet_nouns(tmp_path) == {"cat", "engine"}


NOUNS = frozenset({"cat", "milk", "saucer", "engine", "mouse", "berry"})


def test_the_nouns_of_a_sentence_are_the_nouns_after_a_determiner_plurals_too():
    text = "The cat drank that milk from their saucers and ate the berries, cat food."
    assert [m.group() for m in swaps.nouns_in(text, NOUNS)] == ["cat", "saucers", "berries"]


def test_a_noun_swap_puts_a_noun_of_the_pool_where_a_noun_was_and_changes_nothing_else():
    sentences = ["The cat drank the milk from the saucer today.", "A mouse ran under the engine at night.",
                 "Nobody saw it happen here at all."]
    items = swaps.noun_swaps(sentences, NOUNS, seed=3)
    assert len(items) == 2  # the third has no noun after a determiner
    for item, original in zip(items, sentences):
        start, new = item["start"], item["swapped"]
        assert new.lower() in {"cat", "milk", "saucer", "mouse", "engine"} and new.lower() != item["original"].lower()
        assert item["text"] == original[:start] + new + original[start + len(item["original"]):]
        assert original[start:].startswith(item["original"]) and swaps._is_noun(item["original"], NOUNS)
    pooled = swaps.noun_swaps(sentences, NOUNS, seed=3, pool=["giraffe"])
    assert {it["swapped"] for it in pooled} == {"giraffe"}
