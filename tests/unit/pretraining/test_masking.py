"""The masking core: parity with transformers' collator, rates, specials, whole words."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from models import get_spec, InputError, load_tokenizer
from models.pretraining.masking import (
    KEPT,
    MASKED,
    NOT_SELECTED,
    RANDOM,
    MaskingPolicy,
    apply_masking,
    word_ids_from_offsets,
)

TEXTS = [
    "The quick brown fox jumps over the lazy dog near the riverbank.",
    "Unbelievable tokenization happens here, doesn't it?",
    "Short one.",
]


@pytest.fixture(scope="module")
def batch(encoder_key):
    tok = load_tokenizer(get_spec(encoder_key))
    enc = tok(TEXTS * 30, padding=True, return_special_tokens_mask=True,
              return_offsets_mapping=True, return_tensors="pt")
    return tok, enc


def _mask(tok, enc, policy, seed, whole_word=False):
    special = enc["special_tokens_mask"].bool() | (enc["attention_mask"] == 0)
    word_ids = (
        word_ids_from_offsets(enc["offset_mapping"].numpy(), special.numpy()) if whole_word else None
    )
    return apply_masking(
        enc["input_ids"], special, policy, mask_token_id=tok.mask_token_id,
        vocab_size=len(tok), generator=torch.Generator().manual_seed(seed), word_ids=word_ids,
    )


@pytest.mark.parametrize("whole_word", [False, True])
def test_identical_to_transformers_collator(batch, whole_word):
    from transformers import DataCollatorForLanguageModeling

    tok, enc = batch
    split = {"mask_replace_prob": 1.0, "random_replace_prob": 0.0} if whole_word else {}
    collator = DataCollatorForLanguageModeling(
        tok, mlm_probability=0.15, seed=11, whole_word_mask=whole_word, return_tensors="pt", **split
    )
    features = [
        {
            "input_ids": enc["input_ids"][i].tolist(),
            "special_tokens_mask": enc["special_tokens_mask"][i].tolist(),
            **({"offset_mapping": enc["offset_mapping"][i].tolist()} if whole_word else {}),
        }
        for i in range(enc["input_ids"].shape[0])
    ]
    expected = collator(features)
    policy = MaskingPolicy(whole_word=whole_word, **({"mask": 1.0, "random": 0.0, "keep": 0.0} if whole_word else {}))
    inputs, labels, _ = _mask(tok, enc, policy, seed=11, whole_word=whole_word)
    assert torch.equal(inputs, expected["input_ids"])
    assert torch.equal(labels, expected["labels"])


@pytest.mark.parametrize("seed", [11, 12])
def test_whole_word_fates_follow_the_collators_draws(batch, seed):
    """Whole words with the 80/10/10 split: every piece's fate is the collator's own draw.

    transformers 5 forces 100 % [MASK] when words are whole; setting the split back after
    construction makes its ``torch_mask_tokens`` draw whole-word selection, then [MASK],
    then random, then the random ids, from one generator: the reference for each piece.
    """
    from transformers import DataCollatorForLanguageModeling

    tok, enc = batch
    collator = DataCollatorForLanguageModeling(tok, mlm_probability=0.3, seed=seed, whole_word_mask=True,
                                               return_tensors="pt")
    collator.mask_replace_prob, collator.random_replace_prob = 0.8, 0.1
    collator.create_rng()
    special = enc["special_tokens_mask"].bool() | (enc["attention_mask"] == 0)
    expected_inputs, expected_labels = collator.torch_mask_tokens(
        enc["input_ids"].clone(), special.long(), enc["offset_mapping"]
    )
    inputs, labels, fates = _mask(tok, enc, MaskingPolicy(rate=0.3, whole_word=True), seed, whole_word=True)
    assert torch.equal(labels, expected_labels)
    assert torch.equal(inputs, expected_inputs)
    # the collator's draws hold all three fates; ours name them
    selected = expected_labels != -100
    masked = selected & (expected_inputs == tok.mask_token_id)
    changed = selected & ~masked & (expected_inputs != enc["input_ids"])
    assert torch.equal(fates == MASKED, masked) and masked.any()
    assert changed.any() and (fates[changed] == RANDOM).all()
    assert ((fates == KEPT) | (fates == RANDOM)).sum() == (selected & ~masked).sum()
    assert (fates == KEPT).any()


def test_rates_and_split_match_the_policy(batch):
    tok, enc = batch
    special = enc["special_tokens_mask"].bool() | (enc["attention_mask"] == 0)
    counts = np.zeros(4)
    for seed in range(200):
        _, labels, fates = _mask(tok, enc, MaskingPolicy(), seed)
        assert not fates[special].any()  # [CLS], [SEP], padding: never selected
        assert torch.equal(labels != -100, fates != NOT_SELECTED)
        counts += np.bincount(fates[~special].numpy(), minlength=4)
    eligible = counts.sum()
    selected = counts[1:].sum()
    assert abs(selected / eligible - 0.15) < 0.01
    assert abs(counts[MASKED] / selected - 0.8) < 0.02
    assert abs(counts[RANDOM] / selected - 0.1) < 0.015
    assert abs(counts[KEPT] / selected - 0.1) < 0.015


def test_fates_describe_the_inputs(batch):
    tok, enc = batch
    inputs, labels, fates = _mask(tok, enc, MaskingPolicy(), seed=3)
    original = enc["input_ids"]
    assert torch.all(inputs[fates == MASKED] == tok.mask_token_id)
    assert torch.equal(inputs[fates == KEPT], original[fates == KEPT])
    assert torch.equal(inputs[fates == NOT_SELECTED], original[fates == NOT_SELECTED])
    assert torch.equal(labels[fates != NOT_SELECTED], original[fates != NOT_SELECTED])


def test_whole_words_are_selected_together(batch):
    tok, enc = batch
    special = enc["special_tokens_mask"].bool() | (enc["attention_mask"] == 0)
    word_ids = word_ids_from_offsets(enc["offset_mapping"].numpy(), special.numpy())
    for seed in range(20):
        _, labels, _ = _mask(tok, enc, MaskingPolicy(rate=0.3, whole_word=True), seed, whole_word=True)
        selected = (labels != -100).numpy()
        for row in range(selected.shape[0]):
            for word in set(word_ids[row][word_ids[row] >= 0]):
                members = selected[row][word_ids[row] == word]
                assert members.all() or not members.any()


def test_word_ids_follow_offsets(batch):
    tok, enc = batch
    row = 1  # "Unbelievable tokenization happens here, doesn't it?"
    tokens = tok.convert_ids_to_tokens(enc["input_ids"][row])
    special = enc["special_tokens_mask"].bool() | (enc["attention_mask"] == 0)
    ids = word_ids_from_offsets(enc["offset_mapping"].numpy(), special.numpy())[row]
    words: dict[int, list[str]] = {}
    for t, w in zip(tokens, ids):
        if w >= 0:
            words.setdefault(int(w), []).append(t)
    # a word is a run of pieces with no gap between them (transformers' convention)
    assert list(words.values()) == [
        ["unbelievable"], ["token", "##ization"], ["happens"], ["here", ","],
        ["doesn", "'", "t"], ["it", "?"],
    ]


@pytest.mark.parametrize(
    "kwargs",
    [{"rate": -0.1}, {"rate": 1.5}, {"mask": 0.7}, {"mask": 0.8, "random": 0.2, "keep": 0.1},
     {"rate": float("nan")}, {"rate": True}, {"keep": "0.1"}],
)
def test_bad_policies_refused(kwargs):
    with pytest.raises(InputError):
        MaskingPolicy(**kwargs)


def test_seeded_and_deterministic(batch):
    tok, enc = batch
    a = _mask(tok, enc, MaskingPolicy(), seed=5)
    b = _mask(tok, enc, MaskingPolicy(), seed=5)
    c = _mask(tok, enc, MaskingPolicy(), seed=6)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert not torch.equal(a[2], c[2])


def test_word_ids_equal_the_collators_for_sentence_pairs(batch):
    """Pairs put a word right after [SEP] at offset 0: it starts a word of its own, as in
    transformers' collator (the reference), never joining the first text's last word."""
    from transformers import DataCollatorForLanguageModeling

    tok, _ = batch
    enc = tok(TEXTS, ["Second text here.", "Another, shorter one!", "Yes."], padding=True,
              return_special_tokens_mask=True, return_offsets_mapping=True, return_tensors="np")
    special = enc["special_tokens_mask"].astype(bool) | (enc["attention_mask"] == 0)
    ours = word_ids_from_offsets(enc["offset_mapping"], special)
    expected, _ = DataCollatorForLanguageModeling._calc_word_ids_and_prob_mask(
        enc["offset_mapping"], special.astype(np.int64)
    )
    np.testing.assert_array_equal(ours, expected)
    for row in range(len(TEXTS)):
        segments = enc["token_type_ids"][row]
        first = ours[row][(segments == 0) & ~special[row]]
        second = ours[row][(segments == 1) & ~special[row]]
        assert first.max() < second.min()  # no word spans the two texts
