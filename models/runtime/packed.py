"""A BERT body's forward without padding: the real tokens of a batch packed into one matrix.

transformers runs a batch of sentences of unequal lengths padded to the longest, and every
linear layer computes the padded positions too. On a CPU those products are the forward's
time (~88 % for all-MiniLM-L6-v2 in ``embed``, already near the cores' peak), so padding is
time spent for nothing. Here the embeddings, each linear layer, the GELU and the add-and-norm
read only the real tokens, (N, d) for the batch's N real tokens; attention alone needs the
(B, heads, T, head) layout, so the queries, keys and values are scattered into it (padded
keys masked out, as transformers' mask does) and the result gathered back. The same modules
and weights run (and the oneDNN paths of ``models.runtime.onednn`` when open); only the
order of the work changes. Tested against transformers' ``hidden_states`` (within 1e-5).
``packed_last_states_at`` (fill-mask) runs the last layer at a few asked positions only: a
block acts position by position except for attention's keys and values.

Only for the layout it knows: transformers' ``BertModel`` (MiniLM, the mini zoo's BERT) in
eval mode, absolute positions, no decoder, no feed-forward chunking, no hooks on any module
but transformers' own output capture (the attribution and inside-the-encoder views hook
modules: while they do, transformers' path runs).
"""

from __future__ import annotations

from typing import Sequence

import torch
import torch.nn.functional as F


def can_pack(model) -> bool:
    """Whether ``packed_hidden_states`` runs this model (else: transformers' padded forward)."""
    config = getattr(model, "config", None)
    if type(model).__name__ != "BertModel" or config is None or model.training:
        return False
    if (getattr(config, "is_decoder", False) or getattr(config, "chunk_size_feed_forward", 0)
            or getattr(config, "position_embedding_type", "absolute") != "absolute"):
        return False
    if any(_foreign(hook) for m in model.modules()
           for hook in (*m._forward_hooks.values(), *m._forward_pre_hooks.values())):
        return False
    try:
        for layer in model.encoder.layer:
            attn = layer.attention.self
            _ = (attn.query, attn.key, attn.value, attn.num_attention_heads, attn.attention_head_size,
                 layer.attention.output, layer.intermediate, layer.output)
    except AttributeError:
        return False
    return True


def _foreign(hook) -> bool:
    """A hook that is not transformers' own output capture (installed on the blocks the first
    time ``output_hidden_states`` or ``output_attentions`` is asked; it records only inside
    the model's own forward call, so the packed path's direct calls pass through it), nor one
    marked ``packed_pass_through`` (fill-mask's position gathering on the body: it acts only
    inside transformers' forward, within its own block)."""
    return (getattr(hook, "__module__", None) != "transformers.utils.output_capturing"
            and not getattr(hook, "packed_pass_through", False))


def packed_hidden_states(model, input_ids: torch.Tensor, mask: torch.Tensor,
                         layers: Sequence[int]) -> list[torch.Tensor]:
    """The states of the asked layers (0 = embeddings, 1..L the blocks, as transformers'
    ``hidden_states``), each (B, T, d) with zeros at padding.

    input_ids, mask: (B, T), mask 1 for real tokens. Call under ``inference_mode`` (and
    ``onednn_linears`` for the oneDNN path) on a model that ``can_pack``.
    """
    run = _Packed(model, input_ids, mask)
    h = run.h
    packed = [h]
    for layer in model.encoder.layer:
        h = _block(layer, h, run)
        packed.append(h)
    return [_unpack(packed[layer], run.index, run.batch, run.width) for layer in layers]


def packed_last_states_at(model, input_ids: torch.Tensor, mask: torch.Tensor,
                          rows: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
    """(P, d): the last layer's states at the P positions (rows[i], cols[i]) only, equal to
    ``packed_hidden_states(...)[-1][rows, cols]`` (fill-mask's masked positions). Each
    position must be a real token (mask 1 there).

    Every layer but the last runs as ``packed_hidden_states`` does. The last computes keys
    and values for every real token (each asked position attends to its whole text) and
    its queries, attention, output product and feed-forward at the P positions alone:
    everything in a block acts position by position except attention's keys and values.
    """
    run = _Packed(model, input_ids, mask)
    h = run.h
    *below, last = model.encoder.layer
    for layer in below:
        h = _block(layer, h, run)
    flat = rows * run.width + cols  # (P,) positions in the (B*T) layout
    at = flat if run.index is None else torch.searchsorted(run.index, flat)  # their rows of h
    attn = last.attention.self
    heads, size = attn.num_attention_heads, attn.attention_head_size
    mine = h.index_select(0, at)  # (P, d)

    def keys_of(x: torch.Tensor) -> torch.Tensor:  # (N, H*h) -> (P, H, T, h): each position's own text
        return _unpack(x, run.index, run.batch, run.width).index_select(0, rows).view(
            len(rows), run.width, heads, size).transpose(1, 2)

    q = attn.query(mine).view(len(rows), heads, 1, size)  # (P, H, 1, h)
    scores = q @ keys_of(attn.key(h)).transpose(2, 3) * size ** -0.5  # (P, H, 1, T)
    if run.index is not None:  # padding keys take no weight
        scores.masked_fill_(~run.keep.index_select(0, rows)[:, None, None, :], float("-inf"))
    context = (softmax_last(scores) @ keys_of(attn.value(h))).reshape(len(rows), heads * size)  # (P, d)
    mine = last.attention.output(context, mine)
    return last.output(last.intermediate(mine), mine)  # (P, d)


class _Packed:
    """One packed batch's layout, shared by its layers: the real tokens' embeddings ``h``
    (N, d), their rows in the (B*T) layout (``index``, None when no token is padding), their
    heads' rows in attention's (B, H, T) layout (``head_rows``), the key mask and the
    three-product attention's additive mask (``bias``)."""

    def __init__(self, model, input_ids: torch.Tensor, mask: torch.Tensor):
        self.batch, self.width = input_ids.shape
        self.keep = mask.bool()  # (B, T)
        # (N,) real tokens' rows in the (B*T) layout, ascending; None when every token is real
        # (one text, or texts of one length: fill-mask's usual call), so no row is copied in or out
        self.index = None if bool(self.keep.all()) else self.keep.reshape(-1).nonzero().squeeze(1)
        self.key_mask = self.keep[:, None, None, :]  # (B, 1, 1, T): every query sees the real keys only
        h = model.embeddings(input_ids=input_ids).reshape(self.batch * self.width, -1)  # (B*T, d)
        self.h = h if self.index is None else h.index_select(0, self.index)  # (N, d)
        heads = model.encoder.layer[0].attention.self.num_attention_heads
        # (N*H,) where each real token's heads sit in the (B, H, T) layout, row (b*H + j)*T + t
        # for the token at (b, t) and head j; None without padding (a view and a transpose do)
        self.head_rows = None
        if self.index is not None:
            b, t = self.index // self.width, self.index % self.width
            self.head_rows = ((b * heads)[:, None] + torch.arange(heads, device=h.device)).mul_(
                self.width).add_(t[:, None]).reshape(-1)
        self.bias = None  # the three-product attention's additive mask: once per batch, for every layer
        if self.width <= MATH_ATTENTION_MAX_WIDTH:
            self.bias = 0.0 if self.index is None else (  # no padding: nothing to mask
                torch.zeros(self.key_mask.shape, dtype=h.dtype, device=h.device)
                .masked_fill_(~self.key_mask, float("-inf"))
                .expand(self.batch, heads, self.width, self.width)
                .reshape(self.batch * heads, self.width, self.width))  # (B*H, T, T)


def _block(layer, h: torch.Tensor, run: _Packed) -> torch.Tensor:
    """One transformer block on the packed rows (N, d) -> (N, d)."""
    context = _attention(layer.attention.self, h, run)
    h = layer.attention.output(context, h)  # dense, + h, LayerNorm
    return layer.output(layer.intermediate(h), h)  # dense + GELU, dense, + h, LayerNorm


def _attention(attn, h: torch.Tensor, run: _Packed) -> torch.Tensor:
    """Self-attention of the packed rows (N, d) -> their context (N, d), in the (B, H, T, h)
    layout. With padding, each row's heads go straight to their places in that layout and
    come back the same way (one index copy each: ``_Packed.head_rows``)."""
    heads, size = attn.num_attention_heads, attn.attention_head_size
    batch, width, rows = run.batch, run.width, run.head_rows

    def split(x: torch.Tensor) -> torch.Tensor:  # (N, H*h) -> (B, H, T, h), zeros at padding
        if rows is None:  # every token real: a view, then the transpose
            return x.view(batch, width, heads, size).transpose(1, 2)
        full = x.new_zeros(batch * heads * width, size)
        full.index_copy_(0, rows, x.reshape(-1, size))
        return full.view(batch, heads, width, size)

    q, k, v = split(attn.query(h)), split(attn.key(h)), split(attn.value(h))
    if run.bias is not None:
        context = _math_attention(q, k, v, run.bias, size ** -0.5)
    else:
        context = F.scaled_dot_product_attention(q, k, v, attn_mask=None if rows is None else run.key_mask,
                                                 scale=size ** -0.5)  # (B, H, T, h)
    if rows is None:
        return context.transpose(1, 2).reshape(batch * width, heads * size)  # (N, H*h)
    return context.reshape(-1, size).index_select(0, rows).view(-1, heads * size)  # (N, H*h)


# Short sequences: softmax(Q K^T s + mask) V as three batched products is faster on the CPU
# than SDPA's fused kernel, whose per-call set-up dominates at these sizes (measured, one
# run, 12 heads of 32: 0.52 against 0.74 ms for 33 x 20 tokens, 0.70 against 1.26 for 24 x
# 30, 0.82 against 1.24 for 10 x 60; 7.8 against 8.3 for 30 x 100). Its (B, H, T, T) scores
# stay small up to this width; longer batches take SDPA.
MATH_ATTENTION_MAX_WIDTH = 128


def _math_attention(q, k, v, bias: torch.Tensor | float, scale: float) -> torch.Tensor:
    """softmax(Q K^T scale + bias) V; bias (B*H, T, T): 0 for real keys, -inf for padding
    (a float 0.0 where nothing is padded)."""
    batch, heads, width, size = q.shape
    q, kt = q.reshape(batch * heads, width, size), k.reshape(batch * heads, width, size).transpose(1, 2)
    if isinstance(bias, float):
        scores = torch.bmm(q, kt).mul_(scale)  # (B*H, T, T)
    else:
        scores = torch.baddbmm(bias, q, kt, alpha=scale)  # (B*H, T, T)
    return torch.bmm(softmax_last(scores), v.reshape(batch * heads, width, size)).view(batch, heads, width, size)


# torch's CPU softmax over a last dimension shorter than 16 takes a scalar loop: on the
# 2-core Xeon (2026-12-03, one thread, 5,000 rows, one run) 140-246 ns a row at widths
# 8-15 against 16-33 ns at 16-26; the same steps written out (max, subtract, exp, sum,
# divide) took 22-36 ns at 8-15. Fill-mask's texts (~10-18 tokens) and embed's shortest
# batches have such widths in every layer's attention. At 16 and above torch's own kernel.
NARROW_SOFTMAX = 16


def softmax_last(scores: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dimension, in place on ``scores`` where it is narrow (its
    rows each hold a finite entry: every query sees at least its own token)."""
    if scores.shape[-1] >= NARROW_SOFTMAX:
        return scores.softmax(-1)
    scores.sub_(scores.amax(-1, keepdim=True)).exp_()
    return scores.div_(scores.sum(-1, keepdim=True))


def _unpack(x: torch.Tensor, index: torch.Tensor | None, batch: int, width: int) -> torch.Tensor:
    if index is None:  # every token real: the rows are the layout already
        return x.view(batch, width, x.shape[-1])
    full = x.new_zeros(batch * width, x.shape[-1])
    full.index_copy_(0, index, x)
    return full.view(batch, width, x.shape[-1])
