"""The Masking lab tab's fields, as built (no browser)."""

from __future__ import annotations

import gradio as gr
import pytest


@pytest.fixture(scope="module")
def fields():
    from components.masking.tab import build_masking_tab

    with gr.Blocks() as demo, gr.Tabs():
        build_masking_tab()
    return [b for b in demo.blocks.values() if isinstance(b, (gr.Number, gr.Slider))]


def test_the_split_fields_step_by_a_fraction_not_from_0_to_1(fields):
    """The three split fields hold probabilities between 0 and 1: an arrow key moves them by a
    small step (Gradio's default step of 1 jumped 0 <-> 1), as the selection-rate slider does."""
    split = {f.label: f for f in fields if f.label in ("→ [MASK]", "→ random", "→ kept")}
    assert len(split) == 3
    for field in split.values():
        assert (field.minimum, field.maximum) == (0, 1)
        assert 0 < field.step <= 0.05
        assert round(0.8 / field.step, 9).is_integer()  # BERT's 80/10/10 lies on the steps
    rate = next(f for f in fields if f.label == "Selection rate")
    assert 0 < rate.step <= 0.05


def test_an_out_of_range_seed_or_epoch_is_refused_by_name(fields):
    """Gradio's own bound check says "Value -3 is less than minimum value 0." without the field;
    these fields leave the bounds to the handlers, whose refusals name the field."""
    from components.masking.objectives import replaced_view
    from components.masking.tab import run_loss, run_simulation

    seeds = [f for f in fields if f.label == "Seed"]
    epoch = next(f for f in fields if f.label == "Epoch to score")
    assert len(seeds) == 2  # the masking simulation's and the RTD view's
    assert [f.preprocess(-3) for f in seeds] == [-3, -3] and epoch.preprocess(0) == 0
    args = ["The cat sat on the mat.", "mini-bert", 0.15, 0.8, 0.1, 0.1, False, 3, "dynamic"]
    with pytest.raises(gr.Error, match="seed must be a whole number from 0"):
        run_simulation(*args, -3)
    with pytest.raises(gr.Error, match="Choose an epoch between 1 and 3"):
        run_loss(*args, 0, 0)
    with pytest.raises(gr.Error, match="seed must be a whole number from 0"):
        replaced_view("mini-electra", "The cat sat on the mat.", 1, -3)


def test_picking_another_pair_model_answers_with_it_and_clears_the_last_nsp_loss():
    """mini-bert's NSP answer on screen, then mini-albert picked: the handler wired to the picker
    gives mini-albert's own sentence-order answer (not mini-bert's left standing) and clears the
    NSP loss computed with mini-bert."""
    from components.masking import objectives_copy as copy
    from components.masking.objectives import build_pair_section
    from models import list_models, sentence_order

    with gr.Blocks() as demo:
        build_pair_section(list_models(), lambda seed: "")
    picker = next(b for b in demo.blocks.values()
                  if isinstance(b, gr.Dropdown) and b.label == "Model with an NSP or SOP head")
    (picked,) = [d for d in demo.config["dependencies"] if (picker._id, "input") in d["targets"]]
    answer, loss = demo.fns[picked["id"]].fn("mini-albert", copy.PAIR_A, copy.PAIR_B)
    assert "P(in order)" in answer and "IsNext" not in answer and loss == ""
    assert f"{sentence_order('mini-albert', copy.PAIR_A, copy.PAIR_B):.3f}" in answer


def test_a_random_b_fits_every_pair_model_with_the_default_a():
    """The app's own pick for B never makes a pair too long for a pair head to read: seed 1134
    drew the split's longest sentence (60 words), a 131-token pair for mini-bert's 128."""
    from components.masking import objectives_copy as copy
    from components.masking.tab import RANDOM_B_WORDS, random_b
    from models import heldout_sentences, list_models, load_model, pair_loss

    fitting = [s for s in heldout_sentences() if len(s.split()) <= RANDOM_B_WORDS]
    assert len(fitting) > 0.9 * len(heldout_sentences())  # still a draw from nearly all of the split
    assert all(random_b(seed) in fitting for seed in range(200))
    longest = max(fitting, key=len)
    for spec in (m for m in list_models() if m.available and m.can("pair")):
        loaded = load_model(spec, head="base")
        limit = min(loaded.model.config.max_position_embeddings, loaded.tokenizer.model_max_length)
        assert max(len(loaded.tokenizer(copy.PAIR_A, s)["input_ids"]) for s in fitting) <= limit, spec.key
        def score(key, a, b):
            return pair_loss(key, a, b).p_is_next  # the model's own head: NSP or SOP
        assert 0 <= score(spec.key, copy.PAIR_A, random_b(1134)) <= 1
        assert 0 <= score(spec.key, copy.PAIR_A, longest) <= 1


def test_the_model_picker_marks_the_models_whose_loss_is_refused():
    """minilm-l6 has no trained MLM head: its tokenizer simulates the masking, but "Compute the
    MLM loss" and "Compare 80/10/10, ..." refuse it. The picker offers it marked "(no MLM head)"
    (before: unmarked, under a label saying its MLM scores the loss); every unmarked model has
    the head the loss needs."""
    from components.masking.tab import build_masking_tab, run_compare, run_loss, run_simulation
    from models import list_models

    with gr.Blocks() as demo, gr.Tabs():
        build_masking_tab()
    (picker,) = [b for b in demo.blocks.values() if isinstance(b, gr.Dropdown) and b.label.startswith("Model (")]
    labels = {key: label for label, key in picker.choices}
    args = ["The cat sat on the mat.", "minilm-l6", 0.5, 0.8, 0.1, 0.1, False, 1, "dynamic", 0]
    strips, summary = run_simulation(*args)
    assert "selected per epoch" in summary  # the tokenizer alone is enough to simulate
    with pytest.raises(gr.Error, match="no trained masked-LM head"):
        run_loss(*args, 1)
    with pytest.raises(gr.Error, match="no trained masked-LM head"):
        run_compare("The cat sat on the mat.", "minilm-l6", 0.5, False, 0)
    assert labels["minilm-l6"].endswith("(no MLM head)") and "(no MLM head)" in picker.label
    assert {key for key, label in labels.items() if "(no MLM head)" in label} == {
        m.key for m in list_models() if m.available and not m.can("mlm")}


def test_the_pair_loss_button_scores_each_model_its_picker_offers_with_its_own_head():
    """The pair picker offers mini-albert for its SOP head: the loss button (wired as built)
    gives SOP's loss, P(in order) against the label "swapped" (before: "has no next-sentence-
    prediction head"), equal to the cross-entropy of transformers' ``sop_logits`` with
    ``sentence_order_label`` 1; mini-bert's stays NSP's."""
    import re

    import torch
    import torch.nn.functional as F
    from transformers import AlbertForPreTraining, AutoTokenizer

    from helpers import parity_atol

    from components.masking import objectives_copy as copy
    from components.masking.objectives import build_pair_section
    from models import list_models
    from models.registry.zoo_entries import zoo_folder

    with gr.Blocks() as demo:
        build_pair_section(list_models(), lambda seed: "")
    picker = next(b for b in demo.blocks.values()
                  if isinstance(b, gr.Dropdown) and b.label == "Model with an NSP or SOP head")
    (button,) = [b for b in demo.blocks.values() if isinstance(b, gr.Button) and "loss" in b.value]
    (clicked,) = [d for d in demo.config["dependencies"] if (button._id, "click") in d["targets"]]
    loss = demo.fns[clicked["id"]].fn
    assert "NSP or SOP" in button.value and {key for _, key in picker.choices} >= {"mini-bert", "mini-albert"}
    texts = {key: loss(key, copy.PAIR_A, copy.PAIR_B, False) for _, key in picker.choices}
    assert "P(IsNext)" in texts["mini-bert"] and "NotNext" in texts["mini-bert"]
    folder = zoo_folder("mini-albert")
    model = AlbertForPreTraining.from_pretrained(folder, dtype=torch.float32).eval()
    with torch.no_grad():
        logits = model(**AutoTokenizer.from_pretrained(folder)(copy.PAIR_A, copy.PAIR_B, return_tensors="pt")).sop_logits
    reference = float(F.cross_entropy(logits, torch.tensor([1])))  # 1: swapped
    assert "P(in order)" in texts["mini-albert"] and "True label **swapped**" in texts["mini-albert"]
    shown = float(re.search(r"= \*\*([0-9.]+) nats\*\*", texts["mini-albert"]).group(1))
    assert shown == pytest.approx(reference, abs=max(10 * parity_atol(), 1e-4))  # shown to 4 decimals
