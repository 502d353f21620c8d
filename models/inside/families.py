"""Where each family keeps the steps of one encoder layer: its own modules, by name.

One ``LayerModules`` per family, read from transformers' modeling code (the installed
``transformers/models/<family>/modeling_*.py``). Post-LayerNorm families (BERT, RoBERTa,
ELECTRA, ALBERT, DistilBERT, DeBERTa-v2) add the residual, then normalise; ModernBERT
normalises a copy before attention and before the feed-forward block (pre-LayerNorm) and
keeps the residual stream itself un-normalised; its decoder twin (ModernBERT's decoder, the
class Ettin's decoders use) has the same layer with separate Q, K, V projections and a causal mask.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from ..errors import CapabilityError

POST_NORM = ("bert", "roberta", "electra", "albert", "distilbert", "deberta-v2")
FAMILIES = (*POST_NORM, "modernbert", "modernbert-decoder")
ROTARY = ("modernbert", "modernbert-decoder")  # rotary positions, pre-LN, GeGLU, a final norm


@dataclass(frozen=True)
class LayerModules:
    """The modules of one layer, in the order the data goes through them."""

    layer: nn.Module  # its first input is the layer's input
    call: int  # which call of these modules is this layer (ALBERT's shared layer: the layer index)
    attention: nn.Module  # returns (heads concatenated, weights); receives the mask
    mask_arg: int | str  # where the attention module gets its mask: a position or a keyword
    query: nn.Module | None  # separate projections (None where one fused matrix makes all three)
    key: nn.Module | None
    value: nn.Module | None
    qkv: nn.Module | None  # ModernBERT's fused Wqkv
    projection: nn.Module  # the attention's output projection W_O (its input: heads concatenated)
    attn_norm: nn.Module  # post-LN: LayerNorm(x + O); pre-LN: the norm before the feed-forward
    ffn_in: nn.Module  # W_1 (ModernBERT: Wi, input and gate side by side)
    ffn_act: nn.Module | None  # the activation module, where it is one
    ffn_out: nn.Module  # W_2 (its input: the hidden activation)
    out_norm: nn.Module | None  # post-LN: LayerNorm(h + f); None for pre-LN
    pre_attn_norm: nn.Module | None = None  # ModernBERT: the norm before attention


@dataclass(frozen=True)
class HeadModules:
    """The MLM head: dense -> activation -> LayerNorm -> decoder tied to the word embeddings."""

    dense: nn.Module
    norm: nn.Module  # its input is the activation's output
    decoder: nn.Module


def base_model(model) -> nn.Module:
    return model.base_model


def num_layers(model) -> int:
    config = model.config
    return int(getattr(config, "num_hidden_layers", None) or config.n_layers)


def num_heads(model) -> int:
    config = model.config
    return int(getattr(config, "num_attention_heads", None) or config.n_heads)


def layer_modules(family: str, model, layer: int) -> LayerModules:
    base = base_model(model)
    if family in ("bert", "roberta", "electra", "deberta-v2"):
        block = base.encoder.layer[layer]
        attn = block.attention
        deberta = family == "deberta-v2"
        return LayerModules(
            layer=block, call=0, attention=attn.self, mask_arg=1 if deberta else "attention_mask",
            query=attn.self.query_proj if deberta else attn.self.query,
            key=attn.self.key_proj if deberta else attn.self.key,
            value=attn.self.value_proj if deberta else attn.self.value, qkv=None,
            projection=attn.output.dense, attn_norm=attn.output.LayerNorm,
            ffn_in=block.intermediate.dense, ffn_act=None, ffn_out=block.output.dense,
            out_norm=block.output.LayerNorm,
        )
    if family == "albert":
        config = model.config
        if config.inner_group_num != 1:
            raise CapabilityError("This view follows ALBERT models with one layer per group "
                                  f"(inner_group_num 1); this one has {config.inner_group_num}.")
        per_group = config.num_hidden_layers / config.num_hidden_groups
        group = int(layer / per_group)
        first = min(i for i in range(config.num_hidden_layers) if int(i / per_group) == group)
        block = base.encoder.albert_layer_groups[group].albert_layers[0]
        attn = block.attention
        return LayerModules(
            layer=block, call=layer - first, attention=attn, mask_arg=1,
            query=attn.query, key=attn.key, value=attn.value, qkv=None,
            projection=attn.dense, attn_norm=attn.LayerNorm,
            ffn_in=block.ffn, ffn_act=block.activation, ffn_out=block.ffn_output,
            out_norm=block.full_layer_layer_norm,
        )
    if family == "distilbert":
        block = base.transformer.layer[layer]
        attn = block.attention
        return LayerModules(
            layer=block, call=0, attention=attn, mask_arg="attention_mask",
            query=attn.q_lin, key=attn.k_lin, value=attn.v_lin, qkv=None,
            projection=attn.out_lin, attn_norm=block.sa_layer_norm,
            ffn_in=block.ffn.lin1, ffn_act=block.ffn.activation, ffn_out=block.ffn.lin2,
            out_norm=block.output_layer_norm,
        )
    if family == "modernbert":
        block = base.layers[layer]
        return LayerModules(
            layer=block, call=0, attention=block.attn, mask_arg="attention_mask",
            query=None, key=None, value=None, qkv=block.attn.Wqkv,
            projection=block.attn.Wo, attn_norm=block.mlp_norm,
            ffn_in=block.mlp.Wi, ffn_act=block.mlp.act, ffn_out=block.mlp.Wo,
            out_norm=None, pre_attn_norm=block.attn_norm,
        )
    if family == "modernbert-decoder":
        block = base.layers[layer]
        return LayerModules(
            layer=block, call=0, attention=block.attn, mask_arg="attention_mask",
            query=block.attn.q_proj, key=block.attn.k_proj, value=block.attn.v_proj, qkv=None,
            projection=block.attn.Wo, attn_norm=block.mlp_norm,
            ffn_in=block.mlp.Wi, ffn_act=block.mlp.act, ffn_out=block.mlp.Wo,
            out_norm=None, pre_attn_norm=block.attn_norm,
        )
    raise CapabilityError(f"The step-by-step view knows the families {', '.join(FAMILIES)}; "
                          f"not {family!r}.")


def head_modules(family: str, model) -> HeadModules:
    """The MLM head's modules (``model`` loaded with its MLM head)."""
    if family in ("bert", "deberta-v2"):
        transform = model.cls.predictions.transform
        return HeadModules(transform.dense, transform.LayerNorm, model.cls.predictions.decoder)
    if family == "roberta":
        return HeadModules(model.lm_head.dense, model.lm_head.layer_norm, model.lm_head.decoder)
    if family == "albert":
        return HeadModules(model.predictions.dense, model.predictions.LayerNorm, model.predictions.decoder)
    if family == "electra":
        head = model.generator_predictions
        return HeadModules(head.dense, head.LayerNorm, model.generator_lm_head)
    if family == "distilbert":
        return HeadModules(model.vocab_transform, model.vocab_layer_norm, model.vocab_projector)
    if family == "modernbert":
        return HeadModules(model.head.dense, model.head.norm, model.decoder)
    raise CapabilityError(f"No MLM head layout for the family {family!r}.")


def embedding_projection(family: str, model) -> nn.Module | None:
    """The linear map from a small embedding size to the hidden size, where there is one
    (ALBERT's factorised embedding; ELECTRA's when its embedding size differs)."""
    base = base_model(model)
    if family == "albert":
        return base.encoder.embedding_hidden_mapping_in
    if family == "electra":
        return getattr(base, "embeddings_project", None)
    if family == "deberta-v2":
        return base.embeddings.embed_proj
    return None
