"""The packed BERT blocks (``models.runtime.packed``) as one TorchScript graph.

``embed`` runs two batches at once on the CPU, one per worker thread. Eager, each block is
~25 Python calls (modules, views, copies) between the products, and both workers take
Python's lock for every one: on the 2-core Xeon the two workers together were busy ~8 %
longer than the same batches one after another, and the products alone (``bench``'s
replay) ran at full speed side by side. Scripted, a batch's blocks run as one call into
TorchScript's interpreter, which holds no Python lock while it runs. The same ops in the
same order on the same weights: the states are equal bit for bit to the eager path's
(tested), which stays the path wherever this one does not apply (``packed.py``).

Measured (2026-12-03, the 2-core Xeon, one process alternating the two paths 10 rounds,
nothing else running; one run each, not figures to publish): the bench's short mix 0.445 s
a call against 0.486, the long mix 1.210 against 1.272 (5-8 % less time). The bench's own
three runs are in BENCHMARKS.md, row 2.

These functions are TorchScript's subset of Python (typed, no closures), and they also run
as plain Python: the eager path calls the attention helpers directly. ``torch.jit.script``
is deprecated in torch 2.13 in favour of ``torch.compile``, which was slower here (session
31: 0.64 against 0.59 s, its wrapper is Python too); should scripting fail or go away, the
eager path runs (``graph_blocks`` returns None).
"""

import threading
import warnings
from typing import List, Optional, Union

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
    ``narrow`` (its rows each hold a finite entry: every query sees at least its own token).
    (TorchScript reads no module globals, hence the argument.)"""
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


def _linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, onednn: bool) -> torch.Tensor:
    if onednn:  # models.runtime.onednn's op, on its (prepacked) weight
        return torch.ops.mkldnn._linear_pointwise(
            x, weight, bias, "none", torch.jit.annotate(List[Optional[Union[int, float, complex]]], []), "")
    return F.linear(x, weight, bias)


def _linear_gelu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, onednn: bool) -> torch.Tensor:
    if onednn:  # exact (erf) GELU fused into the product, as onednn's BertIntermediate path
        return torch.ops.mkldnn._linear_pointwise(
            x, weight, bias, "gelu", torch.jit.annotate(List[Optional[Union[int, float, complex]]], []), "none")
    return F.gelu(F.linear(x, weight, bias))


def _linear_add(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
                onednn: bool) -> torch.Tensor:
    if onednn:  # the residual add fused into the product
        return torch.ops.mkldnn._linear_pointwise(x, residual, weight, bias, "add")
    return F.linear(x, weight, bias) + residual


def blocks(h: torch.Tensor, weights: List[torch.Tensor], eps: List[float], rows: Optional[torch.Tensor],
           bias: Optional[torch.Tensor], key_mask: Optional[torch.Tensor], math: bool, batch: int, width: int,
           heads: int, size: int, onednn: bool, keep: List[int]) -> List[torch.Tensor]:
    """Runs ``len(eps) // 2`` BERT blocks on the packed rows h (N, d); returns the states after
    the blocks numbered in ``keep`` (1 = after the first block, as transformers'
    ``hidden_states``), in that order. Per block: Q, K, V, attention, output product + add +
    LayerNorm, intermediate product + GELU, output product + add + LayerNorm (eps[2i],
    eps[2i + 1]): BertLayer's steps in eval mode. ``weights``: 16 a block, in the order
    query, key, value, attention output (weight, bias each), its LayerNorm's (weight, bias),
    intermediate, output, its LayerNorm's (``packed._graph_weights``)."""
    scale = float(size) ** -0.5
    width_d = heads * size
    count = len(eps) // 2
    per = len(weights) // count
    out: List[torch.Tensor] = []
    for i in range(count):
        w = weights[per * i: per * (i + 1)]
        q = split_heads(_linear(h, w[0], w[1], onednn), rows, batch, width, heads, size)
        k = split_heads(_linear(h, w[2], w[3], onednn), rows, batch, width, heads, size)
        v = split_heads(_linear(h, w[4], w[5], onednn), rows, batch, width, heads, size)
        context = merge_heads(attention_core(q, k, v, bias, key_mask, math, scale), rows, batch, width, heads, size)
        h = torch.layer_norm(_linear_add(context, h, w[6], w[7], onednn), [width_d], w[8], w[9], eps[2 * i])
        inner = _linear_gelu(h, w[10], w[11], onednn)
        h = torch.layer_norm(_linear_add(inner, h, w[12], w[13], onednn), [width_d], w[14], w[15], eps[2 * i + 1])
        if i + 1 in keep:
            out.append(h)
    return out


_lock = threading.Lock()
_wanted = True
_compiled = None  # the scripted ``blocks``, False once scripting failed


def use_graph(enabled: bool) -> bool:
    """Turn the scripted blocks on or off (default on); returns the previous setting. Off,
    the packed path runs its blocks eagerly (the tests and benches compare the two)."""
    global _wanted
    previous = _wanted
    _wanted = bool(enabled)
    return previous


def graph_blocks():
    """``blocks`` compiled by TorchScript (once, on first use), or None: turned off, or
    scripting unavailable here (then the eager path runs)."""
    global _compiled
    if not _wanted:
        return None
    if _compiled is None:
        with _lock:
            if _compiled is None:
                try:
                    with warnings.catch_warnings():  # torch 2.13 marks torch.jit.script deprecated
                        warnings.simplefilter("ignore", DeprecationWarning)
                        _compiled = torch.jit.script(blocks)
                except Exception:  # a torch without TorchScript, or one that rejects this code
                    _compiled = False
    return _compiled or None
