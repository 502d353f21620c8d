"""The causal mask (detective vs storyteller), the held-out comparison, and generation.

References: transformers' own decoder path (``config.is_decoder=True``, which builds its
causal mask with ``create_causal_mask``), the prefix property (with a causal mask, what a
position computes cannot depend on anything to its right), the attention weights
themselves, ``pipeline("fill-mask")`` and ``evaluate_fill_mask``.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from models import (
    CapabilityError,
    InputError,
    evaluate_causal,
    evaluate_fill_mask,
    extract_attention,
    fill_mask,
    generate_left_to_right,
    load_model,
)
from models.mlm.causal import causal_attention_mask, require_causal, with_causal_mask
from models.registry.catalogue import SPECS, get_spec

TEXT = "The cat sat on the mat because it was tired."


@pytest.mark.parametrize("key", ["minilm-mlm", "minilm-l6"])
def test_causal_attention_has_an_empty_upper_triangle(key):
    result = extract_attention(key, TEXT, causal=True)
    w = result.weights  # (L, H, T, T)
    t = w.shape[-1]
    upper = np.triu(np.ones((t, t), dtype=bool), 1)
    assert result.causal
    assert (w[..., upper] == 0.0).all()  # exactly 0, not merely small
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-5)
    assert (w[..., 0, 0] == 1.0).all()  # the first token can only look at itself
    both = extract_attention(key, TEXT)
    assert not both.causal and both.weights[..., upper].max() > 0.01


def test_causal_equals_transformers_own_decoder_mask(mlm_key):
    """fill_mask(causal=True) vs the same weights run as a decoder by transformers itself."""
    text = "The cat sat on the [MASK] because it was tired."
    ours = fill_mask(mlm_key, text, top_k=5, causal=True)
    loaded = load_model(get_spec(mlm_key), head="mlm", attn_implementation="eager")
    decoder = copy.deepcopy(loaded.model)
    decoder.config.is_decoder = True  # BertModel then builds its mask with create_causal_mask
    enc = loaded.tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        probs = decoder(**enc, use_cache=False).logits[0, ours.masks[0].position].softmax(-1)
        bidirectional = loaded.model(**enc).logits[0, ours.masks[0].position].softmax(-1)
    scores, ids = probs.topk(5)
    assert [p.token_id for p in ours.masks[0].predictions] == ids.tolist()
    np.testing.assert_allclose([p.score for p in ours.masks[0].predictions], scores.numpy(), atol=1e-5)
    assert ours.causal
    assert (probs - bidirectional).abs().max() > 1e-3  # the mask changed something


def test_the_right_side_no_longer_matters(mlm_key):
    """Causal: a mask's answers depend only on its left; bidirectional: also on its right."""
    a = fill_mask(mlm_key, "The cat sat on the [MASK] because it was tired.", causal=True)
    b = fill_mask(mlm_key, "The cat sat on the [MASK] of the old red house by the sea.", causal=True)
    c = fill_mask(mlm_key, "The cat sat on the [MASK]", causal=True)
    for other in (b, c):
        assert [p.token_id for p in other.masks[0].predictions] == [p.token_id for p in a.masks[0].predictions]
        np.testing.assert_allclose([p.score for p in other.masks[0].predictions],
                                   [p.score for p in a.masks[0].predictions], atol=1e-5)
    d = fill_mask(mlm_key, "The cat sat on the [MASK] because it was tired.")
    e = fill_mask(mlm_key, "The cat sat on the [MASK] of the old red house by the sea.")
    assert [p.score for p in d.masks[0].predictions] != pytest.approx([p.score for p in e.masks[0].predictions])


def test_every_position_equals_its_causal_prefix(mlm_loaded):
    """Position i of the whole text == the last position of text[:i+1], every layer."""
    model, tokenizer = mlm_loaded.model, mlm_loaded.tokenizer
    enc = dict(tokenizer(TEXT, return_tensors="pt"))
    with torch.no_grad():
        whole = model(**with_causal_mask(model, enc), output_hidden_states=True).hidden_states
        for i in range(enc["input_ids"].shape[1]):
            prefix = {k: v[:, : i + 1] for k, v in enc.items()}
            part = model(**with_causal_mask(model, prefix), output_hidden_states=True).hidden_states
            for layer in range(len(whole)):
                torch.testing.assert_close(part[layer][0, i], whole[layer][0, i], atol=2e-5, rtol=1e-5)
        # the first layer's output at i is also what an unmasked model computes on text[:i+1]
        for i in (1, 5):
            prefix = {k: v[:, : i + 1] for k, v in enc.items()}
            plain = model(**prefix, output_hidden_states=True).hidden_states[1]
            torch.testing.assert_close(plain[0, i], whole[1][0, i], atol=2e-5, rtol=1e-5)


def test_padding_stays_masked_under_the_causal_mask(mlm_loaded):
    model, tokenizer = mlm_loaded.model, mlm_loaded.tokenizer
    batch = tokenizer([TEXT, "A short one."], padding=True, return_tensors="pt")
    mask = causal_attention_mask(model, batch["attention_mask"])  # (B, 1, T, T)
    t = batch["input_ids"].shape[1]
    assert mask.shape == (2, 1, t, t)
    real = int(batch["attention_mask"][1].sum())
    assert (mask[1, 0, :, real:] < -1e30).all()  # no query of the short row sees its padding
    with torch.no_grad():
        padded = model(**with_causal_mask(model, dict(batch))).logits[1, :real]
        alone = model(**with_causal_mask(model, dict(tokenizer(["A short one."], return_tensors="pt")))).logits[0]
    torch.testing.assert_close(padded, alone, atol=1e-4, rtol=1e-4)


def _tiny(model_type: str):
    from transformers import (AlbertConfig, AlbertForMaskedLM, DistilBertConfig, DistilBertForMaskedLM,
                              ElectraConfig, ElectraForMaskedLM, ModernBertConfig, ModernBertForMaskedLM,
                              RobertaConfig, RobertaForMaskedLM)

    small = dict(vocab_size=100, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
    builders = {
        "roberta": lambda: RobertaForMaskedLM(RobertaConfig(hidden_size=32, max_position_embeddings=80, **small)),
        "electra": lambda: ElectraForMaskedLM(ElectraConfig(hidden_size=32, embedding_size=16, **small)),
        "albert": lambda: AlbertForMaskedLM(AlbertConfig(hidden_size=32, embedding_size=16, **small)),
        "distilbert": lambda: DistilBertForMaskedLM(DistilBertConfig(
            vocab_size=100, dim=32, n_layers=2, n_heads=2, hidden_dim=64)),
        # a local window of 4 (2 each side) on 12 tokens: the local layers must keep it
        "modernbert": lambda: ModernBertForMaskedLM(ModernBertConfig(
            hidden_size=32, local_attention=4, global_attn_every_n_layers=2, pad_token_id=0,
            **small)),
    }
    return builders[model_type]().eval()


@pytest.mark.parametrize("model_type", ["roberta", "electra", "albert", "distilbert", "modernbert"])
@pytest.mark.parametrize("impl", ["eager", "sdpa"])
def test_other_families_take_the_mask(model_type, impl):
    """Random-init models (plumbing only): changing the right side changes nothing on the left."""
    torch.manual_seed(0)
    model = _tiny(model_type)
    model.set_attn_implementation(impl)
    ids = torch.randint(5, 100, (1, 12))
    other = ids.clone()
    other[0, 7:] = torch.randint(5, 100, (5,))  # a different right side from position 7 on
    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    with torch.no_grad():
        a = model(**with_causal_mask(model, inputs)).logits[0]
        b = model(**with_causal_mask(model, {**inputs, "input_ids": other})).logits[0]
        c = model(**inputs).logits[0]
        d = model(**{**inputs, "input_ids": other}).logits[0]
    torch.testing.assert_close(a[:7], b[:7], atol=1e-5, rtol=1e-5)
    assert (c[:7] - d[:7]).abs().max() > 1e-4  # unmasked, the right side does leak in
    if impl == "eager":
        with torch.no_grad():
            attentions = model(**with_causal_mask(model, inputs), output_attentions=True).attentions
        for layer in attentions:
            assert (torch.triu(layer[0], 1) == 0).all()
        if model_type == "modernbert":  # its local layer still sees no further than its window
            local = attentions[1][0]  # layer 1 is local (global every 2nd layer, from 0)
            far = torch.tril(torch.ones(12, 12, dtype=torch.bool), -3)
            assert (local[:, far] == 0).all()


def test_families_without_a_mask_input_are_refused():
    from transformers import DebertaV2Config, DebertaV2Model

    model = DebertaV2Model(DebertaV2Config(vocab_size=100, hidden_size=32, num_hidden_layers=1,
                                           num_attention_heads=2, intermediate_size=64))
    with pytest.raises(CapabilityError, match="causal mask"):
        causal_attention_mask(model, torch.ones(1, 5, dtype=torch.long))
    deberta = get_spec("deberta-v3-base")
    assert not deberta.can("causal")
    with pytest.raises(CapabilityError, match="Models that can") as refused:
        require_causal(get_spec("deberta-v3-base"))
    _lists_the_usable_ones_first(str(refused.value), [s for s in SPECS if s.can("causal")])
    with pytest.raises(CapabilityError):
        extract_attention("deberta-v3-base", "Hello there.", causal=True)
    assert all(s.can("causal") for s in SPECS if s.family in ("bert", "roberta", "distilbert"))


def test_held_out_measurement_shares_its_positions_with_evaluate_fill_mask():
    result = evaluate_causal("minilm-mlm", limit=10)
    plain = evaluate_fill_mask("minilm-mlm", "heldout", limit=10)
    assert result.positions == plain.n and result.sentences == 10
    assert result.bidirectional_top1 == pytest.approx(plain.top1)
    assert result.bidirectional_top5 == pytest.approx(plain.top5)
    assert result.bidirectional_loss == pytest.approx(plain.loss, rel=1e-5)
    assert result.causal_loss > result.bidirectional_loss  # the right side was worth something


# --- generate with an encoder ------------------------------------------------------------


def test_first_step_matches_the_fill_mask_pipeline(mlm_key, mlm_loaded):
    from transformers import pipeline

    prompt = "The weather today is"
    result = generate_left_to_right(mlm_key, prompt, steps=1, top_k=5)
    step = result.steps[0]
    tokenizer = mlm_loaded.tokenizer
    assert step.model_input == tuple(tokenizer.convert_ids_to_tokens(
        tokenizer(prompt + " " + tokenizer.mask_token)["input_ids"]))
    pipe = pipeline("fill-mask", model=mlm_loaded.model, tokenizer=tokenizer, device="cpu")
    specials = set(tokenizer.all_special_ids)
    reference = [r for r in pipe(prompt + " " + tokenizer.mask_token, top_k=20) if r["token"] not in specials][:5]
    assert [c.token_id for c in step.candidates] == [r["token"] for r in reference]
    np.testing.assert_allclose([c.score for c in step.candidates], [r["score"] for r in reference], atol=1e-5)


def test_steps_chain_and_are_seeded(mlm_key):
    a = generate_left_to_right(mlm_key, "Once upon a time", steps=4, seed=3, top_k=5)
    b = generate_left_to_right(mlm_key, "Once upon a time", steps=4, seed=3, top_k=5)
    assert a == b
    assert [s.step for s in a.steps] == [1, 2, 3, 4]
    for before, after in zip(a.steps, a.steps[1:]):
        assert after.context == before.text
    assert a.text == a.steps[-1].text
    for s in a.steps:
        assert s.chosen in s.candidates
        assert s.model_input.count("[MASK]") == 1 and s.model_input[-2:] == ("[MASK]", "[SEP]")
        assert "[SEP]" not in [c.raw_token for c in s.candidates]
    greedy = generate_left_to_right(mlm_key, "Once upon a time", steps=3, seed=0, top_k=1)
    assert all(s.chosen == s.candidates[0] for s in greedy.steps)


@pytest.mark.parametrize(("kwargs", "words"), [
    (dict(prompt="", steps=3), "empty"),
    (dict(prompt="Hi", steps=0), "steps"),
    (dict(prompt="Hi", steps=3, top_k=0), "top_k"),
    (dict(prompt="The [MASK] is", steps=3), "without \\[MASK\\]"),  # it would stay unfilled
    (dict(prompt="The <mask> is", steps=3), "use Fill-mask"),
])
def test_generation_refuses_bad_input(mlm_key, kwargs, words):
    with pytest.raises(InputError, match=words):
        generate_left_to_right(mlm_key, **kwargs)


def test_generation_needs_an_mlm_head():
    with pytest.raises(CapabilityError, match="masked-LM head"):
        generate_left_to_right("minilm-l6", "Hello", 2)


def _lists_the_usable_ones_first(message: str, able) -> None:
    """The models named after "Models that can"/"have one": those that load here, then the
    others marked as not available here (not one list that sends a user to a model that fails)."""
    from models.registry.catalogue import availability

    here = [s.key for s in able if availability(s)[0]]
    elsewhere = [s.key for s in able if not availability(s)[0]]
    listed = message.split("Models that", 1)[1].split(": ", 1)[1]
    assert listed.startswith(", ".join(here) or "none on this machine")
    if elsewhere:
        assert listed.rstrip(".").endswith(f"(not available here: {', '.join(elsewhere)})")


def test_a_missing_head_names_the_models_that_have_one_here_first():
    from models.errors import CapabilityError as Refused
    from models.registry.catalogue import get_spec
    from models.runtime.loading import require_head

    with pytest.raises(Refused, match="Models that have one") as refused:
        require_head(get_spec("minilm-l6"), "mlm")
    # said of the head, whichever view asked (gradients, a loss, a teacher), not "cannot fill masks"
    assert "no trained masked-LM head (the layer that scores every vocabulary word" in str(refused.value)
    assert "cannot fill masks" not in str(refused.value)
    _lists_the_usable_ones_first(str(refused.value), [s for s in SPECS if s.can("mlm")])


def _held_out_reference(key: str, sentences: int, causal: bool) -> tuple[float, float, float, int]:
    """(top-1, top-5, loss, positions) at transformers' DataCollatorForLanguageModeling's masks
    (15 %, all to the mask token, seed 1234) on the first held-out sentences cut to 64 tokens,
    scored by a second copy of the MaskedLM model (AutoModelForMaskedLM, each sentence alone;
    ``causal``: a causal mask made here, -inf above the diagonal, as a 4-D additive mask):
    top-1 / top-5 by its own logits, the loss by torch's cross_entropy."""
    from transformers import AutoModelForMaskedLM, DataCollatorForLanguageModeling

    from models.pretraining.evaluation import heldout_sentences
    from models.registry.catalogue import local_path
    from models.registry.zoo_entries import zoo_folder

    folder = zoo_folder(key) if get_spec(key).miniature else local_path(get_spec(key))
    tok = load_model(get_spec(key), head="mlm").tokenizer
    model = AutoModelForMaskedLM.from_pretrained(folder, dtype=torch.float32).eval()
    collator = DataCollatorForLanguageModeling(tok, mlm_probability=0.15, mask_replace_prob=1.0,
                                               random_replace_prob=0.0, seed=1234, return_tensors="pt")
    enc = tok(heldout_sentences()[:sentences], truncation=True, max_length=64, return_special_tokens_mask=True)
    batch = collator([{k: enc[k][i] for k in ("input_ids", "attention_mask", "special_tokens_mask")}
                      for i in range(sentences)])
    logits, labels = [], []
    with torch.no_grad():
        for ids, real, row_labels in zip(batch["input_ids"], batch["attention_mask"], batch["labels"]):
            n = int(real.sum())  # padded on the right
            mask = torch.zeros(1, 1, n, n).masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1),
                                                       torch.finfo(torch.float32).min) if causal else None
            picked = row_labels[:n] != -100
            logits.append(model(input_ids=ids[None, :n], attention_mask=mask).logits[0, picked])
            labels.append(row_labels[:n][picked])
    logits, labels = torch.cat(logits), torch.cat(labels)
    top5 = logits.topk(5, dim=-1).indices
    n = len(labels)
    return (int((top5[:, 0] == labels).sum()) / n, int((top5 == labels[:, None]).any(-1).sum()) / n,
            float(torch.nn.functional.cross_entropy(logits, labels)), n)


@pytest.mark.parametrize("key", ["minilm-mlm", "mini-roberta"])
def test_held_out_scores_are_the_collators_masks_scored_by_cross_entropy(key):
    """evaluate_fill_mask("heldout") and evaluate_causal, both ways, against ``_held_out_reference``."""
    top1, top5, loss, n = _held_out_reference(key, 10, causal=False)
    # float16 on a GPU may swap a near-tie at a rank: one position either way there
    share, rel = (1e-12, 1e-4) if load_model(get_spec(key), head="mlm").dtype == torch.float32 else (1 / n + 1e-12, 1e-2)
    plain = evaluate_fill_mask(key, "heldout", limit=10)
    assert plain.n == n > 0
    assert (plain.top1, plain.top5) == (pytest.approx(top1, abs=share), pytest.approx(top5, abs=share))
    assert plain.loss == pytest.approx(loss, rel=rel)
    both = evaluate_causal(key, limit=10)
    assert both.positions == n
    assert (both.bidirectional_top1, both.bidirectional_top5) == (pytest.approx(top1, abs=share),
                                                                  pytest.approx(top5, abs=share))
    top1, top5, loss, _ = _held_out_reference(key, 10, causal=True)
    assert (both.causal_top1, both.causal_top5) == (pytest.approx(top1, abs=share), pytest.approx(top5, abs=share))
    assert both.causal_loss == pytest.approx(loss, rel=rel)
