"""The packed BERT blocks (``models.runtime.packed``) as TorchScript graphs.

``embed`` runs two batches at once on the CPU, one per worker thread. Eager, each block is
~25 Python calls (modules, views, copies) between the products, and a worker needs Python's
lock for each: on the 2-core Xeon (2026-12-03, the bench's short mix, one run) the two
workers were busy 0.98 s in all against 0.91 s for the same batches one after another on
one thread, while the products alone (the bench's replay) ran at full speed side by side.
Scripted, a batch's blocks are one call into TorchScript's interpreter, which runs the ops
without Python in between and without holding Python's lock (a thread spinning in Python
meanwhile ran at about twice the rate it gets beside a Python-bound thread): the workers
were then busy 0.86 s in all. ``last_at`` does the same for fill-mask's last block at the
masked positions (``packed.packed_last_states_at``). The same ops in the same order on the
same weights: the states equal the module-by-module path's bit for bit (tested), which
stays the path wherever these do not apply (``packed.py``).

Measured (2026-12-03, the 2-core Xeon, one process alternating the two paths, nothing else
running; one run each, not figures to publish): the embed bench's short mix 0.460 s a call
against 0.492, the long mix 1.195 against 1.244; fill-mask on minilm-mlm (one mask) 5.06
against 5.85 ms, and with ``last_at`` as well 4.77 against 4.91 ms (eager last block). The
benches' own three runs are in BENCHMARKS.md, rows 1-2.

These functions are TorchScript's subset of Python (typed, no closures, no module globals),
and they also run as plain Python: the eager path calls the attention helpers directly.
``torch.jit.script`` is deprecated in torch 2.13 in favour of ``torch.compile``, which was
slower here (0.64 against 0.59 s a call on the 2-core Xeon, and its wrapper is Python too); should
scripting fail or go away, the eager path runs (``graph_blocks`` returns None).
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


def unpack(x: torch.Tensor, index: Optional[torch.Tensor], batch: int, width: int) -> torch.Tensor:
    """(N, d) packed rows -> (B, T, d) with zeros at padding (``index``: the rows' places)."""
    if index is None:  # every token real: the rows are the layout already
        return x.view(batch, width, x.shape[-1])
    full = x.new_zeros([batch * width, x.shape[-1]])
    full.index_copy_(0, index, x)
    return full.view(batch, width, x.shape[-1])


def _keys_of(x: torch.Tensor, index: Optional[torch.Tensor], rows: torch.Tensor, batch: int, width: int,
             heads: int, size: int) -> torch.Tensor:
    """(N, H*h) -> (P, H, T, h): each asked position's own text."""
    return unpack(x, index, batch, width).index_select(0, rows).view(rows.size(0), width, heads, size).transpose(1, 2)


def last_at(h: torch.Tensor, at: torch.Tensor, rows: torch.Tensor, index: Optional[torch.Tensor],
            keep: torch.Tensor, batch: int, width: int, heads: int, size: int, w: List[torch.Tensor],
            eps: List[float], onednn: bool) -> torch.Tensor:
    """The last block at a few positions only (``packed.packed_last_states_at``): keys and
    values for every real token of h (N, d), the rest at the rows ``at`` of h, which sit in
    the texts ``rows``; ``keep`` (B, T) the real tokens. w, eps: the block's 16 tensors and
    2 epsilons, as ``blocks``. Returns (P, d)."""
    count = rows.size(0)
    mine = h.index_select(0, at)  # (P, d)
    q = _linear(mine, w[0], w[1], onednn).view(count, heads, 1, size)  # (P, H, 1, h)
    keys = _keys_of(_linear(h, w[2], w[3], onednn), index, rows, batch, width, heads, size)
    scores = torch.matmul(q, keys.transpose(2, 3)) * (float(size) ** -0.5)  # (P, H, 1, T)
    if index is not None:  # padding keys take no weight
        scores.masked_fill_(~keep.index_select(0, rows)[:, None, None, :], float("-inf"))
    values = _keys_of(_linear(h, w[4], w[5], onednn), index, rows, batch, width, heads, size)
    context = torch.matmul(softmax_last(scores), values).reshape(count, heads * size)  # (P, d)
    d = heads * size
    mine = torch.layer_norm(_linear_add(context, mine, w[6], w[7], onednn), [d], w[8], w[9], eps[0])
    inner = _linear_gelu(mine, w[10], w[11], onednn)
    return torch.layer_norm(_linear_add(inner, mine, w[12], w[13], onednn), [d], w[14], w[15], eps[1])


_lock = threading.Lock()
_wanted = True
_compiled = None  # the scripted (``blocks``, ``last_at``), False once scripting failed


def use_torchscript(enabled: bool) -> bool:
    """Turn the scripted blocks on or off (default on); returns the previous setting. Off,
    the packed path runs its blocks eagerly (the tests and benches compare the two)."""
    global _wanted
    previous = _wanted
    _wanted = bool(enabled)
    return previous


def graph_blocks():
    """``blocks`` compiled by TorchScript (once, on first use), or None: turned off, or
    scripting unavailable here (then the eager path runs)."""
    graphs = _graphs()
    return graphs[0] if graphs else None


def graph_last_at():
    """``last_at`` compiled by TorchScript, or None (as ``graph_blocks``)."""
    graphs = _graphs()
    return graphs[1] if graphs else None


def _graphs():
    global _compiled
    if not _wanted:
        return None
    if _compiled is None:
        with _lock:
            if _compiled is None:
                try:
                    with warnings.catch_warnings():  # torch 2.13 marks torch.jit.script deprecated
                        warnings.simplefilter("ignore", DeprecationWarning)
                        _compiled = (torch.jit.script(blocks), torch.jit.script(last_at))
                except Exception:  # a torch without TorchScript, or one that rejects this code
                    _compiled = False
    return _compiled or None
