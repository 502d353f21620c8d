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

# (NARROW_SOFTMAX and softmax_last: read here by the tests, with MATH_ATTENTION_MAX_WIDTH below)
from .packed_attention import NARROW_SOFTMAX, attention_core, merge_heads, softmax_last, split_heads, unpack


def can_pack(model) -> bool:
    """Whether ``packed_hidden_states`` runs this model (else: transformers' padded forward)."""
    config = getattr(model, "config", None)
    if type(model).__name__ != "BertModel" or config is None or model.training:
        return False
    if (getattr(config, "is_decoder", False) or getattr(config, "chunk_size_feed_forward", 0)
            or getattr(config, "position_embedding_type", "absolute") != "absolute"):
        return False
    if any(_foreign(hook) for m in _modules(model) for hooks in (m._forward_hooks, m._forward_pre_hooks)
           if hooks for hook in hooks.values()):
        return False
    try:
        for layer in model.encoder.layer:
            attn = layer.attention.self
            _ = (attn.query, attn.key, attn.value, attn.num_attention_heads, attn.attention_head_size,
                 layer.attention.output, layer.intermediate, layer.output)
    except AttributeError:
        return False
    return True


def _modules(model):
    """Every module of ``model`` (itself included), as ``model.modules()`` but without its
    names and memo: fill-mask asks ``can_pack`` on every call (~0.3 ms a call that way)."""
    stack = [model]
    while stack:
        module = stack.pop()
        yield module
        stack.extend(child for child in module._modules.values() if child is not None)


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
    blocks = sorted({layer for layer in layers if layer > 0})
    states = dict(zip(blocks, _run_blocks(model, run, max(blocks, default=0), blocks)))  # none past the last asked
    states[0] = run.h
    return [unpack(states[layer], run.index, run.batch, run.width) for layer in layers]


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
    below = len(model.encoder.layer) - 1
    last = model.encoder.layer[-1]
    attn = last.attention.self
    heads, size = attn.num_attention_heads, attn.attention_head_size
    flat = rows * run.width + cols  # (P,) positions in the (B*T) layout
    at = flat if run.index is None else torch.searchsorted(run.index, flat)  # their rows of h
    h = _run_blocks(model, run, below, [below])[0] if below else run.h
    mine = h.index_select(0, at)  # (P, d)

    def keys_of(x: torch.Tensor) -> torch.Tensor:  # (N, H*h) -> (P, H, T, h): each position's own text
        return unpack(x, run.index, run.batch, run.width).index_select(0, rows).view(
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
        # short batches: the three-product attention, with its additive mask made once per
        # batch for every layer (None without padding: nothing to mask); longer ones SDPA
        self.math = self.width <= MATH_ATTENTION_MAX_WIDTH
        self.bias = None
        if self.math and self.index is not None:
            self.bias = (torch.zeros(self.key_mask.shape, dtype=h.dtype, device=h.device)
                         .masked_fill_(~self.key_mask, float("-inf"))
                         .expand(self.batch, heads, self.width, self.width)
                         .reshape(self.batch * heads, self.width, self.width))  # (B*H, T, T)
        self.sdpa_mask = None if self.index is None else self.key_mask  # SDPA's: None without padding


def _run_blocks(model, run: _Packed, count: int, keep: list[int]) -> list[torch.Tensor]:
    """The first ``count`` blocks on the packed rows, module by module; the states after the
    blocks in ``keep`` (1-based, ascending)."""
    h, out = run.h, []
    for number, layer in enumerate(model.encoder.layer[:count], start=1):
        h = _block(layer, h, run)
        if number in keep:
            out.append(h)
    return out


def _block(layer, h: torch.Tensor, run: _Packed) -> torch.Tensor:
    """One transformer block on the packed rows (N, d) -> (N, d), module by module."""
    context = _attention(layer.attention.self, h, run)
    h = layer.attention.output(context, h)  # dense, + h, LayerNorm
    return layer.output(layer.intermediate(h), h)  # dense + GELU, dense, + h, LayerNorm


def _attention(attn, h: torch.Tensor, run: _Packed) -> torch.Tensor:
    """Self-attention of the packed rows (N, d) -> their context (N, d), in the (B, H, T, h)
    layout. With padding, each row's heads go straight to their places in that layout and
    come back the same way (one index copy each: ``_Packed.head_rows``)."""
    heads, size = attn.num_attention_heads, attn.attention_head_size
    shape = (run.head_rows, run.batch, run.width, heads, size)
    q, k, v = (split_heads(x, *shape) for x in (attn.query(h), attn.key(h), attn.value(h)))
    context = attention_core(q, k, v, run.bias, run.sdpa_mask, run.math, size ** -0.5)  # (B, H, T, h)
    return merge_heads(context, *shape)  # (N, H*h)


# Short sequences: softmax(Q K^T s + mask) V as three batched products is faster on the CPU
# than SDPA's fused kernel, whose per-call set-up dominates at these sizes (measured, one
# run, 12 heads of 32: 0.52 against 0.74 ms for 33 x 20 tokens, 0.70 against 1.26 for 24 x
# 30, 0.82 against 1.24 for 10 x 60; 7.8 against 8.3 for 30 x 100). Its (B, H, T, T) scores
# stay small up to this width; longer batches take SDPA.
MATH_ATTENTION_MAX_WIDTH = 128
