"""Attention on packed rows (``models.runtime.packed``): each real token's heads into
attention's (B, H, T, h) layout and back, the three-product attention of short batches with a
written-out softmax for narrow rows, SDPA for longer ones, and rows back into (B, T, d)."""

from typing import Optional

import torch
import torch.nn.functional as F

# torch's CPU softmax over a last dimension shorter than 16 takes a scalar loop: on the
# 2-core Xeon (2026-12-03, one thread, 5,000 rows, one run) 140-246 ns a row at widths
# 8-15 against 16-33 ns at 16-26; the same steps written out (max, subtract, exp, sum,
# divide) took 22-36 ns at 8-15. Fill-mask's texts (~10-18 tokens) and embed's shortest
# batches have such widths in every layer's attention. At 16 and above torch's own kernel.
NARROW_SOFTMAX = 16


def softmax_last(scores: torch.Tensor, narrow: int = NARROW_SOFTMAX) -> torch.Tensor:
    """Softmax over the last dimension, in place on ``scores`` where it is narrower than
    ``narrow`` (its rows each hold a finite entry: every query sees at least its own token)."""
    if scores.size(-1) >= narrow:
        return scores.softmax(-1)
    scores.sub_(scores.amax(-1, keepdim=True)).exp_()
    return scores.div_(scores.sum(-1, keepdim=True))


def split_heads(x: torch.Tensor, rows: Optional[torch.Tensor], batch: int, width: int, heads: int,
                size: int) -> torch.Tensor:
    """(N, H*h) packed rows -> (B, H, T, h), zeros at padding. With padding, each real token's
    heads go straight to their rows of that layout (``rows``: ``_Packed.head_rows``)."""
    if rows is None:  # every token real: a view, then the transpose
        return x.view(batch, width, heads, size).transpose(1, 2)
    full = x.new_zeros([batch * heads * width, size])
    full.index_copy_(0, rows, x.reshape(-1, size))
    return full.view(batch, heads, width, size)


def merge_heads(context: torch.Tensor, rows: Optional[torch.Tensor], batch: int, width: int, heads: int,
                size: int) -> torch.Tensor:
    """(B, H, T, h) -> the real tokens' rows (N, H*h), the way ``split_heads`` came in."""
    if rows is None:
        return context.transpose(1, 2).reshape(batch * width, heads * size)
    return context.reshape(-1, size).index_select(0, rows).view(-1, heads * size)


def math_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: Optional[torch.Tensor],
                   scale: float) -> torch.Tensor:
    """softmax(Q K^T scale + bias) V as three batched products; bias (B*H, T, T): 0 for real
    keys, -inf for padding (None where nothing is padded)."""
    batch, heads, width, size = q.shape
    q3 = q.reshape(batch * heads, width, size)
    kt = k.reshape(batch * heads, width, size).transpose(1, 2)
    if bias is None:
        scores = torch.bmm(q3, kt).mul_(scale)  # (B*H, T, T)
    else:
        scores = torch.baddbmm(bias, q3, kt, alpha=scale)  # (B*H, T, T)
    return torch.bmm(softmax_last(scores), v.reshape(batch * heads, width, size)).view(batch, heads, width, size)


def attention_core(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: Optional[torch.Tensor],
                   key_mask: Optional[torch.Tensor], math: bool, scale: float) -> torch.Tensor:
    """(B, H, T, h) context: the three products (``math``, short batches) or torch's SDPA
    (``key_mask`` (B, 1, 1, T) True for real keys, None without padding)."""
    if math:
        return math_attention(q, k, v, bias, scale)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=key_mask, scale=scale)


def unpack(x: torch.Tensor, index: Optional[torch.Tensor], batch: int, width: int) -> torch.Tensor:
    """(N, d) packed rows -> (B, T, d) with zeros at padding (``index``: the rows' places)."""
    if index is None:  # every token real: the rows are the layout already
        return x.view(batch, width, x.shape[-1])
    full = x.new_zeros([batch * width, x.shape[-1]])
    full.index_copy_(0, index, x)
    return full.view(batch, width, x.shape[-1])
