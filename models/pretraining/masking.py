"""BERT's masking policy: one implementation, pure and seeded, shared by every feature.

The policy selects each non-special token with probability ``rate`` (15 %), then replaces
a selected token by the mask token with probability ``mask`` (80 %), by a random token
with probability ``random`` (10 %), and keeps it unchanged otherwise (``keep``, 10 %).
The loss is computed at the selected positions only.

Conventions follow transformers' ``DataCollatorForLanguageModeling`` exactly (same random
draws in the same order from the same generator, so with the same seed both produce the
same masks): Bernoulli selection per token, special tokens and padding never selected,
the random replacement drawn uniformly from the whole tokenizer (``len(tokenizer)``).
Whole-word masking follows its ``whole_word_mask=True`` rule: a word is the run of pieces
with no gap between their character offsets (the space that SentencePiece-style and some
byte-level BPE tokenizers count into a word's first piece, "▁capital" over " capital", is
left out first: it is a gap); a word is selected with probability ``rate``
(decided at its first piece) and then all its pieces are selected. Unlike transformers 5,
which forces 100 % [MASK] with whole words, the 80/10/10 split is kept and applied to each
piece, as Google's original BERT code does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..errors import InputError
from ..validation import as_real

# What happened to each position (the "fate" of a token).
NOT_SELECTED, MASKED, RANDOM, KEPT = 0, 1, 2, 3
FATES = ("not selected", "[MASK]", "random", "kept")


@dataclass(frozen=True)
class MaskingPolicy:
    """BERT's pre-training corruption: selection rate and replacement split."""

    rate: float = 0.15  # share of (non-special) tokens selected for prediction
    mask: float = 0.8  # of the selected: replaced by the mask token
    random: float = 0.1  # of the selected: replaced by a random token
    keep: float = 0.1  # of the selected: left unchanged (still predicted)
    whole_word: bool = False  # select all pieces of a word together

    def __post_init__(self):
        for name in ("rate", "mask", "random", "keep"):
            value = as_real(getattr(self, name))  # a NumPy number too; True or "0.15" is not one
            if not np.isfinite(value):
                raise InputError(f"The {name} probability must be a number between 0 and 1.")
            object.__setattr__(self, name, value)  # a plain float in the result
            if not 0.0 <= value <= 1.0:
                raise InputError(f"The {name} probability must be between 0 and 1; got {value}.")
        total = self.mask + self.random + self.keep
        if abs(total - 1.0) > 1e-6:
            raise InputError(
                f"The replacement split must add up to 1 (100 %): mask {self.mask} + random "
                f"{self.random} + keep {self.keep} = {round(total, 9)}."  # digits enough to show 1.0001 is not 1
            )


def word_ids_from_offsets(offsets: np.ndarray, special: np.ndarray, texts=None) -> np.ndarray:
    """Word index of every token (-1 for special tokens), as transformers' collator does.

    offsets: (B, T, 2) character spans; special: (B, T) 1 for special tokens / padding.
    A token starts a new word when it is not special and there is a gap between its start
    and the previous token's end (or the previous token was special). texts: the B texts the
    offsets point into; whitespace at a token's start is then not part of it. Give them for
    tokenizers whose offsets take in the space before a word (Unigram's "▁capital", ModernBERT's
    "Ġcapital"): without, the space is no gap and a whole sentence reads as one word.
    """
    if texts is not None:
        offsets = np.array(offsets, copy=True)
        for row, text in enumerate(texts):
            for t, (start, end) in enumerate(offsets[row].tolist()):
                while start < end and text[start].isspace():
                    start += 1
                offsets[row, t, 0] = start
    special = special.astype(bool)
    starts, ends = offsets[..., 0], offsets[..., 1]
    prev_ends = np.roll(ends, 1, axis=1)
    prev_ends[:, 0] = -1
    prev_special = np.roll(special, 1, axis=1)
    prev_special[:, 0] = False
    new_word = ~special & ((starts != prev_ends) | prev_special)
    word_ids = np.cumsum(new_word, axis=1)
    word_ids[special] = -1
    return word_ids


def apply_masking(
    input_ids: torch.Tensor,
    special_mask: torch.Tensor,
    policy: MaskingPolicy,
    *,
    mask_token_id: int,
    vocab_size: int,
    generator: torch.Generator,
    word_ids: np.ndarray | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Corrupt a batch. Returns (inputs, labels, fates), each (B, T).

    input_ids: (B, T) token ids; special_mask: (B, T) true for special tokens and padding.
    labels: the original id at selected positions, -100 elsewhere (ignored by the loss).
    fates: NOT_SELECTED / MASKED / RANDOM / KEPT per position.
    word_ids: (B, T) from ``word_ids_from_offsets``; needed when ``policy.whole_word``.
    """
    labels = input_ids.clone()
    inputs = input_ids.clone()
    # float32 named: another visitor's model load sets torch's default dtype (float16 on a GPU)
    # meanwhile, and a float16 rate (0.15 -> 0.1499) draws other masks from the same seed
    probability = torch.full(labels.shape, policy.rate, dtype=torch.float32)  # (B, T)
    if policy.whole_word:
        if word_ids is None:
            raise InputError("Whole-word masking needs the word of each token (word_ids).")
        first_piece = np.zeros(word_ids.shape, dtype=bool)
        first_piece[:, 0] = word_ids[:, 0] >= 0
        first_piece[:, 1:] = (word_ids[:, 1:] >= 0) & (word_ids[:, 1:] != word_ids[:, :-1])
        no_select = torch.from_numpy(~first_piece)
    else:
        no_select = special_mask.bool()
    probability.masked_fill_(no_select, 0.0)
    selected = torch.bernoulli(probability, generator=generator).bool()  # (B, T)
    if policy.whole_word:
        valid = word_ids >= 0
        same = (word_ids[:, :, None] == word_ids[:, None, :]) & valid[:, :, None] & valid[:, None, :]
        selected = torch.from_numpy(np.any(same & selected.numpy()[:, None, :], axis=2))
    labels[~selected] = -100

    fates = torch.zeros(labels.shape, dtype=torch.long)
    fates[selected] = KEPT
    replaced = torch.bernoulli(torch.full(labels.shape, policy.mask, dtype=torch.float32), generator=generator).bool() & selected
    inputs[replaced] = mask_token_id
    fates[replaced] = MASKED
    if policy.mask == 1 or policy.random == 0:
        return inputs, labels, fates
    random_scaled = policy.random / (1 - policy.mask)  # e.g. 0.1 / 0.2 = 0.5 of the rest
    randomised = (
        torch.bernoulli(torch.full(labels.shape, random_scaled, dtype=torch.float32), generator=generator).bool()
        & selected
        & ~replaced
    )
    random_words = torch.randint(vocab_size, labels.shape, dtype=torch.long, generator=generator)
    inputs[randomised] = random_words[randomised]
    fates[randomised] = RANDOM
    return inputs, labels, fates
