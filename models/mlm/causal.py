"""The detective made a storyteller: an encoder run with a causal attention mask.

An encoder reads both sides of every word. Adding a *causal* mask (query i may attend to
keys 0..i only, itself and the left) turns the very same weights into a left-to-right
reader, the way a GPT-style decoder reads. Nothing is retrained: the model was trained
bidirectionally and is now denied the right side. The drop in accuracy mixes the lost
right-hand context with a way of reading it was never trained for, so it is not a measure
of how much of its skill came from the right context.

The mask goes in through transformers' own mechanism: every BERT-family model of
transformers 5 builds its 4-D attention mask with ``masking_utils.create_bidirectional_mask``,
which passes a ready 4-D mask through unchanged; the mask here is built by
``masking_utils.eager_mask`` with transformers' ``causal_mask_function`` (0 where a query
may look, the dtype's minimum elsewhere, so the softmax gives exactly 0 there), in the
model's dtype, which both the eager and the SDPA attention accept. ModernBERT takes a dict
with one mask per attention type: its local layers get the causal mask cut to their
window, so they see no more than they did before.

Families whose attention does not take such a mask (DeBERTa's disentangled attention
builds its own from a 2-D mask) raise a ``CapabilityError`` instead of pretending.
"""

from __future__ import annotations

import torch
from transformers.masking_utils import (
    and_masks,
    causal_mask_function,
    eager_mask,
    sliding_window_bidirectional_overlay,
)

from ..errors import CapabilityError
from ..registry import catalogue
from ..registry.spec import ModelSpec

# transformers model types whose forward passes a 4-D mask to every layer as it is.
FOUR_D_MASK_TYPES = frozenset(
    {"bert", "roberta", "xlm-roberta", "camembert", "electra", "distilbert", "albert"}
)


def require_causal(spec: ModelSpec) -> ModelSpec:
    """The spec, or a ``CapabilityError`` saying which models can run causally."""
    if not spec.can("causal"):
        able = catalogue.named_by_availability([s for s in catalogue.SPECS if s.can("causal")])
        raise CapabilityError(
            f"{spec.display_name} ({spec.key}, family {spec.family}) cannot take a causal mask "
            "here: its attention builds its own mask from the padding mask (DeBERTa's "
            "disentangled attention, for one), so a left-only view cannot be imposed honestly. "
            f"Models that can: {able}."
        )
    return spec


def causal_attention_mask(model, attention_mask: torch.Tensor):
    """The causal mask to pass as ``attention_mask`` to ``model`` instead of the 2-D one.

    attention_mask: (B, T) 1 for real tokens, 0 for padding (padding stays masked as a key).
    Returns a (B, 1, T, T) additive float mask in the model's dtype (0 = may look, the
    dtype's minimum = may not), or for ModernBERT a dict of one such mask per attention type.
    """
    config = model.config
    batch, length = attention_mask.shape  # (B, T)
    kwargs = dict(
        batch_size=batch, q_length=length, kv_length=length,
        attention_mask=attention_mask.bool(), dtype=model.dtype, device=attention_mask.device,
    )
    if config.model_type in FOUR_D_MASK_TYPES:
        return eager_mask(mask_function=causal_mask_function, **kwargs)  # (B, 1, T, T)
    if config.model_type == "modernbert":
        window = sliding_window_bidirectional_overlay(config.sliding_window)
        return {
            "full_attention": eager_mask(mask_function=causal_mask_function, **kwargs),
            "sliding_attention": eager_mask(mask_function=and_masks(causal_mask_function, window), **kwargs),
        }
    raise CapabilityError(
        f"A causal mask is not supported for model type {config.model_type!r}: its attention "
        "does not take a ready 4-D mask."
    )


def with_causal_mask(model, inputs: dict) -> dict:
    """``inputs`` with its 2-D ``attention_mask`` replaced by the causal one (a new dict)."""
    ids = inputs["input_ids"]
    padding = inputs.get("attention_mask")
    if padding is None:
        padding = torch.ones_like(ids)
    return {**inputs, "attention_mask": causal_attention_mask(model, padding)}
