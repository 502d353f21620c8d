"""The mini zoo's models: each family's transformers class in the shared shape, its encoder
body and MLM head, and its pre-training objective (the module DDP wraps)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..pretraining.masking import MaskingPolicy
from .fast import cross_entropy as fast_cross_entropy
from .locality import locality_start_, sinusoidal_positions_

FAMILIES = ("mini-bert", "mini-roberta", "mini-distilbert", "mini-albert", "mini-electra",
            "mini-deberta", "mini-modernbert")

# the zoo's storyteller: a decoder beside the encoder families, not one of them (trained the
# same way on next-token prediction; it reads its twin's shipped tokenizer, not one of its own)
DECODERS = ("mini-decoder",)
TWIN_OF = {"mini-decoder": "mini-modernbert"}

TOKENIZER_OF = {
    "mini-bert": "wordpiece", "mini-distilbert": "wordpiece", "mini-electra": "wordpiece",
    "mini-roberta": "bytelevel-bpe", "mini-modernbert": "modernbert-bpe",
    "mini-albert": "unigram-albert", "mini-deberta": "unigram-deberta",
    "mini-decoder": "modernbert-bpe",
}


@dataclass(frozen=True)
class Shape:
    """The one small shape every family shares (DistilBERT halves the layers)."""

    layers: int = 4
    hidden: int = 128  # 256 wide trained ~4.5x fewer tokens/s here: 128 sees more data per CPU hour
    heads: int = 4
    ffn: int = 512  # feed-forward width (ModernBERT: GeGLU's input projection, 2 x 256)
    vocab: int = 8192
    max_len: int = 128  # tokens per training sequence, specials included
    # ALBERT's factorised embedding size: 96 (< 128, still factorised). At 64 its locality start
    # stayed on the plateau whatever the mapping's start (6.90 nats at 1.5 M tokens against the
    # baseline's 6.92); at 96 with the norm-preserving start it left it (6.65; python -m scripts.zoo plateau)
    albert_embedding: int = 96
    # ELECTRA's embeddings (shared by its two models): as wide as the discriminator, as in
    # ELECTRA-base and -large (E = H)
    electra_embedding: int = 128
    # the generator: as wide as the discriminator. ELECTRA found 1/4 to 1/2 best at its scale; here
    # a 32-wide one (the first CPU run) and a 64-wide one (the GPU run) stayed on the unigram
    # plateau, so their replacements were context-free and the discriminator had nothing to learn;
    # with the locality start a 64-wide one still did (7.08 nats at 1.5 M tokens, the baseline 7.08),
    # a 96-wide one barely moved (7.03) and a 128-wide one left it (6.46; python -m scripts.zoo plateau)
    electra_generator_hidden: int = 128
    modernbert_window: int = 32  # local attention window (tokens) of ModernBERT's local layers


def build_models(family: str, tokenizer, shape: Shape, teacher=None, *, dropout: float | None = None,
                 position_init: str = "random", init_std: float | None = None) -> dict[str, nn.Module]:
    """The family's transformers model(s), randomly initialised in the shared shape.

    ``dropout``: hidden and attention dropout of every model (None: each config's default,
    0.1 for all but ModernBERT's 0). ``position_init``: how a learnt absolute position table
    starts: "random" (transformers' N(0, 0.02)), "sinusoidal" (Vaswani et al.'s table,
    scaled to the token embeddings' std; still learnt) or "local" (the locality start,
    ``models/zoo/locality.py``: sinusoids, and two heads per layer starting as previous- and
    next-token heads). Families without a table (DeBERTa's relative positions, ModernBERT's
    RoPE) ignore it; DistilBERT started from its teacher keeps the teacher's. ``init_std``: the configs'
    ``initializer_range`` (None: transformers' 0.02, chosen for 768-wide models; 1/sqrt(128)
    = 0.088 is the usual scale for this width).
    """
    import transformers as T

    V, H, L, A, F_ = shape.vocab, shape.hidden, shape.layers, shape.heads, shape.ffn
    ids = dict(pad_token_id=tokenizer.pad_token_id)
    drop = {} if dropout is None else dict(hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
    if init_std is not None:
        ids = {**ids, "initializer_range": init_std}
    common = dict(vocab_size=V, hidden_size=H, num_hidden_layers=L, num_attention_heads=A,
                  intermediate_size=F_, max_position_embeddings=shape.max_len, **ids, **drop)
    models = _build(T, family, tokenizer, shape, teacher, common, ids, drop, dropout)
    if position_init == "local":
        if not (family == "mini-distilbert" and teacher is not None):
            locality_start_(models, tokenizer)
    elif position_init == "sinusoidal":
        for m in models.values():
            sinusoidal_positions_(m)
    elif position_init == "zero":
        for m in models.values():
            for name, module in m.named_modules():
                if name.endswith("embeddings") and isinstance(getattr(module, "position_embeddings", None), nn.Embedding):
                    nn.init.zeros_(module.position_embeddings.weight)
    elif position_init != "random":
        raise ValueError(f"Unknown position_init {position_init!r}; choose random, sinusoidal, local or zero.")
    return models


def _build(T, family, tokenizer, shape, teacher, common, ids, drop, dropout) -> dict[str, nn.Module]:
    V, H, L, A, F_ = shape.vocab, shape.hidden, shape.layers, shape.heads, shape.ffn
    if family == "mini-bert":
        return {"model": T.BertForPreTraining(T.BertConfig(**common))}
    if family == "mini-roberta":
        cfg = T.RobertaConfig(**{**common, "max_position_embeddings": shape.max_len + 2},
                              type_vocab_size=1, bos_token_id=tokenizer.cls_token_id,
                              eos_token_id=tokenizer.sep_token_id)
        return {"model": T.RobertaForMaskedLM(cfg)}
    if family == "mini-distilbert":
        cfg = T.DistilBertConfig(vocab_size=V, dim=H, n_layers=L // 2, n_heads=A, hidden_dim=F_,
                                 max_position_embeddings=shape.max_len, **ids,
                                 **({} if dropout is None else dict(dropout=dropout, attention_dropout=dropout)))
        student = T.DistilBertForMaskedLM(cfg)
        if teacher is not None:
            init_distilbert_from_bert(student, teacher)
        return {"model": student}
    if family == "mini-albert":
        cfg = T.AlbertConfig(**common, embedding_size=shape.albert_embedding, num_hidden_groups=1,
                             inner_group_num=1, hidden_act="gelu_new",
                             bos_token_id=tokenizer.cls_token_id, eos_token_id=tokenizer.sep_token_id,
                             # its sentence-order head's dropout too (transformers' default 0.1 otherwise)
                             **({} if dropout is None else {"classifier_dropout_prob": dropout}))
        return {"model": T.AlbertForPreTraining(cfg)}
    if family == "mini-electra":
        disc = T.ElectraForPreTraining(T.ElectraConfig(**common, embedding_size=shape.electra_embedding))
        g = shape.electra_generator_hidden
        gen = T.ElectraForMaskedLM(T.ElectraConfig(
            vocab_size=V, embedding_size=shape.electra_embedding, hidden_size=g, num_hidden_layers=L,
            num_attention_heads=max(1, g // 32), intermediate_size=4 * g,  # heads of 32, as the discriminator's
            max_position_embeddings=shape.max_len, **ids, **drop))
        # ELECTRA shares the token and position embeddings between generator and discriminator
        gen.electra.embeddings = disc.electra.embeddings
        gen.generator_lm_head.weight = disc.electra.embeddings.word_embeddings.weight
        return {"model": disc, "generator": gen}
    if family == "mini-deberta":
        cfg = T.DebertaV2Config(**common, relative_attention=True, position_buckets=64,
                                max_relative_positions=-1, pos_att_type=["p2c", "c2p"],
                                position_biased_input=False, share_att_key=True,
                                norm_rel_ebd="layer_norm", type_vocab_size=0)
        return {"model": T.DebertaV2ForMaskedLM(cfg)}
    if family in ("mini-modernbert", "mini-decoder"):
        shared = dict(
            vocab_size=V, hidden_size=H, num_hidden_layers=L, num_attention_heads=A,
            intermediate_size=F_ // 2, max_position_embeddings=shape.max_len,
            global_attn_every_n_layers=2, local_attention=shape.modernbert_window,
            **{k: v for k, v in ids.items() if k == "initializer_range"},
            pad_token_id=tokenizer.pad_token_id, cls_token_id=tokenizer.cls_token_id,
            sep_token_id=tokenizer.sep_token_id, bos_token_id=tokenizer.cls_token_id,
            eos_token_id=tokenizer.sep_token_id,
            **({} if dropout is None else dict(attention_dropout=dropout, mlp_dropout=dropout,
                                               embedding_dropout=dropout)))
        if family == "mini-decoder":  # the same shape; its local layers see 16 tokens back (half the window)
            return {"model": T.ModernBertDecoderForCausalLM(T.ModernBertDecoderConfig(**shared))}
        cfg = T.ModernBertConfig(
            **shared, mask_token_id=tokenizer.mask_token_id,
            reference_compile=False)  # older transformers 5 releases torch.compile'd it on CUDA (recompiling per padded length)
        return {"model": T.ModernBertForMaskedLM(cfg)}
    raise ValueError(f"Unknown family {family!r}; choose one of {', '.join(FAMILIES)}.")


@torch.no_grad()
def init_distilbert_from_bert(student, teacher) -> None:
    """DistilBERT's initialisation: embeddings and every other layer of the teacher.

    The teacher's segment-0 embedding (DistilBERT has no segments) is folded into the
    position embeddings, so single-segment inputs embed exactly as in the teacher.
    """
    t, s = teacher.bert, student.distilbert
    s.embeddings.word_embeddings.weight.copy_(t.embeddings.word_embeddings.weight)
    s.embeddings.position_embeddings.weight.copy_(
        t.embeddings.position_embeddings.weight + t.embeddings.token_type_embeddings.weight[0])
    s.embeddings.LayerNorm.load_state_dict(t.embeddings.LayerNorm.state_dict())
    for k, layer in enumerate(s.transformer.layer):
        src = t.encoder.layer[2 * k]
        layer.attention.q_lin.load_state_dict(src.attention.self.query.state_dict())
        layer.attention.k_lin.load_state_dict(src.attention.self.key.state_dict())
        layer.attention.v_lin.load_state_dict(src.attention.self.value.state_dict())
        layer.attention.out_lin.load_state_dict(src.attention.output.dense.state_dict())
        layer.sa_layer_norm.load_state_dict(src.attention.output.LayerNorm.state_dict())
        layer.ffn.lin1.load_state_dict(src.intermediate.dense.state_dict())
        layer.ffn.lin2.load_state_dict(src.output.dense.state_dict())
        layer.output_layer_norm.load_state_dict(src.output.LayerNorm.state_dict())
    head = teacher.cls.predictions
    student.vocab_transform.load_state_dict(head.transform.dense.state_dict())
    student.vocab_layer_norm.load_state_dict(head.transform.LayerNorm.state_dict())
    student.vocab_projector.bias.copy_(head.bias)


def encode(family: str, model, ids, attention, types=None):
    """(hidden states (B, T, H), pooled [CLS] or None) of a family's encoder body."""
    if family in ("mini-bert", "mini-albert"):
        body = model.bert if family == "mini-bert" else model.albert
        out = body(input_ids=ids, attention_mask=attention, token_type_ids=types)
        return out.last_hidden_state, out.pooler_output
    body = {"mini-roberta": lambda m: m.roberta, "mini-distilbert": lambda m: m.distilbert,
            "mini-electra": lambda m: m.electra, "mini-deberta": lambda m: m.deberta,
            "mini-modernbert": lambda m: m.model, "mini-decoder": lambda m: m.model}[family](model)
    return body(input_ids=ids, attention_mask=attention).last_hidden_state, None


def mlm_logits(family: str, model, hidden):
    """The family's MLM head on selected hidden states (N, H) -> (N, V)."""
    if family == "mini-bert":
        return model.cls.predictions(hidden)
    if family == "mini-albert":
        return model.predictions(hidden)
    if family == "mini-roberta":
        return model.lm_head(hidden)
    if family == "mini-distilbert":
        return model.vocab_projector(model.vocab_layer_norm(model.activation(model.vocab_transform(hidden))))
    if family == "mini-electra":  # the generator
        return model.generator_lm_head(model.generator_predictions(hidden))
    if family == "mini-deberta":
        return model.cls(hidden)
    if family == "mini-modernbert":
        return model.decoder(model.head(hidden))
    if family == "mini-decoder":  # its next-piece head
        return model.decoder(model.lm_head(hidden))
    raise ValueError(family)


class Objective(nn.Module):
    """One family's pre-training loss; DDP wraps this (so every head's gradients sync)."""

    def __init__(self, family: str, models: dict[str, nn.Module], teacher=None):
        super().__init__()
        self.family = family
        self.model = models["model"]
        self.generator = models.get("generator")
        self.teacher = teacher  # frozen, never trained (DistilBERT's mini-bert)
        self.fast_loss = False  # the MLM loss as models.zoo.fast.cross_entropy (within fast_kernels)
        if teacher is not None:
            for p in teacher.parameters():
                p.requires_grad_(False)

    def forward(self, ids, attention, types, inputs, labels, pair_labels=None, generator=None, shares=None):
        """(loss, parts). ``shares``: when this batch is one part of a larger one (the trainer's
        worker threads), {"masked", "real", "rows"}: its share of the whole batch's masked
        positions, non-padding tokens and rows; each mean is scaled by the share of what it
        averages over, so the parts' losses (and gradients) sum to the whole batch's."""
        fam, sel = self.family, labels != -100
        s = shares or {}
        masked, real_share, rows = s.get("masked", 1.0), s.get("real", 1.0), s.get("rows", 1.0)
        parts = {}
        if fam in DECODERS:
            return self._next_token_loss(ids, attention, labels, masked)
        if fam == "mini-electra":
            hidden_g, _ = encode(fam, self.generator, inputs, attention)
            g_logits = mlm_logits(fam, self.generator, hidden_g[sel])  # (N, V)
            parts["mlm"] = F.cross_entropy(g_logits.float(), labels[sel]) * masked
            with torch.no_grad():  # sample replacements from the generator (temperature 1)
                sampled = torch.multinomial(g_logits.float().softmax(-1), 1, generator=generator).squeeze(-1)
            corrupted = ids.clone()
            corrupted[sel] = sampled
            replaced = (corrupted != ids).float()
            hidden_d, _ = encode(fam, self.model, corrupted, attention)
            d_logits = self.model.discriminator_predictions(hidden_d)  # (B, T)
            real = attention.bool()
            parts["rtd"] = F.binary_cross_entropy_with_logits(d_logits[real].float(), replaced[real]) * real_share
            return parts["mlm"] + 50.0 * parts["rtd"], parts
        hidden, pooled = encode(fam, self.model, inputs, attention, types)
        logits = mlm_logits(fam, self.model, hidden[sel])  # (N, V)
        if self.fast_loss and fam != "mini-distilbert":  # DistilBERT's KL reads the logits too
            parts["mlm"] = fast_cross_entropy(logits, labels[sel]) * masked
        else:
            logits = logits.float()  # cast once for every loss
            parts["mlm"] = F.cross_entropy(logits, labels[sel]) * masked
        loss = parts["mlm"]
        if fam == "mini-bert":
            parts["nsp"] = F.cross_entropy(self.model.cls.seq_relationship(pooled).float(), pair_labels) * rows
            loss = loss + parts["nsp"]
        elif fam == "mini-albert":
            parts["sop"] = F.cross_entropy(self.model.sop_classifier(pooled).float(), pair_labels) * rows
            loss = loss + parts["sop"]
        elif fam == "mini-distilbert":
            with torch.no_grad():
                t_hidden, _ = encode("mini-bert", self.teacher, inputs, attention, torch.zeros_like(inputs))
                t_logits = mlm_logits("mini-bert", self.teacher, t_hidden[sel]).float()
            temperature = 2.0
            # the teacher's distribution as log-probabilities (log_target): the same KL, without
            # the log of a softmax (xlogy) over the vocabulary at every masked position
            parts["kd"] = F.kl_div(F.log_softmax(logits / temperature, -1),
                                   F.log_softmax(t_logits / temperature, -1), log_target=True,
                                   reduction="batchmean") * temperature ** 2 * masked
            real = attention.bool()
            parts["cos"] = (1.0 - F.cosine_similarity(hidden[real].float(), t_hidden[real].float(), dim=-1).mean()
                            ) * real_share
            loss = 5.0 * parts["kd"] + 2.0 * parts["mlm"] + 1.0 * parts["cos"]
        return loss, parts

    def _next_token_loss(self, ids, attention, labels, share: float = 1.0):
        """A decoder's causal LM loss: each position predicts the next piece; ``labels`` are
        the inputs with -100 where no piece is predicted (the first, padding)."""
        hidden, _ = encode(self.family, self.model, ids, attention)  # (B, T, H), triangular attention
        sel = labels[:, 1:] != -100
        logits = mlm_logits(self.family, self.model, hidden[:, :-1][sel])  # (N, V)
        target = labels[:, 1:][sel]
        loss = (fast_cross_entropy(logits, target) if self.fast_loss else F.cross_entropy(logits.float(), target))
        return loss * share, {"lm": loss * share}


def masking_policy(family: str) -> MaskingPolicy:
    if family == "mini-modernbert":
        return MaskingPolicy(rate=0.30)  # ModernBERT raised the masking rate to 30 %
    if family == "mini-electra":  # the generator's input: ELECTRA's own split (its pretrain_helpers.mask
        # puts [MASK] at 85 % of the selected positions and leaves 15 % as they are; no random tokens)
        return MaskingPolicy(rate=0.15, mask=0.85, random=0.0, keep=0.15)
    return MaskingPolicy(rate=0.15)
