"""A decoder's answer: the distribution of the next piece after a text (the storyteller).

An encoder (the detective) reads every token with both sides in view and fills blanks; a
decoder reads left to right, each position seeing only what came before it (triangular
attention), and is trained to give the next piece. Its text path is the one it trained on:
the tokenizer's leading special token ([CLS] for the mini zoo's decoder, a BOS elsewhere),
then the text's pieces, and no end token (the text goes on from there).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..errors import InputError
from ..mlm.fill_mask import MASK_PATTERN, MAX_TOP_K
from ..mlm.results import Prediction
from ..registry import catalogue
from ..runtime.loading import check_token_count, load_model, require_head
from ..validation import check_int, check_text


@dataclass(frozen=True)
class NextTokenResult:
    """``next_token``'s answer: what the decoder read and its likeliest next pieces."""

    model_key: str
    text: str
    tokens: tuple[str, ...]  # what the model read: its start token, then the text's pieces
    predictions: tuple[Prediction, ...]  # the top_k, best first; softmax over the whole vocabulary
    entropy: float  # of the whole next-piece distribution, in nats (log V: no idea at all)


def prompt_ids(tokenizer, text: str) -> list[int]:
    """``text`` as a decoder reads it in training: the leading special tokens the tokenizer
    adds, then the pieces; the trailing ones (an end token) left off: the text goes on."""
    enc = tokenizer(text, return_special_tokens_mask=True, verbose=False)
    ids, special = list(enc["input_ids"]), list(enc["special_tokens_mask"])
    if 0 not in special:
        raise InputError("The text has no ordinary token: type a few words.")
    last = len(special) - special[::-1].index(0)
    return ids[:last]


@torch.no_grad()
def next_logits(loaded, ids: list[int]) -> torch.Tensor:
    """(V,) float32 logits of the piece after ``ids`` (a decoder loaded with its "clm" head);
    only the last position goes through the vocabulary projection."""
    inputs = torch.tensor([ids], device=loaded.device)  # (1, T)
    out = loaded.model(input_ids=inputs, attention_mask=torch.ones_like(inputs), logits_to_keep=1)
    return out.logits[0, -1].float().cpu()


def top_predictions(tokenizer, probs: torch.Tensor, k: int) -> tuple[Prediction, ...]:
    scores, top = probs.topk(k)
    return tuple(Prediction(token=tokenizer.decode([int(t)]), token_id=int(t), score=float(s),
                            raw_token=tokenizer.convert_ids_to_tokens(int(t)))
                 for s, t in zip(scores.tolist(), top.tolist()))


def next_token(model_key: str, text: str, top_k: int = 5) -> NextTokenResult:
    """The decoder's distribution for the piece that comes after ``text``: its ``top_k``
    pieces (1 to 50) with their probabilities (over the whole vocabulary, special tokens
    included: [SEP] is where the decoder thinks the text ends) and the entropy. An encoder
    key is a ``CapabilityError`` (fill_mask is its task); a mask in the text an InputError."""
    spec = catalogue.get_spec(model_key)
    require_head(spec, "clm")
    text = check_text(text, "text")
    if MASK_PATTERN.search(text):
        raise InputError("A decoder does not fill blanks: type the text up to where it should go on, without "
                         "[MASK] (to fill a blank inside a text, use fill_mask with an encoder).")
    top_k = check_int(top_k, "top_k", 1, MAX_TOP_K)
    loaded = load_model(spec, head="clm")
    ids = prompt_ids(loaded.tokenizer, text)
    check_token_count(loaded, len(ids))
    logits = next_logits(loaded, ids)
    log_probs = logits.log_softmax(-1)
    probs = log_probs.exp()
    return NextTokenResult(
        model_key=spec.key, text=text, tokens=tuple(loaded.tokenizer.convert_ids_to_tokens(ids)),
        predictions=top_predictions(loaded.tokenizer, probs, top_k),
        entropy=float(-(probs * log_probs).sum()),
    )
