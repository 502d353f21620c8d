"""One forward pass of a real encoder, step by step, every number checked against the model.

``forward_steps`` runs the model once with forward hooks on its own modules
(``capture.Recorder``; which modules, per family: ``families``) and returns, for one layer
and one head, each step the data goes through: the layer's input, Q, K and V, the scores,
the weights, the weighted values, the heads concatenated, the output projection, the
residual sums and LayerNorms, the feed-forward's hidden activation and the layer's output;
with an MLM head, the head's steps at one position down to its top-k. What the hooks see
is what the model computed; what is recomputed here (the scores and the softmax, which
the eager attention function computes between modules, and the sums) is compared with
what the model returned (``output_attentions``, ``hidden_states``, the logits) and each
comparison is returned as a ``StepCheck``.

The attention scores exist only in transformers' "eager" attention: the default SDPA
kernel computes softmax(QKᵀ/√d_head)V in one fused call and never builds them. The model is
therefore loaded with ``attn_implementation="eager"`` (same weights, same outputs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from ..registry import catalogue
from ..errors import InputError
from ..mlm.fill_mask import MASK_PATTERN
from ..runtime.capture import Recorder
from ..runtime.loading import RESULT_CACHES, ModelCache, check_token_count, get_device, load_model, require_head
from ..validation import check_bool, check_int, check_texts
from .families import ROTARY, base_model, embedding_projection, head_modules, layer_modules, num_heads, num_layers
from .attention_steps import as_float as _f, attention_scores, query_key_value

DEFAULT_TOP_K = 5
EAGER_NOTE = ("Loaded with attn_implementation=\"eager\": transformers' default (SDPA) computes "
              "attention in one fused kernel and never builds the scores or the weights.")


@dataclass(frozen=True, eq=False)
class Step:
    """One step of the pass: its value for the chosen layer and head."""

    name: str  # stable key, e.g. "query", "weights", "deberta_c2p"
    title: str
    formula: str  # the one formula this step applies
    shape: str  # symbolic, e.g. "(T, d_head)"
    value: np.ndarray  # float32 (ints for position ids); masked scores are -inf
    family: str = ""  # "" for every encoder; the family's name for its own twist
    note: str = ""


@dataclass(frozen=True)
class StepCheck:
    """A recomputed step against what the model itself returned."""

    name: str
    against: str  # what the model returned, e.g. "output_attentions[1][head 0]"
    max_abs_error: float
    tolerance: float

    @property
    def ok(self) -> bool:
        return bool(self.max_abs_error <= self.tolerance)


@dataclass(frozen=True, eq=False)
class ForwardSteps:
    """``forward_steps``' result."""

    model_key: str
    family: str
    network: str  # which network ran, e.g. "the MLM model" or "ELECTRA's generator"
    text: str
    text_pair: str | None
    tokens: tuple[str, ...]
    token_ids: tuple[int, ...]
    layer: int
    head: int
    position: int  # the chosen token (its row; the head's steps are at this position)
    num_layers: int
    num_heads: int
    d_model: int
    d_head: int
    d_ff: int
    scale: float  # the number the scores are divided by (√d_head; DeBERTa: √(3·d_head))
    attn_implementation: str
    steps: tuple[Step, ...]
    head_steps: tuple[Step, ...]  # empty without an MLM head
    predictions: tuple[tuple[str, float], ...]  # the head's top-k at ``position`` (token, probability)
    layer_norms: np.ndarray  # (layers + 1, T): ‖hidden_states[i][t]‖, 0 = the embeddings
    checks: tuple[StepCheck, ...]
    facts: tuple[str, ...]  # the family's twists, in words, with their numbers
    notes: tuple[str, ...] = field(default=())

    def step(self, name: str) -> Step:
        for s in (*self.steps, *self.head_steps):
            if s.name == name:
                return s
        names = ", ".join(s.name for s in (*self.steps, *self.head_steps))
        raise InputError(f"No step {name!r} for {self.model_key}; its steps are: {names}.")

    @property
    def all_steps(self) -> tuple[Step, ...]:
        return self.steps + self.head_steps

    @property
    def nbytes(self) -> int:
        return int(sum(s.value.nbytes for s in self.all_steps) + self.layer_norms.nbytes)


RESULT_CACHE = ModelCache(64 * 2**20, part="inside steps")
RESULT_CACHES.append(RESULT_CACHE)


# --- entry point ----------------------------------------------------------------------------


def forward_steps(model_key: str, text: str, text_pair: str | None = None, layer: int = 0,
                  head: int = 0, position: int | None = None, mlm_head: bool | None = None,
                  top_k: int = DEFAULT_TOP_K) -> ForwardSteps:
    """One forward pass of ``model_key`` on ``text`` (or a pair), step by step.

    layer, head: which layer and head to open (0-based). position: the chosen token (default:
    the first mask, else the first token that is not special). mlm_head: run the MLM head's
    steps too (default: when the model has one; True on a model without one is a
    ``CapabilityError``). Bad input (a layer, head or position out of range, a text over the
    model's limit) is an ``InputError`` naming the valid range.
    """
    spec = catalogue.get_spec(model_key)
    text, text_pair = check_texts(text, text_pair)
    with_head = spec.has_mlm_head if mlm_head is None else check_bool(mlm_head, "mlm_head")
    if with_head:
        require_head(spec, "mlm")
    top_k = check_int(top_k, "top_k", 1, 50)
    loaded = load_model(spec, "mlm" if with_head else "base", attn_implementation="eager")
    inputs, ids = _encode(loaded, text, text_pair)
    n_layers, n_heads = num_layers(loaded.model), num_heads(loaded.model)
    layer = check_int(layer, "layer", 0, n_layers - 1)
    head = check_int(head, "head", 0, n_heads - 1)
    if position is None:
        position = _default_position(loaded.tokenizer, ids)
    position = check_int(position, "position (token index)", 0, len(ids) - 1)
    key = (model_key, text, text_pair, layer, head, position, with_head, top_k, str(get_device()))
    return RESULT_CACHE.get(key, lambda: _run(loaded, inputs, ids, text, text_pair, layer, head,
                                              position, with_head, top_k))


def _encode(loaded, text: str, text_pair: str | None):
    tokenizer = loaded.tokenizer
    if tokenizer.mask_token:
        text = MASK_PATTERN.sub(lambda _: tokenizer.mask_token, text)
        text_pair = text_pair and MASK_PATTERN.sub(lambda _: tokenizer.mask_token, text_pair)
    enc = tokenizer(text, text_pair, truncation=False, return_tensors="pt", verbose=False)
    ids = enc["input_ids"][0].tolist()
    check_token_count(loaded, len(ids))
    inputs = {k: v.to(loaded.device) for k, v in enc.items() if k in tokenizer.model_input_names}
    return inputs, ids


def _default_position(tokenizer, ids: list[int]) -> int:
    if tokenizer.mask_token_id is not None and tokenizer.mask_token_id in ids:
        return ids.index(tokenizer.mask_token_id)
    special = set(tokenizer.all_special_ids)
    return next((i for i, t in enumerate(ids) if t not in special), 0)


# --- the pass -----------------------------------------------------------------------------


def _np(x: torch.Tensor) -> np.ndarray:
    out = x.detach().float().cpu().numpy()
    out.flags.writeable = False
    return out


def _err(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.detach().float().cpu(), b.detach().float().cpu()
    finite = torch.isfinite(a) & torch.isfinite(b)
    if not torch.equal(torch.isfinite(a), torch.isfinite(b)):
        return math.inf
    return float((a[finite] - b[finite]).abs().max()) if finite.any() else 0.0


class _Builder:
    """Collects steps, checks and facts while one family's layer is read."""

    def __init__(self, family: str, tolerance: float):
        self.family, self.tolerance = family, tolerance
        self.steps: list[Step] = []
        self.checks: list[StepCheck] = []
        self.facts: list[str] = []

    def add(self, name, title, formula, shape, value, twist=False, note=""):
        array = value if isinstance(value, np.ndarray) else _np(value)
        self.steps.append(Step(name, title, formula, shape, array, self.family if twist else "", note))

    def check(self, name, against, ours, theirs, tolerance=None):
        self.checks.append(StepCheck(name, against, _err(ours, theirs), tolerance or self.tolerance))


def _run(loaded, inputs, ids, text, text_pair, layer, head, position, with_head, top_k) -> ForwardSteps:
    model, tokenizer = loaded.model, loaded.tokenizer
    family = model.config.model_type.replace("_", "-")
    mods = layer_modules(family, model, layer)
    heads = head_modules(family, model) if with_head else None
    base = base_model(model)
    projection_in = embedding_projection(family, model)
    recorder = Recorder().watch(
        mods.layer, mods.attention, mods.query, mods.key, mods.value, mods.qkv, mods.projection,
        mods.attn_norm, mods.ffn_in, mods.ffn_act, mods.ffn_out, mods.out_norm, mods.pre_attn_norm,
        base.embeddings, getattr(base.embeddings, "position_embeddings", None),
        getattr(base.embeddings, "word_embeddings", None), projection_in,
        getattr(base, "rotary_emb", None), getattr(base, "final_norm", None),
        *((heads.dense, heads.norm, heads.decoder) if heads else ()),
    )
    with recorder, torch.inference_mode():
        out = model(**inputs, output_hidden_states=True, output_attentions=True)
    tolerance = 1e-4 if loaded.dtype == torch.float32 else 3e-2
    b = _Builder(family, tolerance)
    n_heads = num_heads(model)
    d_model = int(_f(recorder.input(mods.layer, mods.call)).shape[-1])
    d_head = d_model // n_heads

    _embedding_twists(b, family, model, recorder, inputs, projection_in, out)
    x = _f(recorder.input(mods.layer, mods.call))
    b.add("layer_input", f"Input to layer {layer}",
          "x = the embeddings" if layer == 0 else f"x = output of layer {layer - 1}", "(T, d_model)", x)
    if mods.pre_attn_norm is not None:  # ModernBERT: normalise a copy, keep x for the residual
        b.add("attention_input_norm", "LayerNorm before attention (pre-LN)",
              "x̂ = LayerNorm(x)" + (" (layer 0: identity, the embeddings are already normalised)"
                                    if layer == 0 else ""), "(T, d_model)",
              _f(recorder.output(mods.pre_attn_norm)), twist=True)

    q, k, v, scale = query_key_value(b, family, mods, recorder, head, d_head, n_heads, layer, base)
    weights = attention_scores(b, family, mods, recorder, q, k, head, scale, n_heads, d_head)
    reference = out.attentions[layer][0, head]
    b.check("weights", f"output_attentions[{layer}][0, {head}]", weights, reference)

    weighted = weights @ v
    b.add("weighted_values", "Weighted values", "z = A V  (row i: Σⱼ A[i, j] · V[j])", "(T, d_head)", weighted)
    context = _f(recorder.input(mods.projection, mods.call))
    b.check("weighted_values", f"the heads concatenated, columns of head {head}",
            weighted, context[:, head * d_head:(head + 1) * d_head])
    b.add("heads_concatenated", "All heads side by side", f"concat(z₀, …, z_{n_heads - 1})", "(T, d_model)",
          context)
    o = _f(recorder.output(mods.projection, mods.call))
    b.add("output_projection", "Output projection", "O = concat · W_O + b_O", "(T, d_model)", o)
    residual = x + o
    b.add("attention_residual", "Residual sum", "x + O", "(T, d_model)", residual)
    b.check("attention_residual", "the input of the next LayerNorm",
            residual, _f(recorder.input(mods.attn_norm, mods.call)))
    h = _f(recorder.output(mods.attn_norm, mods.call))
    if mods.out_norm is not None:
        b.add("attention_layernorm", "Add & LayerNorm", "h = LayerNorm(x + O)", "(T, d_model)", h)
        stream = h
    else:
        b.add("feed_forward_norm", "LayerNorm before the feed-forward (pre-LN)",
              "ĥ = LayerNorm(x + O); the stream itself stays x + O", "(T, d_model)", h, twist=True)
        stream = residual
    hidden = _ffn_hidden(b, family, mods, recorder)
    f = _f(recorder.output(mods.ffn_out, mods.call))
    b.add("ffn_output", "Feed-forward output", "f = a W₂ + b₂", "(T, d_model)", f)
    out_sum = stream + f
    b.add("ffn_residual", "Residual sum", ("h + f" if mods.out_norm is not None else "(x + O) + f"),
          "(T, d_model)", out_sum)
    if mods.out_norm is not None:
        b.check("ffn_residual", "the input of the last LayerNorm", out_sum,
                _f(recorder.input(mods.out_norm, mods.call)))
        y = _f(recorder.output(mods.out_norm, mods.call))
        b.add("layer_output", f"Output of layer {layer}", "y = LayerNorm(h + f)", "(T, d_model)", y)
    else:
        y = _f(recorder.output(mods.layer, mods.call))
        b.check("ffn_residual", "the layer's output", out_sum, y)
        b.add("layer_output", f"Output of layer {layer}", "y = (x + O) + f", "(T, d_model)", y)
    n_layers = num_layers(model)
    if family in ROTARY and layer == n_layers - 1:  # hidden_states[-1] is after final_norm
        final = _f(recorder.output(base.final_norm))
        b.add("final_norm", "Final LayerNorm", "LayerNorm(y), after the last layer", "(T, d_model)", final, twist=True)
        b.check("layer_output", f"hidden_states[{layer + 1}] (after ModernBERT's final norm)",
                final, out.hidden_states[layer + 1][0])
    else:
        b.check("layer_output", f"hidden_states[{layer + 1}]", y, out.hidden_states[layer + 1][0])

    head_steps, predictions = (), ()
    if heads is not None:
        head_steps, predictions = _head(b, family, model, tokenizer, heads, recorder, out, position, top_k,
                                        layer, n_layers)
    if family == "albert":
        _albert_shared(b, model, mods, recorder, n_layers)
    norms = np.stack([_np(hs[0].float().norm(dim=-1)) for hs in out.hidden_states])
    norms.flags.writeable = False
    network = "ELECTRA's generator (its MLM network)" if family == "electra" and heads else (
        "the MLM model" if heads else "the decoder" if loaded.spec.is_decoder else "the encoder")
    return ForwardSteps(
        model_key=loaded.spec.key, family=family, network=network, text=text, text_pair=text_pair,
        tokens=tuple(tokenizer.convert_ids_to_tokens(ids)), token_ids=tuple(ids), layer=layer, head=head,
        position=position, num_layers=n_layers, num_heads=n_heads, d_model=d_model, d_head=d_head,
        d_ff=int(hidden.shape[-1]), scale=float(scale),
        attn_implementation=str(model.config._attn_implementation),
        steps=tuple(s for s in b.steps if s.name not in {h.name for h in head_steps}),
        head_steps=head_steps, predictions=predictions, layer_norms=norms, checks=tuple(b.checks),
        facts=tuple(b.facts), notes=(EAGER_NOTE,),
    )


# --- feed-forward ------------------------------------------------------------------------------


def _ffn_hidden(b, family, mods, recorder) -> torch.Tensor:
    hidden = _f(recorder.input(mods.ffn_out, mods.call))
    if family in ROTARY:
        wi = _f(recorder.output(mods.ffn_in))
        value_half, gate = wi.chunk(2, dim=-1)
        b.add("glu_input", "GeGLU: input half", "u = ĥ W_in (first half of Wi)", "(T, d_ff)", value_half, twist=True)
        b.add("glu_gate", "GeGLU: gate half", "g = ĥ W_gate (second half of Wi)", "(T, d_ff)", gate, twist=True)
        act = _f(recorder.output(mods.ffn_act))
        b.add("ffn_hidden", "Hidden activation (GeGLU)", "a = GELU(u) ⊙ g", "(T, d_ff)", hidden, twist=True)
        b.check("ffn_hidden", "the input of Wo", act * gate, hidden)
        return hidden
    b.add("ffn_hidden", "Hidden activation", "a = GELU(h W₁ + b₁)", "(T, d_ff)", hidden)
    return hidden


# --- embeddings: each family's twist ----------------------------------------------------------


def _embedding_twists(b, family, model, recorder, inputs, projection_in, out) -> None:
    base = base_model(model)
    emb = base.embeddings
    if family == "roberta":
        ids = recorder.input(emb.position_embeddings)[0].cpu()
        pad = int(emb.padding_idx)
        expected = torch.arange(ids.shape[0]) + pad + 1
        b.add("roberta_position_ids", "Position ids (offset by the padding index)",
              f"position(t) = padding_idx + 1 + t = {pad + 1} + t", "(T,)", ids.float(), twist=True,
              note=f"Rows 0..{pad} of RoBERTa's position table are never used by a token: "
                   "positions count from padding_idx + 1.")
        b.check("roberta_position_ids", f"padding_idx + 1 + t ({pad + 1}, {pad + 2}, …)", ids.float(), expected.float(), 0.0)
        b.facts.append(f"RoBERTa: padding_idx = {pad}, so the first token reads position row {int(ids[0])}, "
                       f"the last row {int(ids[-1])}.")
    if family == "distilbert":
        word = _f(recorder.output(emb.word_embeddings))
        pos = _f(recorder.output(emb.position_embeddings))
        total = word + pos
        b.add("distilbert_embedding_sum", "Word + position (no token types)",
              "e = LayerNorm(word + position)  (no segment term)", "(T, d_model)", total, twist=True)
        recomputed = torch.nn.functional.layer_norm(total, emb.LayerNorm.normalized_shape,
                                                    emb.LayerNorm.weight.float().cpu(),
                                                    emb.LayerNorm.bias.float().cpu(), emb.LayerNorm.eps)
        b.check("distilbert_embedding_sum", "DistilBERT's embeddings output", recomputed,
                _f(recorder.output(emb)))
        given = "token_type_ids" in inputs
        b.facts.append("DistilBERT has no token-type table (hasattr(embeddings, 'token_type_embeddings') = "
                       f"{hasattr(emb, 'token_type_embeddings')}); its tokenizer "
                       f"{'still returns token_type_ids, which the model ignores' if given else 'returns no token_type_ids'}.")
    if projection_in is not None:
        small = _f(recorder.input(projection_in))
        big = _f(recorder.output(projection_in))
        e, d = small.shape[-1], big.shape[-1]
        name = {"albert": "albert", "electra": "electra", "deberta-v2": "deberta"}[family]
        b.add(f"{name}_factorised_embedding", f"Embedding, size {e}", f"e = LayerNorm(word + position + type), width E = {e}",
              "(T, E)", small, twist=True)
        b.add(f"{name}_embedding_projection", f"Projected to the hidden size {d}", f"x = e W_proj + b  (E = {e} → d = {d})",
              "(T, d_model)", big, twist=True)
        vocab = model.get_input_embeddings().weight.shape[0]
        saving = f" ({vocab * e + e * d:,} weights instead of {vocab * d:,})" if e < d else ""
        b.facts.append(f"{family}: the word table is {vocab:,} × {e}, then a {e} × {d} projection to the "
                       f"hidden size{saving}.")
        if family == "albert":
            b.check(f"{name}_embedding_projection", "hidden_states[0] (the first layer's input)", big,
                    out.hidden_states[0][0])


def _albert_shared(b, model, mods, recorder, n_layers) -> None:
    """ALBERT's layers share weights: every layer of a group is the same module object."""
    group = [i for i in range(n_layers) if layer_modules("albert", model, i).layer is mods.layer]
    same = all(layer_modules("albert", model, i).query.weight is mods.query.weight for i in group)
    calls = recorder.times_called(mods.attention)
    groups = model.config.num_hidden_groups
    b.facts.append(f"ALBERT: {n_layers} layers, {groups} set(s) of weights; layers {group[0]}–{group[-1]} are one "
                   f"module whose query matrix is the same tensor object in each: {same} (id "
                   f"{id(mods.query.weight)}); that module ran {calls} times in this pass.")
    b.checks.append(StepCheck("albert_shared_layer", f"one module called once per layer of its group ({len(group)})",
                              0.0 if same and calls == len(group) else math.inf, 0.0))


# --- the MLM head ----------------------------------------------------------------------------------


def _head_input(family: str, layer: int, n_layers: int) -> tuple[str, str]:
    """The MLM head's first formula and a note naming what it reads: the last layer's output
    (after ModernBERT's final LayerNorm), whichever layer the steps above showed."""
    last = n_layers - 1
    if family == "modernbert":
        if layer == last:
            return "z = ŷ W_h + b_h  (ŷ: the final LayerNorm's output, the step above; at the chosen position)", ""
        return ("z = LayerNorm_final(y_last) W_h + b_h  (at the chosen position)",
                f"The MLM head reads the output of layer {last}, the last, after ModernBERT's final LayerNorm "
                f"(shown as a step when layer {last} is chosen), not the output of layer {layer} shown above.")
    if layer == last:
        return "z = y W_h + b_h  (y: this layer's output, the last; at the chosen position)", ""
    return ("z = y_last W_h + b_h  (at the chosen position)",
            f"The MLM head reads y_last, the output of layer {last}, the last, not the output of layer {layer} "
            "shown above.")


def _head(b, family, model, tokenizer, heads, recorder, out, position, top_k, layer, n_layers):
    formula, note = _head_input(family, layer, n_layers)
    b.check("head_dense", f"hidden_states[{n_layers}] (the last layer's output, the head's input)",
            _f(recorder.input(heads.dense)), out.hidden_states[n_layers][0])
    dense = _f(recorder.output(heads.dense))[position]
    # ALBERT's (and ELECTRA's generator's) head maps d_model down to the embedding size E
    width = "(d_model,)" if dense.shape[-1] == out.hidden_states[n_layers].shape[-1] else "(E,)"
    act = _f(recorder.input(heads.norm))[position]
    normed = _f(recorder.output(heads.norm))[position]
    embeddings = model.get_input_embeddings().weight
    tied = heads.decoder.weight is embeddings or heads.decoder.weight.data_ptr() == embeddings.data_ptr()
    bias = heads.decoder.bias if heads.decoder.bias is not None else torch.zeros(embeddings.shape[0])
    logits = normed @ embeddings.detach().float().cpu().T + bias.detach().float().cpu()
    model_logits = out.logits[0, position].float().cpu()
    probs = torch.softmax(model_logits, dim=-1)
    top = torch.topk(probs, top_k)
    predictions = tuple((tokenizer.convert_ids_to_tokens(int(i)), float(p)) for p, i in zip(top.values, top.indices))
    steps = (
        Step("head_dense", "MLM head: dense", formula, width, _np(dense), note=note),
        Step("head_activation", "MLM head: activation", "GELU(z)", width, _np(act)),
        Step("head_layernorm", "MLM head: LayerNorm", "u = LayerNorm(GELU(z))", "(E,)", _np(normed)),
        Step("head_logits", "Logits over the vocabulary",
             f"logits = u Eᵀ + b  (E: the word-embedding table{', tied' if tied else ''}; V = {embeddings.shape[0]:,})",
             "(V,)", _np(logits)),
        Step("head_top_k", f"Top {top_k} after softmax", "p = softmax(logits); the k largest", f"({top_k},)",
             _np(top.values)),
    )
    b.facts.append(f"MLM head: the decoder's weight is the word-embedding table itself (tied): {tied}; "
                   f"logits over {embeddings.shape[0]:,} tokens.")
    b.check("head_logits", f"the model's logits at position {position}", logits, model_logits,
            tolerance=b.tolerance * 10)
    return steps, predictions
