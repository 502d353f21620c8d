"""The attention part of one forward pass, step by step (``steps.py`` runs the pass): Q, K, V
for one head (after rotation where the family rotates), the scores with their mask, and
DeBERTa's three score terms."""

from __future__ import annotations

import copy
import math

import torch


def as_float(x: torch.Tensor) -> torch.Tensor:
    """A captured tensor without its batch dimension, as float32 on the CPU."""
    return x[0].detach().float().cpu()

def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """(x₁, x₂) -> (-x₂, x₁): the 90° turn of each pair (i, i + d/2) that rotary uses."""
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary position embedding: each pair of dimensions turned by its angle (position × frequency)."""
    return x * cos + rotate_half(x) * sin


def query_key_value(b, family, mods, recorder, head, d_head, n_heads, layer, base):
    cols = slice(head * d_head, (head + 1) * d_head)
    if family == "modernbert-decoder":  # separate projections, then the rotation
        q0, k0, v = (as_float(recorder.output(m))[:, cols] for m in (mods.query, mods.key, mods.value))
        return _rotated(b, family, mods, recorder, q0, k0, v, head, layer, base, d_head, "")
    if mods.qkv is None:
        q = as_float(recorder.output(mods.query, mods.call))[:, cols]
        k = as_float(recorder.output(mods.key, mods.call))[:, cols]
        v = as_float(recorder.output(mods.value, mods.call))[:, cols]
        b.add("query", f"Query, head {head}", "Q = x W_Q + b_Q  (head h: its d_head columns)", "(T, d_head)", q)
        b.add("key", f"Key, head {head}", "K = x W_K + b_K", "(T, d_head)", k)
        b.add("value", f"Value, head {head}", "V = x W_V + b_V", "(T, d_head)", v)
        if family == "deberta-v2":
            factor = 1 + sum(t in mods.attention.pos_att_type for t in ("c2p", "p2c"))
            return q, k, v, math.sqrt(d_head * factor)
        return q, k, v, 1.0 / float(mods.attention.scaling)
    # ModernBERT: one fused matrix, then the rotation of Q and K by position
    qkv = as_float(recorder.output(mods.qkv)).view(-1, 3, n_heads, d_head)
    q0, k0, v = qkv[:, 0, head], qkv[:, 1, head], qkv[:, 2, head]
    return _rotated(b, family, mods, recorder, q0, k0, v, head, layer, base, d_head, " (a third of Wqkv)")


def layer_type(family: str, mods) -> str:
    """"sliding_attention" (a local layer) or "full_attention" (a global one)."""
    if family == "modernbert-decoder":
        return "sliding_attention" if mods.attention.is_sliding else "full_attention"
    return mods.layer.attention_type


def _rotated(b, family, mods, recorder, q0, k0, v, head, layer, base, d_head, where: str):
    """ModernBERT's (and its decoder's) queries and keys turned by position: steps and a check."""
    kind = layer_type(family, mods)
    cos, sin = _rotary(recorder, base.rotary_emb, kind)
    q, k = rotate(q0, cos, sin), rotate(k0, cos, sin)
    b.add("query_before_rotation", f"Query before rotation, head {head}", f"q = x̂ W_Q{where}",
          "(T, d_head)", q0, twist=True)
    b.add("query", f"Query after rotation, head {head}",
          "q'ₜ = qₜ cos(t θ) + rotate_half(qₜ) sin(t θ)", "(T, d_head)", q, twist=True,
          note="Each pair of dimensions (i, i + d_head/2) turns by the angle t·θᵢ, "
               "θᵢ = base^(−2i/d_head): a dot product q'·k' then depends on the distance between tokens.")
    b.add("key_before_rotation", f"Key before rotation, head {head}", "k = x̂ W_K", "(T, d_head)", k0, twist=True)
    b.add("key", f"Key after rotation, head {head}", "k'ₜ = kₜ cos(t θ) + rotate_half(kₜ) sin(t θ)",
          "(T, d_head)", k, twist=True)
    b.add("value", f"Value, head {head}", "V = x̂ W_V (not rotated)", "(T, d_head)", v)
    from transformers.models.modernbert import modeling_modernbert as mm

    theirs_q, _ = mm.apply_rotary_pos_emb(q0[None, None], k0[None, None], cos[None], sin[None])
    b.check("rotary_query", "transformers' apply_rotary_pos_emb on the same query", q, theirs_q[0, 0])
    t = q.shape[0]
    name = "ModernBERT's decoder" if family == "modernbert-decoder" else "ModernBERT"
    b.facts.append(f"{name} layer {layer} is a {'local (sliding-window)' if kind == 'sliding_attention' else 'global'} "
                   f"layer; rotary angle of token 1 in pair 0: {float(torch.atan2(sin[min(1, t - 1), 0], cos[min(1, t - 1), 0])):.4f} rad.")
    return q, k, v, math.sqrt(d_head)


def _rotary(recorder, rotary_emb, layer_type: str):
    for call in recorder.calls.get(id(rotary_emb), []):
        called_with = call.kwargs.get("layer_type", call.args[2] if len(call.args) > 2 else None)
        if called_with == layer_type:
            cos, sin = call.output
            return cos[0].float().cpu(), sin[0].float().cpu()
    raise RuntimeError(f"ModernBERT's rotary embedding was not computed for {layer_type!r} in this pass.")


def _mask(call_mask, t: int) -> torch.Tensor:
    """The model's mask as an additive (T, T) float: 0 where a key is seen, -inf where not."""
    if call_mask is None:
        return torch.zeros(t, t)
    m = call_mask[0]
    m = m[0] if m.dim() == 3 else m
    m = m.float().cpu() if m.dtype != torch.bool else m.cpu()
    if m.dtype == torch.bool or _is_keep_mask(m):
        return torch.where(m.bool(), 0.0, -math.inf)
    return torch.where(m < -1e4, -math.inf, m)  # transformers writes the dtype's minimum


def _is_keep_mask(m: torch.Tensor) -> bool:
    """DeBERTa passes its mask as 1 (seen) / 0 (not seen), not as an additive mask."""
    return bool(((m == 0) | (m == 1)).all()) and bool((m == 1).any())


def attention_scores(b, family, mods, recorder, q, k, head, scale, n_heads, d_head) -> torch.Tensor:
    call = recorder.call(mods.attention, mods.call)
    raw_mask = call.args[mods.mask_arg] if isinstance(mods.mask_arg, int) else call.kwargs.get(mods.mask_arg)
    t = q.shape[0]
    mask = _mask(raw_mask, t)
    raw = q @ k.T
    b.add("raw_scores", "Raw scores", "S = Q Kᵀ  (S[i, j] = qᵢ · kⱼ)", "(T, T)", raw)
    if family == "deberta-v2":
        scores = _deberta_terms(b, mods, recorder, call, head, scale, n_heads)
        formula = "S̃ = c2c + c2p + p2c (each ÷ √(3·d_head)); masked keys −∞"
    else:
        scores = raw / scale
        formula = f"S̃ = S / √d_head (= S / {scale:.3f}); masked keys −∞"
    scaled = scores + mask
    b.add("scaled_scores", "Scaled and masked scores", formula, "(T, T)", scaled)
    if family == "modernbert-decoder":
        _causal_twist(b, mods, mask, t)
    elif family == "modernbert" and mods.layer.attention_type == "sliding_attention":
        window = int(mods.attention.sliding_window) - 1
        allowed = torch.isfinite(mask)
        b.add("local_window", f"Local window (±{window} tokens)", f"key j seen from i only when |i − j| ≤ {window}",
              "(T, T)", allowed.float(), twist=True,
              note="Every other ModernBERT layer attends globally; this one only within its window.")
        b.facts.append(f"ModernBERT local window: ±{window} tokens; {int((~allowed).sum())} of {t * t} "
                       "(query, key) pairs masked in this text.")
    weights = torch.softmax(scaled, dim=-1)
    b.add("weights", f"Attention weights, head {head}", "A = softmax(S̃) over each row (each row sums to 1)",
          "(T, T)", weights)
    return weights


def _causal_twist(b, mods, mask: torch.Tensor, t: int) -> None:
    """A decoder's mask: each token sees itself and the tokens before it (a local layer: only
    the last few), never one after it; the widest look back is read off the mask itself."""
    allowed = torch.isfinite(mask)
    i, j = torch.nonzero(allowed, as_tuple=True)
    back = int((i - j).max()) if len(i) else 0
    local = mods.attention.sliding_window is not None
    b.add("causal_mask", "Causal mask" + (" with a local window" if local else ""),
          "key j seen from i only when j ≤ i" + (f" and i − j < {mods.attention.sliding_window}" if local else ""),
          "(T, T)", allowed.float(), twist=True,
          note="A decoder reads left to right: no token sees the ones after it, so the weights above the "
               "diagonal are 0 and each row can be the prediction of the next piece.")
    b.facts.append(f"Decoder: {int((~allowed).sum())} of {t * t} (query, key) pairs masked in this text; "
                   f"the farthest key any token reads is {back} token(s) back"
                   + (f" (this local layer's window: {mods.attention.sliding_window})." if local else "."))


def _deberta_terms(b, mods, recorder, call, head, scale, n_heads) -> torch.Tensor:
    """DeBERTa's three score terms, each from the module's own code (``disentangled_attention_bias``
    run on a copy of the module that keeps one relative term)."""
    att = mods.attention
    q_full = recorder.output(mods.query, 0)
    k_full = recorder.output(mods.key, 0)
    qh = att.transpose_for_scores(q_full, n_heads)  # (heads, T, d_head), as the module does
    kh = att.transpose_for_scores(k_full, n_heads)
    rel_pos, rel_emb = call.kwargs.get("relative_pos"), call.kwargs.get("rel_embeddings")
    factor = 1 + sum(t in att.pos_att_type for t in ("c2p", "p2c"))
    terms = {"c2c": torch.bmm(qh, kh.transpose(-1, -2)) / scale}
    with torch.inference_mode():
        for term in ("c2p", "p2c"):
            if term in att.pos_att_type and att.relative_attention:
                one = copy.copy(att)  # the same parameters; only the list of terms differs
                one.pos_att_type = [term]
                terms[term] = one.disentangled_attention_bias(qh, kh, rel_pos, rel_emb, factor)
    titles = {"c2c": ("Content → content", "c2c[i, j] = qᵢ · kⱼ / √(3·d_head)"),
              "c2p": ("Content → position", "c2p[i, j] = qᵢ · k^r_δ(i,j) / √(3·d_head)  (δ: relative distance bucket)"),
              "p2c": ("Position → content", "p2c[i, j] = kⱼ · q^r_δ(j,i) / √(3·d_head)")}
    total = 0
    for name, value in terms.items():
        title, formula = titles[name]
        value = value[head].float().cpu()
        b.add(f"deberta_{name}", title, formula, "(T, T)", value, twist=True)
        total = total + value
    if rel_pos is not None:
        b.add("deberta_relative_positions", "Relative positions (bucketed)", "δ(i, j) = bucket(i − j)",
              "(T, T)", rel_pos[0].float().cpu(), twist=True)
    i, j = _quoted_pair(total.shape[0])
    parts = " + ".join(f"{name} {float(terms[name][head, i, j]):+.4f}" for name in terms)
    b.facts.append(f"DeBERTa at (i={i}, j={j}), head {head}: {parts} = {float(total[i, j]):+.4f}.")
    return total


def _quoted_pair(t: int) -> tuple[int, int]:
    """A (query, key) pair to quote: the second token looking at the third (or what exists)."""
    return min(1, t - 1), min(2, t - 1)
