"""mini-electra-detector: mini-electra's discriminator trained on past the shared budget, served
as a model of its own to the replaced-token view, read against transformers' own logits; its
swaps are mini-electra's generator's; Compare keeps the shared-budget mini-electra."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from models import ZOO_KEYS, detect_replaced, detection_figures, get_spec, zoo_comparison
from models.registry.zoo_entries import zoo_folder
from scripts.zoo import detector

KEY = "mini-electra-detector"
TEXT = "The cat drank the engine from the saucer."


@pytest.fixture(scope="module")
def folder():
    found = zoo_folder(KEY)
    if not (found / "model.safetensors").is_file():
        pytest.skip("no mini-electra-detector weights")
    return found


def test_the_detector_is_beside_the_zoo_not_in_it():
    spec = get_spec(KEY)
    assert KEY not in ZOO_KEYS and KEY not in {e.key for e in zoo_comparison()}
    assert spec.can("rtd") and not spec.can("mlm") and spec.generator == "mini-electra"
    assert "past the shared budget" in spec.provenance and "Compare shows mini-electra" in spec.provenance


def test_its_p_replaced_from_plain_text_is_electra_for_pretrainings_own(folder):
    from transformers import AutoTokenizer, ElectraForPreTraining

    tok = AutoTokenizer.from_pretrained(folder)
    model = ElectraForPreTraining.from_pretrained(folder, dtype=torch.float32).eval()
    with torch.no_grad():
        logits = model(**tok(TEXT, return_tensors="pt")).logits[0]
    result = detect_replaced(KEY, TEXT)
    assert list(result.tokens) == tok.convert_ids_to_tokens(tok(TEXT)["input_ids"])
    assert np.allclose(result.p_replaced, torch.sigmoid(logits).numpy(), atol=1e-5)
    assert not np.allclose(result.p_replaced, detect_replaced("mini-electra", TEXT).p_replaced, atol=1e-3)


def test_its_swaps_are_mini_electras_generators_draw(folder):
    ours, shared = detect_replaced(KEY, TEXT, swap=3, seed=11), detect_replaced("mini-electra", TEXT, swap=3, seed=11)
    assert (ours.text, ours.swapped, ours.originals, ours.drawn_back) == (
        shared.text, shared.swapped, shared.originals, shared.drawn_back)


def test_the_view_and_the_card_quote_the_record(folder):
    from components.masking.objectives import replaced_view

    record = json.loads((folder / "record.json").read_text(encoding="utf-8"))
    auc, swaps = detection_figures(KEY)
    assert auc == record["rtd_heldout"]["roc_auc"]
    found = dict(swaps)
    html, _ = replaced_view(KEY, TEXT, 0, 0)
    assert f"{auc:.3f}" in html and "trained on past the zoo's shared budget" in html
    assert f"first in {found['written']:.0%} of the sentences written" in html and f"{found['heldout']:.0%}" in html
    card = (folder / "MODEL_CARD.md").read_text(encoding="utf-8")
    assert f"**{record['rtd_heldout']['roc_auc']:.3f}**" in card
    for name, f in record["swap_detection"].items():
        if isinstance(f, dict):
            assert f"in **{f['first']:.1%}** (by chance {f['chance_first']:.1%})" in card
    assert f"{record['steps']:,} steps, {record['tokens']:,} tokens" in card


def test_the_detection_view_opens_on_the_detector(folder):
    import gradio as gr

    from components.masking.objectives import build_rtd_section
    from models import list_models

    with gr.Blocks() as demo:
        build_rtd_section(list_models())
    (model,) = [b for b in demo.blocks.values() if isinstance(b, gr.Dropdown)]
    assert model.value == KEY and "mini-electra" in [key for _, key in model.choices]
    (view,) = [b for b in demo.blocks.values() if isinstance(b, gr.HTML) and b.elem_id == "masking-rtd-view"]
    assert "trained on past the zoo's shared budget" in view.value


def test_a_training_batch_holds_whole_sentences_noun_swaps_and_word_swaps():
    nouns = frozenset({"cat", "milk", "saucer", "dog", "bone", "garden", "boy", "ball", "park"})
    sentences = ["The cat drank the milk from the saucer.", "The dog buried a bone in the garden today.",
                 "A boy threw the ball across the park.", "Nobody knew what would come next then."] * 8
    pool = ["engine", "river", "potato"]
    items = detector.items_for(sentences, np.random.default_rng(0), 5, nouns, pool)
    whole = [it for it in items if it["start"] is None]
    noun = [it for it in items if it["start"] is not None and it["swapped"].lower() in pool]
    word = [it for it in items if it["start"] is not None and it["swapped"].lower() not in pool]
    assert whole and noun and word and len(items) <= len(sentences)
    assert all(it["text"] in sentences for it in whole)
    for it in noun + word:
        assert it["text"] not in sentences and it["text"][it["start"]:].startswith(it["swapped"])


def test_a_typed_sentence_reads_as_a_training_sentence_did(folder):
    """The detection view's tokens for typed text are the ids a corpus sentence had in training
    (one chunk, ``Examples.packed``, as mini-electra's run read it)."""
    from models.runtime.loading import load_model
    from models.zoo import data as zd

    tok = load_model(get_spec(KEY), head="rtd").tokenizer
    for sentence in (TEXT, "She opened the door and walked into the garden."):
        chunks = zd.make_chunks(["s"], [tok(sentence, add_special_tokens=False)["input_ids"]], 125)
        ids, _ = zd.Examples(tok, chunks, 128, seed=0).packed(0)
        assert list(detect_replaced(KEY, sentence).tokens) == tok.convert_ids_to_tokens(ids.tolist())
