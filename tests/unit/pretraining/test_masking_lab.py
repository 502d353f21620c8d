"""The masking lab's core: simulation, statistics, the MLM loss, NSP refusal."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from models import (
    CapabilityError,
    InputError,
    compare_policies,
    get_spec,
    load_model,
    masked_lm_loss,
    masking_statistics,
    pair_loss,
    simulate_masking,
)

TEXT = "He sat on the bank of the river and watched the unbelievably calm water flow past the old mill."


def test_simulation_is_deterministic_and_skips_specials(mlm_key):
    a = simulate_masking(mlm_key, TEXT, rate=0.3, epochs=3, seed=4)
    b = simulate_masking(mlm_key, TEXT, rate=0.3, epochs=3, seed=4)
    assert a == b
    for epoch in a.epochs:
        for s in epoch.selected:
            assert not a.special[s.position]
            assert s.original == a.tokens[s.position]
            assert epoch.fates[s.position] == s.fate
            if s.fate == "[MASK]":
                assert s.shown == "[MASK]"
            if s.fate == "kept":
                assert s.shown == s.original
        assert epoch.fates[0] == "not selected" and epoch.fates[-1] == "not selected"


def test_static_repeats_dynamic_redraws(mlm_key):
    static = simulate_masking(mlm_key, TEXT, rate=0.3, epochs=4, dynamic=False, seed=1)
    dynamic = simulate_masking(mlm_key, TEXT, rate=0.3, epochs=4, dynamic=True, seed=1)
    assert len({e.fates for e in static.epochs}) == 1
    assert len({e.fates for e in dynamic.epochs}) > 1
    assert dynamic.epochs[0] == static.epochs[0]  # the same first draw


def test_whole_word_selects_words_together(mlm_key):
    sim = simulate_masking(mlm_key, TEXT, rate=0.5, whole_word=True, epochs=5, seed=2)
    for epoch in sim.epochs:
        chosen = {s.position for s in epoch.selected}
        for word in set(sim.word_ids) - {-1}:
            members = {i for i, w in enumerate(sim.word_ids) if w == word}
            assert members <= chosen or not (members & chosen)


def test_statistics_match_the_configuration(encoder_key):
    from models.pretraining.evaluation import heldout_sentences

    stats = masking_statistics(encoder_key, heldout_sentences()[:300], draws=60, seed=0)
    assert stats.special_selected == 0
    assert abs(stats.mean["selected"] - 0.15) < 0.01
    assert abs(stats.mean["[MASK]"] - 0.8) < 0.02
    assert abs(stats.mean["random"] - 0.1) < 0.02
    assert abs(stats.mean["kept"] - 0.1) < 0.02
    assert all(v > 0 for v in stats.std.values())


def test_statistics_are_the_collators_draws(encoder_key):
    """Observed shares over 30 draws: transformers' DataCollatorForLanguageModeling (same seed,
    called 30 times on the padded batch) selects and replaces the same tokens; its shares are
    counted here (a random draw of the original token would read as kept: with a 30,522-piece
    vocabulary none happens here)."""
    import numpy as np
    from transformers import DataCollatorForLanguageModeling

    from models import load_tokenizer
    from models.pretraining.evaluation import heldout_sentences

    sentences, draws = heldout_sentences()[:20], 30
    stats = masking_statistics(encoder_key, sentences, draws=draws, seed=0)
    tok = load_tokenizer(get_spec(encoder_key))
    enc = tok(sentences, padding=True, truncation=True, max_length=128, return_special_tokens_mask=True)
    features = [{"input_ids": i, "special_tokens_mask": m}
                for i, m in zip(enc["input_ids"], enc["special_tokens_mask"])]
    collator = DataCollatorForLanguageModeling(tok, mlm_probability=0.15, seed=0, return_tensors="pt")
    ids = torch.tensor(enc["input_ids"])
    special = torch.tensor(enc["special_tokens_mask"]).bool() | (torch.tensor(enc["attention_mask"]) == 0)
    shares = {"selected": [], "[MASK]": [], "random": [], "kept": []}
    for _ in range(draws):
        batch = collator(features)
        selected = batch["labels"] != -100
        masked = selected & (batch["input_ids"] == tok.mask_token_id)
        changed = selected & ~masked & (batch["input_ids"] != ids)
        n = int(selected.sum())
        shares["selected"].append(n / int((~special).sum()))
        shares["[MASK]"].append(int(masked.sum()) / n)
        shares["random"].append(int(changed.sum()) / n)
        shares["kept"].append(int((selected & ~masked & ~changed).sum()) / n)
    assert stats.special_selected == 0 and stats.draws == draws
    for name, values in shares.items():
        assert stats.mean[name] == pytest.approx(float(np.mean(values)), abs=1e-12), name
        assert stats.std[name] == pytest.approx(float(np.std(values)), abs=1e-12), name


def test_loss_equals_torch_cross_entropy(mlm_key):
    sim = simulate_masking(mlm_key, TEXT, rate=0.4, seed=3)
    result = masked_lm_loss(mlm_key, sim)
    loaded = load_model(get_spec(mlm_key), head="mlm")
    inputs = torch.tensor([sim.epochs[0].shown_ids], device=loaded.device)
    labels = torch.full_like(inputs, -100)
    for s in sim.epochs[0].selected:
        labels[0, s.position] = s.original_id
    with torch.no_grad():
        logits = loaded.model(input_ids=inputs).logits.float()
    expected = F.cross_entropy(logits[0], labels[0], ignore_index=-100)
    assert abs(result.loss - float(expected)) < 1e-4
    for p in result.positions:
        assert p.rank >= 1 and 0 < p.p_original <= 1
        assert abs(p.nll + torch.log(torch.tensor(p.p_original)).item()) < 1e-4


@pytest.mark.parametrize("split", [(0.8, 0.1, 0.1), (0.0, 0.0, 1.0)])
def test_ranks_and_accuracy_follow_an_argsort_of_the_full_logits(mlm_key, mlm_loaded, split):
    """Each position's rank is where the original token falls when the whole vocabulary's
    logits are sorted (1 = the top guess); top-1 accuracy is the share of rank 1."""
    mask, random, keep = split
    sim = simulate_masking(mlm_key, TEXT, rate=0.5, mask=mask, random=random, keep=keep, seed=7)
    result = masked_lm_loss(mlm_key, sim)
    model, tokenizer = mlm_loaded.model, mlm_loaded.tokenizer
    with torch.no_grad():
        inputs = torch.tensor([sim.epochs[0].shown_ids], device=mlm_loaded.device)
        logits = model(input_ids=inputs).logits[0].float().cpu()  # (T, V)
    order = logits.argsort(dim=-1, descending=True)  # (T, V): token ids, best first
    expected_ranks = [int((order[s.position] == s.original_id).nonzero()) + 1 for s in sim.epochs[0].selected]
    assert [p.rank for p in result.positions] == expected_ranks
    assert [p.top_guess for p in result.positions] == [
        tokenizer.convert_ids_to_tokens(int(order[s.position, 0])) for s in sim.epochs[0].selected
    ]
    hits = sum(r == 1 for r in expected_ranks)
    assert result.top1_accuracy == pytest.approx(hits / len(expected_ranks))
    if keep == 1.0:  # the model sees every original token: it gets some of them right
        assert hits > 0


def test_policy_comparison_same_selection(mlm_key):
    results = compare_policies(mlm_key, TEXT, rate=0.3, seed=5)
    selected = {name: [p.position for p in r.positions] for name, r in results.items()}
    assert len({tuple(v) for v in selected.values()}) == 1
    # seeing the true token (all kept) makes the task far easier than seeing [MASK]
    assert results["0/0/100 (all kept)"].loss < results["100 % [MASK]"].loss


def test_each_policy_is_the_collators_corruption_scored_by_cross_entropy(mlm_key):
    """The "Compare 80/10/10, ..." figures: for each preset, transformers'
    DataCollatorForLanguageModeling with that split (same seed: the same selection) corrupts the
    text; a second copy of the model (AutoModelForMaskedLM) scores it by cross_entropy at the
    selected positions, and top-1 by its own argmax."""
    import copy

    from transformers import DataCollatorForLanguageModeling

    from models import POLICY_PRESETS

    results = compare_policies(mlm_key, TEXT, rate=0.3, seed=5)
    loaded = load_model(get_spec(mlm_key), head="mlm")
    tok, model = loaded.tokenizer, copy.deepcopy(loaded.model).float().cpu().eval()
    enc = tok(TEXT, return_special_tokens_mask=True)
    features = [{"input_ids": enc["input_ids"], "special_tokens_mask": enc["special_tokens_mask"]}]
    assert set(results) == set(POLICY_PRESETS)
    exact = loaded.dtype == torch.float32  # float16 on a GPU: three digits, a near-tie may swap
    atol = 1e-4 if exact else 2e-2
    for name, (mask, random, _) in POLICY_PRESETS.items():
        batch = DataCollatorForLanguageModeling(tok, mlm_probability=0.3, mask_replace_prob=mask,
                                                random_replace_prob=random, seed=5, return_tensors="pt")(features)
        labels = batch["labels"][0]
        picked = labels != -100
        with torch.no_grad():
            logits = model(input_ids=batch["input_ids"]).logits[0, picked]
        assert [p.position for p in results[name].positions] == torch.nonzero(picked).flatten().tolist(), name
        assert results[name].loss == pytest.approx(float(F.cross_entropy(logits, labels[picked])), abs=atol), name
        hits, n = int((logits.argmax(-1) == labels[picked]).sum()), int(picked.sum())
        assert results[name].top1_accuracy == pytest.approx(hits / n, abs=1e-12 if exact else 1 / n), name


@pytest.mark.parametrize(
    "kwargs",
    [{"rate": -0.1}, {"rate": 1.2}, {"mask": 0.5}, {"mask": 0.9, "random": 0.1, "keep": 0.1},
     {"epochs": 0}, {"epochs": 99}, {"seed": -1}, {"text": ""}],
)
def test_bad_parameters_refused(mlm_key, kwargs):
    args = {"model_key": mlm_key, "text": TEXT, **kwargs}
    with pytest.raises(InputError):
        simulate_masking(**args)


def test_nothing_selected_is_explained(mlm_key):
    sim = simulate_masking(mlm_key, TEXT, rate=0.0)
    with pytest.raises(InputError, match="The selection rate is 0") as raised:
        masked_lm_loss(mlm_key, sim)
    assert "seed" not in str(raised.value)  # no seed selects a token at rate 0
    # a rate above 0 that happens to select nothing on a short text: another seed can help
    short = next(s for s in (simulate_masking(mlm_key, "Hi.", rate=0.01, seed=seed) for seed in range(20))
                 if not s.epochs[0].selected)
    with pytest.raises(InputError, match="raise the rate, or try another seed"):
        masked_lm_loss(mlm_key, short)


def test_no_nsp_head_is_explained(mlm_key):
    with pytest.raises(CapabilityError, match="RoBERTa"):
        pair_loss(mlm_key, "It rained.", "The streets were wet.", head="nsp")


def test_pair_answer_shows_the_heldout_majority_baseline():
    """The NSP / SOP note compares the head with always guessing the held-out majority, from the record."""
    import json

    from components.masking.objectives_plots import pair_markdown
    from models import zoo_comparison
    from models.registry.zoo_entries import zoo_folder

    entries = {e.key: e for e in zoo_comparison()}
    for key, kind in (("mini-bert", "nsp"), ("mini-albert", "sop")):
        pair = json.loads((zoo_folder(key) / "record.json").read_text())["pair_heldout"]
        text = pair_markdown(kind, 0.7, entries[key].pair_accuracy, entries[key].pair_majority)
        assert f"{pair['accuracy']:.1%}" in text
        assert f"always guessing the majority label: {pair['majority']:.1%}" in text
        assert "chance: 50" not in text  # the baseline is the record's majority, not a fixed 50 %
    assert pair_markdown("nsp", 0.7, None).count("held-out") == 0


def test_the_sop_answer_names_the_order_its_pairs_show():
    """Typed into the pair view (the UI's handler, from plain text), ALBERT's SOP answer gives
    the bag-of-words order model's accuracy on the same held-out pairs, from its record
    (``python -m scripts.zoo heads sop --write``); BERT's NSP answer has no such reference."""
    import json

    from components.masking.objectives import pair_answer
    from models.registry.zoo_entries import zoo_folder

    reference = json.loads((zoo_folder("mini-albert") / "record.json").read_text())["pair_reference"]
    assert reference["pairs"] == json.loads((zoo_folder("mini-albert") / "record.json").read_text())[
        "pair_heldout"]["pairs"]  # the same held-out pairs as the head's own score
    text = pair_answer("mini-albert", "The storm broke at night.", "By morning the river had flooded the town.")
    assert f"A bag-of-words order model (which words each segment holds) gets {reference['accuracy']:.1%}" in text
    assert "P(in order)" in text
    bert = pair_answer("mini-bert", "The storm broke at night.", "By morning the river had flooded the town.")
    assert "P(IsNext)" in bert and "bag-of-words" not in bert


def test_the_rtd_view_marks_only_real_replacements_and_states_the_heldout_auc():
    """Typed into the RTD view (the UI's handler): a generator draw equal to the original is
    not shown as a swap, and the text gives the discriminator's held-out ROC AUC from its
    record, with what it means."""
    import json

    from components.masking.objectives import replaced_view
    from models.registry.zoo_entries import zoo_folder

    auc = json.loads((zoo_folder("mini-electra") / "record.json").read_text())["rtd_heldout"]["roc_auc"]
    for text, swap in (("The chef cooked a delicious meal.", 1),
                       ("The chef cooked a delicious meal for the guests.", 10)):
        html, rows = replaced_view("mini-electra", text, swap, 0)
        replaced = [(row[1], row[4]) for row in rows if row[4]]
        assert all(token != before for token, before in replaced)
        assert html.count("class='rtd-was'>swapped (was") == len(replaced)
        assert f"ROC AUC on held-out text corrupted by its generator: {auc:.3f}" in html
        assert "0.5 = chance" in html
    # on the short sentence the one draw gives back the original ``##ed``: no swap at all
    html, rows = replaced_view("mini-electra", "The chef cooked a delicious meal.", 1, 0)
    assert "class='rtd-was'>swapped" not in html and "drew the original token back" in html


@pytest.mark.parametrize("a, b", [("The weather was cold and grey all morning.", "By noon it had started to snow."),
                                  ("By noon it had started to snow.", "The weather was cold and grey all morning.")])
def test_a_pair_head_at_chance_on_heldout_pairs_gives_no_verdict(a, b):
    """Typed into the pair view: mini-albert's SOP head scores no better than always guessing the
    held-out majority (its record), so either order gets "cannot tell", not "swapped"; BERT's NSP
    head, well above its majority, still gives its verdict."""
    import json

    from components.masking.objectives import pair_answer
    from models.registry.zoo_entries import zoo_folder

    pair = json.loads((zoo_folder("mini-albert") / "record.json").read_text())["pair_heldout"]
    assert pair["accuracy"] <= pair["majority"]  # the case this test is about
    text = pair_answer("mini-albert", a, b)
    assert "cannot tell whether A, B are in their original order" in text and "at chance" in text
    assert "the model thinks" not in text
    bert = pair_answer("mini-bert", a, b)
    assert "the model thinks B" in bert and "cannot tell" not in bert


def test_a_pair_probability_near_one_half_gives_no_verdict():
    from components.masking.objectives_plots import pair_markdown

    for kind, p in (("nsp", 0.52), ("nsp", 0.47), ("sop", 0.53)):
        text = pair_markdown(kind, p, 0.97, 0.53)
        assert "too close to 0.5 to call" in text and "the model thinks" not in text
    assert "the model thinks B follows A" in pair_markdown("nsp", 0.6, 0.97, 0.53)
    assert "the model thinks A, B are swapped" in pair_markdown("sop", 0.3, 0.97, 0.53)


def test_a_pair_longer_than_the_model_reads_is_refused_not_cut():
    """A pair head scores the whole pair: past the model's length (128 tokens for the zoo) the
    pair is refused with the limit, as fill-mask and RTD refuse a long text, in the pair view
    and the NSP loss alike, not scored on a silently cut copy."""
    import gradio as gr

    from components.masking.objectives import pair_answer, run_nsp_loss
    from models import sentence_order

    long_a = " ".join(["word"] * 2000)
    for call, key in ((sentence_order, "mini-albert"), (pair_loss, "mini-bert")):
        with pytest.raises(InputError, match=rf"is 20\d\d tokens long; {key} reads at most 128 tokens"):
            call(key, long_a, "It rained.")
        with pytest.raises(InputError, match="reads at most 128 tokens"):
            call(key, "It rained.", long_a)
    for handler in (pair_answer, run_nsp_loss):
        with pytest.raises(gr.Error, match="reads at most 128 tokens"):
            handler("mini-bert", long_a, "It rained.", *([True] if handler is run_nsp_loss else []))
    assert 0 <= pair_loss("mini-bert", " ".join(["word"] * 60), "It rained.").p_is_next <= 1  # within the limit


@pytest.mark.parametrize("keep, total", [(0.1001, "1.0001"), (0.099, "0.999"), (0.1000011, "1.0000011")])
def test_a_split_off_by_a_little_shows_a_sum_that_is_not_1(mlm_key, keep, total):
    """The refusal's sum has the digits that show why the split is refused (1.0001, not "1")."""
    with pytest.raises(InputError, match=rf"mask 0\.8 \+ random 0\.1 \+ keep {keep} = {total}\.$"):
        simulate_masking(mlm_key, TEXT, rate=0.15, mask=0.8, random=0.1, keep=keep)
