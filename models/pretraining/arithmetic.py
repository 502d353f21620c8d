"""The arithmetic of the pre-training losses, shown number by number.

MLM: at one position the model gives a logit z_w to every word w of the vocabulary;
p(w) = exp(z_w) / Σ_v exp(z_v) (the softmax; the sum is the *denominator*, over the whole
vocabulary), and the loss there is −ln p(target) in nats. ``explain_loss`` does it for a
handful of logits (the textbook example), ``explain_masked_position`` for a real position
of the Masking lab, where the denominator runs over the model's whole vocabulary.

NSP: the [CLS] token's final vector goes through BERT's *pooler* (a dense layer and tanh)
and a 2-way classifier; the softmax of its two logits gives P(IsNext), and the loss is the
binary cross-entropy −ln P(true label). ALBERT's SOP is the same path (its pooler, its
``sop_classifier``) with another question: are A, B in their original order (class 0)?
``pair_loss`` scores whichever of the two heads a model has.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ..errors import CapabilityError, InputError
from ..mlm.masked_head import masked_logits
from ..registry import catalogue
from ..runtime.loading import load_model, require_head
from ..validation import as_real, check_bool, check_int, check_text
from .masking_lab import MaskingSimulation, check_selected
from .objective_heads import check_pair_length

# The textbook example: four words' logits, the target "cat".
TEXTBOOK_LOGITS = {"cat": 3.0, "dog": 1.5, "mat": 0.2, "the": 0.1}
TEXTBOOK_TARGET = "cat"
MAX_WORDS = 50


@dataclass(frozen=True)
class LogitRow:
    """One word of the softmax: its logit, exp(logit), and its probability."""

    word: str
    logit: float
    exp: float  # exp(logit)
    p: float  # exp(logit) / denominator


@dataclass(frozen=True)
class LossArithmetic:
    """The softmax and the loss at one position, step by step."""

    target: str
    rows: tuple[LogitRow, ...]  # the words shown, highest logit first
    denominator: float  # Σ exp(logit) over the whole vocabulary (or the words given)
    rest: float  # the part of the denominator from words not shown (0 for the textbook case)
    vocabulary_size: int  # how many words the denominator sums over
    p_target: float  # exp(target's logit) / denominator
    loss: float  # −ln p_target, nats
    position: int | None = None  # the token position, for a real position
    shown: str | None = None  # what the model saw there ([MASK], a random token, the word kept)


def explain_loss(logits: dict[str, float], target: str) -> LossArithmetic:
    """exp of each logit, their sum (the denominator), p(target) and −ln p(target).

    The textbook example: ``explain_loss({"cat": 3.0, "dog": 1.5, "mat": 0.2, "the": 0.1},
    "cat")`` gives p(cat) ≈ 0.75 and a loss of ≈ 0.29 nats.
    """
    if not isinstance(logits, dict) or not logits:
        raise InputError("Give the logits as a dict of word -> number, e.g. {'cat': 3.0, 'dog': 1.5}.")
    if len(logits) > MAX_WORDS:
        raise InputError(f"Give at most {MAX_WORDS} words; got {len(logits)}.")
    values = {}
    for word, value in logits.items():
        if not isinstance(word, str) or not word.strip():
            raise InputError("Every word must be a non-empty string.")
        if not math.isfinite(as_real(value)):  # a NumPy number (a model's own logit) is one too
            raise InputError(f"The logit of {word!r} must be a finite number, not {value!r}.")
        if abs(value) > 700:  # exp overflows a float64 past ~709
            raise InputError(f"The logit of {word!r} is {value}; keep logits between -700 and 700.")
        values[word] = float(value)
    if not isinstance(target, str) or target not in values:
        raise InputError(f"The target {target!r} is not among the words: {', '.join(values)}.")
    exps = {w: math.exp(z) for w, z in values.items()}
    denominator = math.fsum(exps.values())
    rows = tuple(
        LogitRow(w, values[w], exps[w], exps[w] / denominator)
        for w in sorted(values, key=values.get, reverse=True)
    )
    p = exps[target] / denominator
    return LossArithmetic(target=target, rows=rows, denominator=denominator, rest=0.0,
                          vocabulary_size=len(values), p_target=p, loss=-math.log(p))


def explain_masked_position(model_key: str, simulation: MaskingSimulation, epoch: int = 0,
                            position: int | None = None, top: int = 5) -> LossArithmetic:
    """The arithmetic at one selected position of a ``simulate_masking`` epoch.

    The model reads the epoch's corrupted input (as ``masked_lm_loss`` does); shown are the
    ``top`` highest logits and the original token's, exp of each, the denominator summed
    over the whole vocabulary, p(original) and −ln p(original). position: a token position
    that was selected in that epoch (default: the first one).
    """
    if not isinstance(simulation, MaskingSimulation):
        raise InputError("explain_masked_position needs the result of simulate_masking.")
    spec = catalogue.get_spec(model_key)
    require_head(spec, "mlm")
    epoch = check_int(epoch, "epoch", 0, len(simulation.epochs) - 1)
    top = check_int(top, "top", 1, MAX_WORDS)
    chosen = simulation.epochs[epoch]
    check_selected(simulation, epoch)
    selected = {s.position: s for s in chosen.selected}
    if position is None:
        position = chosen.selected[0].position
    position = check_int(position, "position", 0, len(simulation.tokens) - 1)
    if position not in selected:
        raise InputError(
            f"Position {position} was not selected in this epoch; the selected ones are "
            f"{', '.join(map(str, selected))}."
        )
    loaded = load_model(spec, head="mlm")
    inputs = torch.tensor([chosen.shown_ids], device=loaded.device)  # (1, T)
    logits = masked_logits(loaded.model, {"input_ids": inputs, "attention_mask": torch.ones_like(inputs)},
                           [position])[0].cpu().double().numpy()  # (V,) float64 for the sums (on the CPU: MPS has none)
    target_id = selected[position].original_id
    shift = logits.max()  # exp of the shifted logits cannot overflow; shown unshifted below
    exps = np.exp(logits - shift)  # (V,)
    order = np.argsort(-logits)[:top].tolist()
    if target_id not in order:
        order.append(target_id)
    scale, total = math.exp(shift), math.fsum(exps)  # denominator = total * scale
    tokenizer = loaded.tokenizer
    rows = tuple(
        LogitRow(tokenizer.convert_ids_to_tokens(int(i)), float(logits[i]), float(exps[i]) * scale,
                 float(exps[i] / total))
        for i in order
    )
    return LossArithmetic(
        target=selected[position].original, rows=rows, denominator=total * scale,
        rest=total * scale - math.fsum(r.exp for r in rows), vocabulary_size=int(logits.shape[0]),
        p_target=float(exps[target_id] / total),
        loss=float(-(logits[target_id] - shift - math.log(total))),  # −log_softmax: no underflow
        position=position, shown=selected[position].shown,
    )


# --- next-sentence prediction ---------------------------------------------------------------


@dataclass(frozen=True)
class NSPLoss:
    """A sentence-pair head on one pair: the two logits, P(class 0), and the loss against the
    true label. NSP (``head`` "nsp"): class 0 = IsNext, B follows A. SOP ("sop"): class 0 =
    A, B in their original order (transformers' ``sentence_order_label`` 0); then ``is_next``
    reads "in order" and ``p_is_next`` P(in order)."""

    model_key: str
    is_next: bool  # the true label: does B really follow A (SOP: are A, B in order)?
    logits: tuple[float, float]  # (IsNext, NotNext) or (in order, swapped), from the pooled [CLS]
    p_is_next: float  # softmax of the two logits, class 0's share
    loss: float  # binary cross-entropy −ln P(true label), nats
    pooler_check: float  # max |logits − classifier(tanh(dense(h_[CLS])))|: the path, verified
    head: str = "nsp"  # the pair head scored: "nsp" (BERT) or "sop" (ALBERT)


def binary_cross_entropy(p_is_next: float, is_next: bool) -> float:
    """−ln p when the label is IsNext, −ln (1 − p) when it is NotNext (nats)."""
    p = float(p_is_next)
    if not 0.0 <= p <= 1.0:
        raise InputError(f"A probability must be between 0 and 1; got {p}.")
    q = p if is_next else 1.0 - p
    return math.inf if q == 0.0 else -math.log(q)


def pair_loss(model_key: str, a: str, b: str, label: bool = True, head: str | None = None) -> NSPLoss:
    """P(IsNext) for B after A (``p_is_next``) and the loss against ``label``, from the model's
    own sentence-pair head: NSP's for a BERT-style model (``label``: B follows A), SOP's for an
    ALBERT-style one (P(in order); ``label``: A, B are in their original order, as written).
    head: None (the model's own), or "nsp" / "sop" to ask for that head (a model without it is
    a ``CapabilityError``). The score is recomputed by hand from the [CLS] vector (pooler
    dense + tanh, then the classifier), and ``pooler_check`` says how far that is from the
    model's own logits."""
    spec = catalogue.get_spec(model_key)
    if head is not None:
        if head not in ("nsp", "sop"):
            raise InputError(f"Unknown pair head {head!r}; choose \"nsp\", \"sop\" or None (the model's own).")
        return _pair_loss(spec, a, b, check_bool(label, "label"), head)
    if not spec.pair_head:
        having = catalogue.named_by_availability([s for s in catalogue.SPECS if s.can("pair")])
        raise CapabilityError(f"{spec.display_name} ({spec.key}) has no sentence-pair head (BERT's next-sentence "
                              f"or ALBERT's sentence-order prediction). Models that have one: {having}.")
    return _pair_loss(spec, a, b, check_bool(label, "label"), spec.pair_head)


def _pair_loss(spec, a: str, b: str, label: bool, head: str) -> NSPLoss:
    a, b = check_text(a, "first sentence"), check_text(b, "second sentence")
    require_head(spec, head)
    loaded = load_model(spec, head=head)
    check_pair_length(loaded, a, b)
    return pair_arithmetic(loaded.model, loaded.tokenizer, a, b, bool(label), spec.key, head)


def pair_arithmetic(model, tokenizer, a: str, b: str, is_next: bool, model_key: str = "",
                    head: str = "nsp") -> NSPLoss:
    """``pair_loss`` on a loaded model: ``BertForNextSentencePrediction`` for "nsp",
    ``AlbertForPreTraining`` for "sop"."""
    device = next(model.parameters()).device
    enc = tokenizer(a, b, return_tensors="pt", truncation=True).to(device)
    with torch.inference_mode():
        out = model(**enc, output_hidden_states=True)
        logits = (out.sop_logits if head == "sop" else out.logits)[0].float()  # (2,): index 0 = yes
        if logits.ndim != 1:  # BertForPreTraining: (prediction_logits, seq_relationship_logits)
            raise InputError("Pass a model whose output logits are NSP's two scores.")
        cls = out.hidden_states[-1][0, 0]  # (H,): the final vector of [CLS]
        if head == "sop":  # ALBERT: its pooler (dense + tanh), then the SOP classifier
            by_hand = model.sop_classifier.classifier(torch.tanh(model.albert.pooler(cls))).float()
        else:  # BERT: the pooler (dense + tanh), then the NSP classifier
            by_hand = model.cls.seq_relationship(torch.tanh(model.bert.pooler.dense(cls))).float()  # (2,)
    log_p = logits.log_softmax(-1)  # (2,)
    return NSPLoss(
        model_key=model_key, is_next=is_next, logits=(float(logits[0]), float(logits[1])),
        p_is_next=float(log_p[0].exp()), loss=float(-log_p[0 if is_next else 1]),
        pooler_check=float((by_hand - logits).abs().max()), head=head,
    )
