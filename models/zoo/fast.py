"""Faster CPU kernels for training the mini zoo, the same maths (``ZooConfig.fast_kernels``).

Where a training step's time went on the 2-core AMD EPYC (``python -m scripts.zoo profile``,
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

- **ModernBERT's rotary positions under bf16 autocast** (``_RotaryQKV``): transformers'
  ``apply_rotary_pos_emb`` casts each query and key to float32 twice, concatenates and
  records a dozen autograd nodes over 16-wide half rows; one function with its own backward does the same
  float32 arithmetic over long rows and writes the layout the attention's products read.
- **The MLM loss from one softmax** (``cross_entropy``, the trainer's ``Objective`` within this
  block, DistilBERT apart): torch's cross-entropy runs five operations over the (masked
  positions x 8,192) logits and takes the exponential twice; this runs four and takes it once.

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
    if scale != 1.0:  # 1.0: the queries came scaled (ModernBERT's fused rotary below)
        query = query * scale  # scaled on the smaller operand
    scores = torch.matmul(query, key.transpose(-1, -2)).float()
    if attention_mask is not None:
        if attention_mask.dtype == torch.bool:  # True: attend (SDPA's convention), as an additive mask
            attention_mask = torch.where(attention_mask, 0.0, torch.finfo(scores.dtype).min)
        scores += attention_mask.float()  # in place: neither the product's nor the cast's backward needs it
    probs = torch.softmax(scores, dim=-1)
    if dropout:
        probs = probs * dropout_mask(probs, dropout)
    return torch.matmul(probs.to(probs_dtype or value.dtype), value).transpose(1, 2).contiguous(), None


class _RotaryQKV(torch.autograd.Function):
    """ModernBERT's fused projection (B, T, 3 x heads x d), in bfloat16, to the attention's
    (3, B, heads, T, d): rotary positions on the queries and keys, the values as they are.

    transformers' ``apply_rotary_pos_emb`` (x cos + rotate_half(x) sin) computes in float32
    from the same bfloat16 inputs: so does this, rounding once to bfloat16; the queries also
    take the attention's scale in float32 (transformers rounds them, then the attention scales
    them again in bfloat16). Where transformers casts each of the queries and keys to float32
    twice, concatenates, multiplies, adds, casts back and records a dozen autograd nodes, this
    gathers both, as float32, into one buffer laid out half by half (so each product runs over
    long contiguous rows, not 16-wide ones), rotates them in four operations and writes the
    result in the layout the attention's products read. The backward is the transpose: for
    (o1, o2) = (x1 c1 - x2 s1, x2 c2 + x1 s2), (dx1, dx2) = (g1 c1 + g2 s2, g2 c2 - g1 s1).
    """

    @staticmethod
    def forward(ctx, qkv, cos, sin, heads: int, scale: float):
        B, T, _ = qkv.shape
        d = qkv.shape[-1] // (3 * heads)
        h = d // 2
        factor = torch.tensor([scale, 1.0], dtype=torch.float32).view(1, 2, 1, 1, 1, 1)  # queries, keys
        # (half, query/key, 1 or B, 1, T, h), as the gathered inputs below
        c = cos.float().view(-1, T, 2, h).permute(2, 0, 1, 3)[:, None, :, None] * factor
        s = sin.float().view(-1, T, 2, h).permute(2, 0, 1, 3)[:, None, :, None] * factor
        out = qkv.new_empty(3, B, heads, T, d)
        x = qkv.view(B, T, 3, heads, 2, h)
        xf = torch.empty(2, 2, B, heads, T, h, dtype=torch.float32)  # (half, query/key, B, heads, T, h)
        xf.copy_(x[:, :, :2].permute(4, 2, 0, 3, 1, 5))
        _rotate(xf, c, s, out[:2].view(2, B, heads, T, 2, h).permute(4, 0, 1, 2, 3, 5), transpose=False)
        out[2].copy_(x[:, :, 2].flatten(-2).transpose(1, 2))
        ctx.save_for_backward(c, s)
        return out[0], out[1], out[2]  # three outputs: their gradients need no stacking

    @staticmethod
    def backward(ctx, gq, gk, gv):
        c, s = ctx.saved_tensors
        B, heads, T, d = gq.shape
        h = d // 2
        xf = torch.empty(2, 2, B, heads, T, h, dtype=torch.float32)
        xf[:, 0].copy_(gq.view(B, heads, T, 2, h).permute(3, 0, 1, 2, 4))
        xf[:, 1].copy_(gk.view(B, heads, T, 2, h).permute(3, 0, 1, 2, 4))
        g = gq.new_empty(B, T, 3, heads, 2, h)
        _rotate(xf, c, s, g[:, :, :2].permute(4, 2, 0, 3, 1, 5), transpose=True)
        g[:, :, 2].flatten(-2).copy_(gv.transpose(1, 2))
        return g.view(B, T, -1), None, None, None, None


def _rotate(xf, c, s, out, transpose: bool) -> None:
    """out = (x1 c1 - x2 s1, x2 c2 + x1 s2) (the rotation), or with ``transpose``
    (x1 c1 + x2 s2, x2 c2 - x1 s1), for x, c, s, out indexed (half, ...): ``xf`` a contiguous
    float32 buffer (each product then runs over long rows), the result written in ``out``'s dtype."""
    sign = -1.0 if transpose else 1.0
    torch.addcmul(xf[0] * c[0], xf[1], s[1] if transpose else s[0], value=-sign, out=out[0])
    torch.addcmul(xf[1] * c[1], xf[0], s[0] if transpose else s[1], value=sign, out=out[1])


def _modernbert_attention(self, hidden_states, position_embeddings=None, attention_mask=None, **kwargs):
    """``ModernBertAttention.forward`` under bf16 autocast on the CPU: the rotary positions as
    ``_RotaryQKV``, then the explicit bfloat16 attention (the mask carries the local window, as
    for SDPA). Elsewhere the stock forward."""
    if not (hidden_states.device.type == "cpu" and torch.is_autocast_enabled("cpu")
            and torch.get_autocast_dtype("cpu") == torch.bfloat16):
        return type(self).forward(self, hidden_states, position_embeddings=position_embeddings,
                                  attention_mask=attention_mask, **kwargs)
    B, T = hidden_states.shape[:2]
    qkv = self.Wqkv(hidden_states)
    cos, sin = position_embeddings
    q, k, v = _RotaryQKV.apply(qkv, cos, sin, self.config.num_attention_heads, self.head_dim ** -0.5)
    out, _ = _explicit_attention(q, k, v, attention_mask, self.attention_dropout if self.training else 0.0, 1.0,
                                 probs_dtype=torch.bfloat16)
    return self.out_drop(self.Wo(out.reshape(B, T, -1))), None


class _CrossEntropy(torch.autograd.Function):
    """``F.cross_entropy(logits.float(), targets)`` (the mean; no ignored targets) with one
    softmax. torch's runs five operations over the (N, V) logits (the cast to float32, the
    log-softmax, the NLL's zero-filled gradient, the log-softmax's backward, which takes the
    exponential again, the gradient's cast back); this runs four: the cast, the softmax, the
    gradient (softmax - one-hot) x g / N and its cast to the logits' dtype. The loss per row is
    -log softmax at the target; a row whose target's probability underflows float32 (below
    1e-30) takes log-sum-exp - logit instead, as torch's does for every row."""

    @staticmethod
    def forward(ctx, logits, targets):
        z = logits.float()
        p = torch.softmax(z, dim=-1)
        t = targets[:, None]
        pt = p.gather(1, t).squeeze(1)
        per_row = -torch.log(pt)
        tiny = pt < 1e-30
        if bool(tiny.any()):
            per_row[tiny] = torch.logsumexp(z[tiny], -1) - z[tiny].gather(1, t[tiny]).squeeze(1)
        n = logits.shape[0]
        p.scatter_add_(1, t, torch.full(t.shape, -1.0))
        ctx.save_for_backward(p)  # the gradient of the sum, in float32
        ctx.n, ctx.dtype = n, logits.dtype
        return per_row.sum() / n

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g):
        (p,) = ctx.saved_tensors
        return (p * (g / ctx.n)).to(ctx.dtype), None


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The zoo's MLM loss on the fast path (see ``_CrossEntropy``); elsewhere torch's."""
    if logits.device.type != "cpu" or targets.numel() == 0:
        return F.cross_entropy(logits.float(), targets)
    return _CrossEntropy.apply(logits, targets)


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
    from transformers.models.modernbert.modeling_modernbert import ModernBertAttention

    patched = []
    for m in module.modules():
        if type(m) is nn.Dropout:
            m.forward = _dropout_forward.__get__(m)
            patched.append(m)
        elif type(m) is NewGELUActivation:
            m.forward = _gelu_tanh
            patched.append(m)
        elif type(m) is ModernBertAttention:
            m.forward = _modernbert_attention.__get__(m)
            patched.append(m)
    losses = [m for m in module.modules() if getattr(m, "fast_loss", None) is False]  # the trainer's Objective
    for m in losses:
        m.fast_loss = True
    configs = _configs(module)
    for cfg in configs:
        cfg._attn_implementation = ATTENTION
    try:
        yield True
    finally:
        for m in patched:
            del m.forward
        for m in losses:
            m.fast_loss = False
        for cfg in configs:
            cfg._attn_implementation = "sdpa"
