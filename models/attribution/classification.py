"""Why this class: the attribution methods on a trained classification head.

The same Captum methods and the same deletion check as ``attribute_fill_mask``, with the
scalar being p(class) of a head trained by ``train_classifier`` (sequence tasks). Attention
rollout is left out: a class has no token row to read it from.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .masked_guess import (
    DEFAULT_IG_STEPS,
    MAX_ATTRIBUTION_TOKENS,
    MAX_IG_STEPS,
    ScalarTarget,
    curve_area,
    deletion_scores,
    gradient_x_input,
    integrated_gradients,
    leave_one_out,
    random_deletion,
)
from ..errors import CapabilityError, InputError
from ..registry.catalogue import get_spec
from ..runtime.loading import LoadedModel
from ..tasks.classifier import classifier_forward, head_model_key
from ..validation import check_int, check_text

CLASS_ATTRIBUTION_METHODS = ("gradient_x_input", "integrated_gradients", "leave_one_out")


@dataclass(frozen=True)
class ClassAttribution:
    """Per-token scores of one method for p(class) of a trained head, and how they held up.

    ``deleted`` / ``random``: p(class) with k tokens replaced (the method's top-ranked first;
    the mean of seeded random orders); ``area`` between them over the fraction removed.
    """

    head_id: str
    text: str
    method: str
    tokens: tuple[str, ...]
    scores: tuple[float, ...]
    candidates: tuple[bool, ...]  # neither a special token: ranked and deleted
    label: str  # the class explained
    probability: float  # p(label) on the whole input
    replacement: str  # the token that stands for "removed"
    deleted: tuple[float, ...]
    random: tuple[float, ...]
    area: float
    completeness_delta: float | None = None  # integrated gradients (Captum)
    n_steps: int | None = None


def attribute_classification(head_id: str, text: str, method: str, target: str | None = None,
                             n_steps: int = DEFAULT_IG_STEPS) -> ClassAttribution:
    """Which tokens of ``text`` drove a trained head to ``target`` (default: its prediction)."""
    if method not in CLASS_ATTRIBUTION_METHODS:
        raise InputError(f"Unknown method {method!r} for a head; choose one of: "
                         f"{', '.join(CLASS_ATTRIBUTION_METHODS)}.")
    n_steps = check_int(n_steps, "n_steps", 2, MAX_IG_STEPS)
    text = check_text(text)
    model = classifier_forward(head_id)
    if model.kind != "sequence":
        raise CapabilityError("Attribution explains one class of a sentence: train a sequence task's head "
                              "(a token task gives every word its own label).")
    tokenizer, device = model.tokenizer, model.head.weight.device
    enc = tokenizer(text, return_tensors="pt")
    ids = enc["input_ids"][0]
    if len(ids) > MAX_ATTRIBUTION_TOKENS:
        raise InputError(f"Your text is {len(ids)} tokens long; attribution reads at most "
                         f"{MAX_ATTRIBUTION_TOKENS}. Shorten it.")
    special = tokenizer.get_special_tokens_mask(ids.tolist(), already_has_special_tokens=True)
    candidates = tuple(not s for s in special)
    replacement = tokenizer.mask_token_id if tokenizer.mask_token_id is not None else tokenizer.pad_token_id
    with torch.inference_mode():
        probs = model(input_ids=ids[None].to(device)).float().softmax(-1)[0]
    if target in (None, ""):
        cls = int(probs.argmax())
    elif target in model.labels:
        cls = model.labels.index(target)
    else:
        raise InputError(f"{target!r} is not a label of this head; its labels: {', '.join(model.labels)}.")
    loaded = LoadedModel(get_spec(head_model_key(head_id)), model, tokenizer, device,
                         model.head.weight.dtype, 0)
    scalar = ScalarTarget(loaded, ids, {"attention_mask": enc["attention_mask"]},
                          lambda logits: logits.float().softmax(-1)[:, cls], candidates, replacement)
    delta = None
    if method == "gradient_x_input":
        scores = gradient_x_input(scalar)
    elif method == "integrated_gradients":
        scores, delta = integrated_gradients(scalar, n_steps)
    else:
        scores = leave_one_out(scalar)
    order = sorted((i for i, c in enumerate(candidates) if c), key=lambda i: (-scores[i], i))
    deleted, random = deletion_scores(scalar, order), random_deletion(scalar)
    return ClassAttribution(
        head_id=head_id, text=text, method=method,
        tokens=tuple(tokenizer.convert_ids_to_tokens(ids.tolist())),
        scores=tuple(float(s) for s in np.asarray(scores)), candidates=candidates,
        label=model.labels[cls], probability=float(probs[cls]),
        replacement=tokenizer.convert_ids_to_tokens(replacement),
        deleted=tuple(float(v) for v in deleted), random=tuple(float(v) for v in random),
        area=curve_area(deleted, random), completeness_delta=delta,
        n_steps=n_steps if method == "integrated_gradients" else None,
    )
