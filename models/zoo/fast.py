"""Faster CPU kernels for training the mini zoo, the same maths (``ZooConfig.fast_kernels``).

Where a training step's time went on the 2-core AMD EPYC (``scripts/zoo_profile.py``,
mini-bert, dropout 0.1, stock path): matrix products about half (MKL's sgemm), then
dropout's ``bernoulli_`` (12 %: torch draws one random number per element), the
attention's softmax, masking and copies, and the rest; and two intra-op threads on one
batch kept the second core mostly idle (one thread: about 6.5 k tokens per CPU-second;
two: 7.9 k tokens/s). What this module changes, each keeping the family's model, loss,
masking and hyper-parameters (the split over threads is in ``models.zoo.train``):

- **Dropout masks from 32-bit random integers.** ``dropout_mask`` keeps an element when a
  uniform 32-bit integer is at or above ``round(p * 2**32)``: a drop rate within 2**-33
  of ``p``, from torch's default generator or the thread's (``dropout_generator``), so
  seeding and a checkpoint still reproduce a run. Same distribution, other draws than
  ``bernoulli_``: a run with dropout is not bit-identical to a stock one; with dropout 0
  it is the same maths.
- **Attention with dropout as explicit products.** With attention dropout (training, p >
  0) torch's SDPA leaves its fused CPU kernel for its "math" path and ``bernoulli_``; the
  ``zoo_fast`` attention (registered with transformers' attention interface, masks as for
  SDPA) computes softmax(Q s K^T + mask) V with ``dropout_mask`` on the probabilities.
  Without dropout (eval, ModernBERT's 0) it calls transformers' SDPA function unchanged.
Linear layers on oneDNN (forward and backward, as an autograd Function over the inference
path's op) were tried and measured no faster than MKL in training here (one thread: MKL's
products already run near the core's peak at these shapes); that path was removed.

AdamW runs its fused CPU kernel (``fused=True``: the same update, one pass over each
tensor) when this path is on: see ``models.zoo.train``.

- **ALBERT's ``gelu_new``** (GELU's tanh approximation) as torch's fused
  ``gelu(approximate="tanh")``: the same function in one kernel, not five (float rounding apart).
- **Under bf16 autocast** (``ZooConfig.autocast="bf16"``, the CPU zoo's recipe since
  2026-11-27): the linear layers' products run in bfloat16 (this CPU's avx512_bf16 does them
  about twice as fast as float32 at the zoo's shapes) and the attention runs as explicit
  products in bfloat16 with its scores, mask, softmax and dropout in float32. torch's
  bfloat16 flash-attention backward on the CPU took a third of a step, SDPA in float32 a
  fifth; the explicit products less.

``fast_kernels(module)`` turns all this on for a module tree within a block on the CPU
(CUDA runs the stock layers), and restores it after.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

import torch
import torch.nn as nn
import torch.nn.functional as F

ATTENTION = "zoo_fast"  # the name the attention is registered under in transformers
_TWO32 = 2 ** 32
_local = threading.local()  # .generator: this thread's dropout generator (the trainer's worker threads)


@contextmanager
def dropout_generator(generator: torch.Generator | None):
    """Within this block (and this thread) ``fast_dropout`` draws from ``generator``."""
    previous = getattr(_local, "generator", None)
    _local.generator = generator
    try:
        yield
    finally:
        _local.generator = previous


def dropout_mask(x: torch.Tensor, p: float) -> torch.Tensor:
    """Inverted dropout's mask for ``x``: 1 / (1 - p) where kept, 0 where dropped."""
    n = x.numel()
    # each int64 draw is two mt19937 outputs: 64 random bits, two elements' worth
    bits = torch.empty((n + 1) // 2, dtype=torch.int64, device=x.device).random_(
        -(2 ** 63), 2 ** 63 - 1, generator=getattr(_local, "generator", None))
    u = bits.view(torch.int32)[:n].view(x.shape)  # uniform on [-2^31, 2^31)
    return torch.where(u >= (round(p * _TWO32) - 2 ** 31), 1.0 / (1.0 - p), 0.0).to(x.dtype)


def fast_dropout(x: torch.Tensor, p: float, training: bool = True) -> torch.Tensor:
    """Inverted dropout (as ``F.dropout``) with its mask from 32-bit random integers."""
    if not training or p == 0.0:
        return x
    if p >= 1.0:
        return x * 0.0
    return x * dropout_mask(x, p)


def _dropout_forward(module: nn.Dropout, x: torch.Tensor) -> torch.Tensor:
    if x.device.type != "cpu" or module.inplace:
        return nn.Dropout.forward(module, x)
    return fast_dropout(x, module.p, module.training)


def _gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    """``gelu_new`` (ALBERT's activation: GELU's tanh approximation, written in transformers as
    five elementwise operations, each with its backward) as torch's one fused kernel."""
    return F.gelu(x, approximate="tanh")


def zoo_attention(module, query, key, value, attention_mask, dropout: float = 0.0, scaling=None,
                  is_causal=None, **kwargs):
    """transformers' SDPA attention, except in training with dropout on the CPU: explicit
    products with ``fast_dropout`` (SDPA would take its math path and ``bernoulli_``)."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    if (query.device.type == "cpu" and query.dtype == torch.bfloat16 and not is_causal
            and not getattr(module, "is_causal", False) and query.shape[1] == key.shape[1]):
        # under bf16 autocast: explicit products in bfloat16, the scores, mask, softmax and
        # dropout in float32 (see the module's docstring)
        return _explicit_attention(query, key, value, attention_mask, dropout if module.training else 0.0,
                                   scaling, probs_dtype=torch.bfloat16)
    if (not module.training or not dropout or query.device.type != "cpu" or is_causal
            or getattr(module, "is_causal", False) or query.shape[1] != key.shape[1]):
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout,
                                      scaling=scaling, is_causal=is_causal, **kwargs)
    return _explicit_attention(query, key, value, attention_mask, dropout, scaling)


def _explicit_attention(query, key, value, attention_mask, dropout: float, scaling, probs_dtype=None):
    """softmax(Q s K^T + mask) V, dropout on the probabilities; the scores, mask and softmax in
    float32 where the products run in a lower ``probs_dtype``."""
    scale = scaling if scaling is not None else query.shape[-1] ** -0.5
    scores = torch.matmul(query * scale, key.transpose(-1, -2)).float()  # scaled on the smaller operand
    if attention_mask is not None:
        if attention_mask.dtype == torch.bool:  # True: attend (SDPA's convention), as an additive mask
            attention_mask = torch.where(attention_mask, 0.0, torch.finfo(scores.dtype).min)
        scores += attention_mask.float()  # in place: neither the product's nor the cast's backward needs it
    probs = torch.softmax(scores, dim=-1)
    if dropout:
        probs = probs * dropout_mask(probs, dropout)
    return torch.matmul(probs.to(probs_dtype or value.dtype), value).transpose(1, 2).contiguous(), None


_registered = False


def _register() -> None:
    global _registered
    if not _registered:
        from transformers import AttentionInterface
        from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

        AttentionInterface.register(ATTENTION, zoo_attention)
        AttentionMaskInterface.register(ATTENTION, sdpa_mask)
        _registered = True


def _configs(module: nn.Module) -> list:
    seen, out = set(), []
    for m in module.modules():
        cfg = getattr(m, "config", None)
        if cfg is not None and id(cfg) not in seen and getattr(cfg, "_attn_implementation", None) == "sdpa":
            seen.add(id(cfg))
            out.append(cfg)
    return out


@contextmanager
def fast_kernels(module: nn.Module, enabled: bool = True):
    """Within this block, ``module``'s dropout and SDPA attention run the fast CPU path.
    Restores the stock forwards and attention after."""
    if not enabled:
        yield False
        return
    _register()
    from transformers.activations import NewGELUActivation

    patched = []
    for m in module.modules():
        if type(m) is nn.Dropout:
            m.forward = _dropout_forward.__get__(m)
            patched.append(m)
        elif type(m) is NewGELUActivation:
            m.forward = _gelu_tanh
            patched.append(m)
    configs = _configs(module)
    for cfg in configs:
        cfg._attn_implementation = ATTENTION
    try:
        yield True
    finally:
        for m in patched:
            del m.forward
        for cfg in configs:
            cfg._attn_implementation = "sdpa"
