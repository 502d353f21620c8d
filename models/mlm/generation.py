"""Generate left to right: with an encoder (append a mask, fill it, repeat, and watch it go
wrong), or with a decoder (read the text, give the next piece: what it was trained for).

A left-to-right language model is trained on p(x_t | x_<t); by the chain rule their
product is p(x), so sampling one token after another samples whole texts. A masked LM is
trained on p(x_i | every other token), with a mask in the middle of real text on both
sides. Asked for the word after a prompt, it sees "[CLS] prompt [MASK] [SEP]": the mask is
the last word of a finished sentence, so it answers with what ends sentences (a full
stop, a closing word), and its conditionals do not chain into a distribution over texts.
This module does exactly that, step by step, so a student sees it; given a decoder key it
runs the same loop on the decoder's next-piece distribution, the storyteller beside it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..decoder.next_token import next_logits, top_predictions
from ..errors import CapabilityError, InputError
from ..registry import catalogue
from ..runtime.loading import check_token_count, load_model, require_head
from ..validation import check_int, check_text
from .fill_mask import MASK_PATTERN
from .masked_head import masked_logits

MAX_STEPS = 30
MAX_CANDIDATES = 50


@dataclass(frozen=True)
class GenerationStep:
    """One step: the text so far, what the model saw, its top candidates, the pick."""

    step: int  # 1, 2, ...
    context: str  # the text before this step (decoded, special tokens left out)
    model_input: tuple[str, ...]  # the tokens the model read, e.g. [CLS] ... [MASK] [SEP] (a decoder: [CLS] ...)
    candidates: tuple[Prediction, ...]  # top-k after leaving out special tokens, best first
    chosen: Prediction  # sampled from the candidates (their probabilities renormalised)
    text: str  # the text after this step


@dataclass(frozen=True)
class GenerationResult:
    """``generate_left_to_right``'s result: every step and the final text."""

    model_key: str
    prompt: str
    seed: int
    top_k: int
    steps: tuple[GenerationStep, ...]
    text: str


def generate_left_to_right(model_key: str, prompt: str, steps: int = 8, seed: int = 0,
                           top_k: int = 5) -> GenerationResult:
    """Append the mask token, fill it, append the guess, repeat ``steps`` times; for a
    decoder key, read the text and append the next piece, ``steps`` times.

    Each step an encoder reads ``[CLS] prompt-so-far [MASK] [SEP]`` (its own special
    tokens and format) with its ordinary bidirectional attention; a decoder reads
    ``[CLS] prompt-so-far`` (its start token, no end token) and gives the piece after it.
    The candidates are its ``top_k`` tokens at the mask (a decoder's: after the text),
    special tokens left out (probabilities are over the
    whole vocabulary); the next token is drawn from them in proportion to their
    probabilities, with a generator seeded by ``seed`` (``top_k=1``: always the best).
    steps: 1 to 30; top_k: 1 to 50; seed: 0 to 2**31 - 1.
    """
    spec = catalogue.get_spec(model_key)
    decoder = spec.is_decoder
    require_head(spec, "clm" if decoder else "mlm")
    prompt = check_text(prompt, "prompt")
    if MASK_PATTERN.search(prompt):  # generation appends its own mask; one inside is never filled
        raise InputError("Generation appends its own mask after the prompt, one token at a time: type the "
                         "prompt without [MASK] (to fill a mask inside a text, use Fill-mask).")
    steps = check_int(steps, "steps", 1, MAX_STEPS)
    seed = check_int(seed, "seed", 0, 2**31 - 1)
    top_k = check_int(top_k, "top_k", 1, MAX_CANDIDATES)
    loaded = load_model(spec, head="clm" if decoder else "mlm")
    tokenizer = loaded.tokenizer
    if not decoder and tokenizer.mask_token_id is None:
        raise CapabilityError(f"{model_key}'s tokenizer has no mask token.")
    enc = tokenizer(prompt, return_special_tokens_mask=True, verbose=False)
    special = enc["special_tokens_mask"]
    if 0 not in special:
        raise InputError("The prompt has no ordinary token: type a few words.")
    first, last = special.index(0), len(special) - special[::-1].index(0)  # content: [first, last)
    lead, ids, trail = enc["input_ids"][:first], enc["input_ids"][first:last], enc["input_ids"][last:]
    tail = [] if decoder else [tokenizer.mask_token_id] + trail  # after the text: nothing, or the mask
    banned = torch.tensor(sorted(set(tokenizer.all_special_ids)), dtype=torch.long)
    generator = torch.Generator().manual_seed(seed)
    done = []
    for step in range(1, steps + 1):
        model_ids = lead + ids + tail  # the model's own format
        check_token_count(loaded, len(model_ids), "The prompt with its generated tokens")
        probs = _step_logits(loaded, model_ids, len(lead) + len(ids), decoder).softmax(-1)  # whole vocabulary
        probs[banned[banned < probs.shape[0]]] = 0.0  # never [SEP], [CLS], [PAD], [MASK], ...
        candidates = top_predictions(tokenizer, probs, top_k)
        scores = torch.tensor([c.score for c in candidates])
        pick = int(torch.multinomial(scores / scores.sum(), 1, generator=generator))
        context = tokenizer.decode(ids)
        ids = ids + [candidates[pick].token_id]
        done.append(GenerationStep(
            step=step, context=context, model_input=tuple(tokenizer.convert_ids_to_tokens(model_ids)),
            candidates=candidates, chosen=candidates[pick], text=tokenizer.decode(ids),
        ))
    return GenerationResult(model_key=model_key, prompt=prompt, seed=seed, top_k=top_k,
                            steps=tuple(done), text=tokenizer.decode(ids))


def _step_logits(loaded, model_ids: list[int], position: int, decoder: bool) -> torch.Tensor:
    """(V,) logits of the next piece: a decoder's after the text, an encoder's at its mask."""
    if decoder:
        return next_logits(loaded, model_ids)
    inputs = torch.tensor([model_ids], device=loaded.device)  # (1, T)
    return masked_logits(loaded.model, {"input_ids": inputs, "attention_mask": torch.ones_like(inputs)},
                         [position])[0].float().cpu()
