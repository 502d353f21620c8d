"""Generate with an encoder: append a mask, fill it, repeat, and watch it go wrong.

A left-to-right language model is trained on p(x_t | x_<t); by the chain rule their
product is p(x), so sampling one token after another samples whole texts. A masked LM is
trained on p(x_i | every other token), with a mask in the middle of real text on both
sides. Asked for the word after a prompt, it sees "[CLS] prompt [MASK] [SEP]": the mask is
the last word of a finished sentence, so it answers with what ends sentences (a full
stop, a closing word), and its conditionals do not chain into a distribution over texts.
This module does exactly that, step by step, so a student sees it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..errors import CapabilityError, InputError
from ..registry import catalogue
from ..runtime.loading import check_token_count, load_model, require_head
from ..validation import check_int, check_text
from .fill_mask import MASK_PATTERN
from .masked_head import masked_logits
from .results import Prediction

MAX_STEPS = 30
MAX_CANDIDATES = 50


@dataclass(frozen=True)
class GenerationStep:
    """One step: the text so far, what the model saw, its top candidates, the pick."""

    step: int  # 1, 2, ...
    context: str  # the text before this step (decoded, special tokens left out)
    model_input: tuple[str, ...]  # the tokens the model read, e.g. [CLS] ... [MASK] [SEP]
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
    """Append the mask token, fill it, append the guess, repeat ``steps`` times.

    Each step the model reads ``[CLS] prompt-so-far [MASK] [SEP]`` (its own special
    tokens and format) with its ordinary bidirectional attention. The candidates are its
    ``top_k`` tokens at the mask, special tokens left out (probabilities are over the
    whole vocabulary); the next token is drawn from them in proportion to their
    probabilities, with a generator seeded by ``seed`` (``top_k=1``: always the best).
    steps: 1 to 30; top_k: 1 to 50; seed: 0 to 2**31 - 1.
    """
    spec = catalogue.get_spec(model_key)
    require_head(spec, "mlm")
    prompt = check_text(prompt, "prompt")
    if MASK_PATTERN.search(prompt):  # generation appends its own mask; one inside is never filled
        raise InputError("Generation appends its own mask after the prompt, one token at a time: type the "
                         "prompt without [MASK] (to fill a mask inside a text, use Fill-mask).")
    steps = check_int(steps, "steps", 1, MAX_STEPS)
    seed = check_int(seed, "seed", 0, 2**31 - 1)
    top_k = check_int(top_k, "top_k", 1, MAX_CANDIDATES)
    loaded = load_model(spec, head="mlm")
    tokenizer = loaded.tokenizer
    if tokenizer.mask_token_id is None:
        raise CapabilityError(f"{model_key}'s tokenizer has no mask token.")
    enc = tokenizer(prompt, return_special_tokens_mask=True, verbose=False)
    special = enc["special_tokens_mask"]
    if 0 not in special:
        raise InputError("The prompt has no ordinary token: type a few words.")
    first, last = special.index(0), len(special) - special[::-1].index(0)  # content: [first, last)
    lead, ids, trail = enc["input_ids"][:first], enc["input_ids"][first:last], enc["input_ids"][last:]
    banned = torch.tensor(sorted(set(tokenizer.all_special_ids)), dtype=torch.long)
    generator = torch.Generator().manual_seed(seed)
    done = []
    for step in range(1, steps + 1):
        model_ids = lead + ids + [tokenizer.mask_token_id] + trail  # the model's own format
        check_token_count(loaded, len(model_ids), "The prompt with its generated tokens")
        position = len(lead) + len(ids)
        inputs = torch.tensor([model_ids], device=loaded.device)  # (1, T)
        logits = masked_logits(loaded.model, {"input_ids": inputs, "attention_mask": torch.ones_like(inputs)},
                               [position])[0].float().cpu()  # (V,)
        probs = logits.softmax(-1)  # over the whole vocabulary
        probs[banned[banned < probs.shape[0]]] = 0.0  # never [SEP], [CLS], [PAD], [MASK], ...
        scores, top = probs.topk(top_k)  # (k,)
        pick = int(torch.multinomial(scores / scores.sum(), 1, generator=generator))
        candidates = tuple(
            Prediction(token=tokenizer.decode([int(t)]), token_id=int(t), score=float(s),
                       raw_token=tokenizer.convert_ids_to_tokens(int(t)))
            for s, t in zip(scores.tolist(), top.tolist())
        )
        context = tokenizer.decode(ids)
        ids = ids + [candidates[pick].token_id]
        done.append(GenerationStep(
            step=step, context=context, model_input=tuple(tokenizer.convert_ids_to_tokens(model_ids)),
            candidates=candidates, chosen=candidates[pick], text=tokenizer.decode(ids),
        ))
    return GenerationResult(model_key=model_key, prompt=prompt, seed=seed, top_k=top_k,
                            steps=tuple(done), text=tokenizer.decode(ids))
