"""A guess under the model: its spelling in the model's vocabulary, its pieces, its probability.

A guess is written as the model's tokenizer normalises text (BERT uncased: "Paris" and
"PARIS" are both "paris"; a cased model keeps the case) and cut into the tokenizer's pieces
as it would read the word in the blank (with the space before it, when the blank has one).

* one piece: its probability is the model's softmax at the mask;
* several pieces ("tardigrade" -> tar ##di ##grade): the blank becomes one mask per piece
  and the guess scores the product of each piece's probability at its mask, each mask
  predicted in the same forward (as fill-mask predicts several masks);
* a piece the vocabulary lacks (the tokenizer's unknown token), or more pieces than
  fill-mask's ``MAX_MASKS``: no probability, said so (``in_vocabulary`` False).

The model's rank of a guess: where its probability sits among the probabilities the model
gives every single token of its vocabulary at the blank (1: the model's own first choice).
The forwards run through fill-mask's (``mask_logits``) and are kept per process, per
(model, sentence, number of pieces): a round's sentence is read once, however many guesses.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from ..mlm.fill_mask import MAX_MASKS, encode_masks, mask_logits, mask_spans
from ..registry.spec import ModelSpec
from ..runtime.loading import load_model, load_tokenizer


@dataclass(frozen=True)
class GuessScore:
    """One distinct guess of a round, under the model."""

    guess: str  # as the model's vocabulary spells it
    students: int  # how many students gave it
    pieces: tuple[str, ...]  # the tokenizer's pieces, e.g. ("tar", "##di", "##grade")
    probability: float | None  # product of the pieces' probabilities; None outside the vocabulary
    rank: int | None  # 1 + the number of vocabulary tokens the model prefers at the blank

    @property
    def in_vocabulary(self) -> bool:
        return self.probability is not None

    @property
    def nll(self) -> float | None:
        """-log p (nats): this guess's share of the MLM loss."""
        return None if self.probability is None else -math.log(max(self.probability, 1e-45))


def spelling(spec: ModelSpec, guess: str) -> str:
    """The guess as the model's tokenizer normalises text (lower case for an uncased model)."""
    normalizer = getattr(getattr(load_tokenizer(spec), "backend_tokenizer", None), "normalizer", None)
    spelled = normalizer.normalize_str(guess).strip() if normalizer is not None else guess
    return spelled or guess


def score_guess(spec: ModelSpec, text: str, guess: str, students: int) -> GuessScore:
    """``guess`` (already spelled as the vocabulary does) in the blank of ``text``."""
    pieces, probability, rank = _scored(spec, text, guess)
    return GuessScore(guess, students, pieces, probability, rank)


@functools.lru_cache(maxsize=4096)
def _scored(spec: ModelSpec, text: str, guess: str) -> tuple[tuple[str, ...], float | None, int | None]:
    tokenizer = load_tokenizer(spec)
    (start, _), = mask_spans(text)
    spaced = start == 0 or text[start - 1].isspace()
    pieces = tuple(tokenizer.tokenize((" " if spaced else "") + guess))
    unknown = tokenizer.unk_token is not None and tokenizer.unk_token in pieces
    if not pieces or unknown or len(pieces) > MAX_MASKS:
        return pieces, None, None
    ids = tokenizer.convert_tokens_to_ids(list(pieces))
    logp = _log_probs(spec, text, len(pieces))  # (pieces, V)
    total = float(sum(logp[i, t] for i, t in enumerate(ids)))
    single = _log_probs(spec, text, 1)[0]
    return pieces, math.exp(total), 1 + int((single > total).sum())


def model_ranking(spec: ModelSpec, text: str) -> np.ndarray:
    """(V,) the model's log-probabilities of every token at the blank of ``text``."""
    return _log_probs(spec, text, 1)[0]


@functools.lru_cache(maxsize=64)
def _log_probs(spec: ModelSpec, text: str, n_pieces: int) -> np.ndarray:
    """(n_pieces, V) log-softmax at the masks of ``text`` with its blank as ``n_pieces`` masks."""
    start, end = mask_spans(text)[0]
    blanks = text[:start] + "[MASK]" * n_pieces + text[end:]
    loaded = load_model(spec, head="mlm")
    encoded = encode_masks(loaded, blanks, mask_spans(blanks))
    return mask_logits(loaded, encoded).log_softmax(dim=-1).numpy()
