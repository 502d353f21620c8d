"""The pre-training heads other than MLM: ALBERT's sentence order, ELECTRA's replaced tokens.

(BERT's next-sentence prediction, P(IsNext) and its loss, is ``arithmetic.pair_loss``.)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..registry import catalogue
from ..registry.spec import ModelSpec
from ..runtime.loading import check_token_count, load_model, require_head
from ..validation import check_int, check_text


@dataclass(frozen=True)
class ReplacedTokens:
    """ELECTRA's discriminator on a text: P(replaced) for every token."""

    model_key: str
    tokens: tuple[str, ...]  # the tokenizer's pieces, specials included
    p_replaced: tuple[float, ...]  # one per token (specials too; read them as such)
    special: tuple[bool, ...]
    text: str  # the text the discriminator read (after any generator swaps)
    swapped: tuple[int, ...] = ()  # positions the generator replaced (its draw differs from the original)
    originals: tuple[str, ...] = ()  # the pieces that were there before, one per swapped position
    # positions where the generator drew the original piece back: not a replacement (ELECTRA
    # labels them "original", as the zoo's training and held-out score do)
    drawn_back: tuple[int, ...] = ()

    def to_dict(self) -> dict:
        from dataclasses import asdict

        return asdict(self)


def check_pair_length(loaded, a: str, b: str) -> None:
    """An ``InputError`` when the pair, specials included, is longer than the model reads: a
    pair head scores the whole pair, so it is refused (as fill-mask and RTD refuse a long text)
    rather than silently cut."""
    n = len(loaded.tokenizer(a, b)["input_ids"])
    check_token_count(loaded, n, "The pair (sentence A, sentence B and the special tokens)")


def pair_probability(spec: ModelSpec, a: str, b: str, head: str) -> float:
    """P(class 0) of a sentence-pair head: "B follows A" (NSP) or "A, B in order" (SOP)."""
    a, b = check_text(a, "first sentence"), check_text(b, "second sentence")
    require_head(spec, head)
    loaded = load_model(spec, head=head)
    check_pair_length(loaded, a, b)
    enc = loaded.tokenizer(a, b, return_tensors="pt", truncation=True).to(loaded.device)
    with torch.inference_mode():
        out = loaded.model(**enc)
        logits = (out.sop_logits if head == "sop" else out.logits)[0].float()  # (2,): index 0 = yes
    return float(logits.softmax(-1)[0])


def sentence_order(model_key: str, a: str, b: str) -> float:
    """P(in order): is "A then B" the original order? Needs ALBERT's SOP head."""
    return pair_probability(catalogue.get_spec(model_key), a, b, "sop")


def detect_replaced(model_key: str, text: str, swap: int = 0, seed: int = 0) -> ReplacedTokens:
    """Per token, the discriminator's P(replaced).

    ``swap`` > 0 first lets the model's generator replace that many randomly chosen
    (non-special) tokens with its own samples, drawn at those positions masked (as in
    ELECTRA's training), so the user sees whether the discriminator finds them. A sample
    equal to the original piece is no replacement: ELECTRA labels it original, so it goes
    to ``drawn_back``, not ``swapped``. swap: 0 to 10 tokens; seed: 0 to 2**31 - 1 (the draw
    of positions and samples). Needs ELECTRA's discriminator (else a ``CapabilityError``); a
    detector trained beside another model's generator (``ModelSpec.generator``) swaps with that one.
    """
    spec = catalogue.get_spec(model_key)
    text = check_text(text)
    require_head(spec, "rtd")
    swap = check_int(swap, "swap (tokens the generator replaces)", 0, 10)
    seed = check_int(seed, "seed", 0, 2**31 - 1)  # torch's generator takes 64 bits at most
    disc = load_model(spec, head="rtd")
    tok = disc.tokenizer
    enc = tok(text, return_tensors="pt", return_special_tokens_mask=True)
    check_token_count(disc, enc["input_ids"].shape[1])
    ids = enc["input_ids"].clone()
    special = enc["special_tokens_mask"][0].bool()
    swapped, originals, drawn_back = [], [], []
    if swap:  # the generator: the model's own MLM head, or the one it was trained beside
        gen = load_model(catalogue.get_spec(spec.generator) if spec.generator else spec, head="mlm")
        candidates = [i for i in range(ids.shape[1]) if not special[i]]
        g = torch.Generator().manual_seed(seed)
        order = torch.randperm(len(candidates), generator=g)[:swap].tolist()
        positions = sorted(candidates[k] for k in order)
        masked = ids.clone()
        masked[0, positions] = tok.mask_token_id
        with torch.inference_mode():
            logits = gen.model(input_ids=masked.to(gen.device),
                               attention_mask=enc["attention_mask"].to(gen.device)).logits[0].float().cpu()
        for pos in positions:
            probs = logits[pos].softmax(-1)
            probs[tok.all_special_ids] = 0
            new = int(torch.multinomial(probs / probs.sum(), 1, generator=g))
            if new == int(ids[0, pos]):
                drawn_back.append(pos)
                continue
            originals.append(tok.convert_ids_to_tokens(int(ids[0, pos])))
            ids[0, pos] = new
            swapped.append(pos)
    with torch.inference_mode():
        logits = disc.model(input_ids=ids.to(disc.device),
                            attention_mask=enc["attention_mask"].to(disc.device)).logits[0].float()
    p = logits.sigmoid().cpu().tolist()
    return ReplacedTokens(
        model_key=model_key,
        tokens=tuple(tok.convert_ids_to_tokens(ids[0].tolist())),
        p_replaced=tuple(float(x) for x in p),
        special=tuple(bool(x) for x in special.tolist()),
        text=tok.decode(ids[0], skip_special_tokens=True),
        swapped=tuple(swapped),
        originals=tuple(originals),
        drawn_back=tuple(drawn_back),
    )
