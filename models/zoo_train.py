"""Training the mini zoo: seven encoder families, one shape, one corpus, one token budget.

Each family is the real transformers class with its defining ideas in miniature:

=================  =====================================================================
mini-bert          BertForPreTraining: MLM + next-sentence prediction, static masking
mini-roberta       RobertaForMaskedLM: dynamic masking, no NSP, full-sentence packing
mini-distilbert    DistilBertForMaskedLM, 2 layers initialised from every other layer of
                   mini-bert, triple loss (soft targets, MLM, hidden-state cosine)
mini-albert        AlbertForPreTraining: factorised embedding (128), one shared layer, MLM + SOP
mini-electra       ElectraForPreTraining (discriminator) trained jointly with a small
                   ElectraForMaskedLM generator (shared embeddings): replaced-token detection
mini-deberta       DebertaV2ForMaskedLM: disentangled attention with relative positions,
                   MLM objective (DeBERTa-v2's, not v3's RTD)
mini-modernbert    ModernBertForMaskedLM: RoPE, GeGLU, alternating global / local (window
                   32) attention, 30 % masking, no biases
=================  =====================================================================

The loss runs each MLM head at the masked positions only (the 8k-way projection is most of
the cost). Masking is the project's one implementation (``models.masking.apply_masking``).
Runs on one process or under ``torchrun`` with DistributedDataParallel (gloo on CPU, NCCL
on CUDA): each rank takes every ``world``-th batch; gradients are averaged by DDP.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from .masking import MaskingPolicy, apply_masking

FAMILIES = ("mini-bert", "mini-roberta", "mini-distilbert", "mini-albert", "mini-electra",
            "mini-deberta", "mini-modernbert")

TOKENIZER_OF = {
    "mini-bert": "wordpiece", "mini-distilbert": "wordpiece", "mini-electra": "wordpiece",
    "mini-roberta": "bytelevel-bpe", "mini-modernbert": "modernbert-bpe",
    "mini-albert": "unigram-albert", "mini-deberta": "unigram-deberta",
}


@dataclass(frozen=True)
class Shape:
    """The one small shape every family shares (DistilBERT halves the layers)."""

    layers: int = 4
    hidden: int = 256
    heads: int = 4
    ffn: int = 768  # feed-forward width (ModernBERT: GeGLU's input projection, 2 x 384)
    vocab: int = 8192
    max_len: int = 128  # tokens per training sequence, specials included
    albert_embedding: int = 128  # ALBERT's factorised embedding size (and ELECTRA's)
    electra_generator_hidden: int = 64  # the generator: a quarter of the discriminator
    modernbert_window: int = 32  # local attention window (tokens) of ModernBERT's local layers


@dataclass(frozen=True)
class ZooConfig:
    """One training budget for every family."""

    tokens: int = 1_200_000  # training tokens per family (non-padding inputs of the trained model)
    batch_size: int = 16
    lr: float = 1e-3
    warmup: float = 0.06  # share of the budget with a linear warm-up, then linear decay to 0
    weight_decay: float = 0.01
    seed: int = 0
    autocast: str = "bf16"  # "bf16" or "" (float32)
    evals: int = 8  # learning-curve points
    eval_sentences: int = 300  # held-out sentences per learning-curve point
    threads: int = 0
    shape: Shape = field(default_factory=Shape)


# --- data ---------------------------------------------------------------------------------

def read_ordered(path: Path) -> tuple[list[str], list[str]]:
    """(sources, sentences) of ``train_ordered.tsv``, in reading order."""
    sources, sentences = [], []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            src, _, text = line.rstrip("\n").partition("\t")
            if text:
                sources.append(src)
                sentences.append(text)
    return sources, sentences


def make_chunks(sources: list[str], ids: list[list[int]], max_tokens: int) -> list[list[np.ndarray]]:
    """Runs of consecutive sentences of one source, up to ``max_tokens`` tokens each."""
    chunks, current, length, source = [], [], 0, None
    for src, seq in zip(sources, ids):
        seq = np.asarray(seq[:max_tokens], dtype=np.int64)
        if current and (src != source or length + len(seq) > max_tokens):
            chunks.append(current)
            current, length = [], 0
        current.append(seq)
        length += len(seq)
        source = src
    if current:
        chunks.append(current)
    return chunks


def is_pair_eval_chunk(index: int) -> bool:
    """2 % of chunks are never trained on: the NSP / SOP held-out pairs."""
    return int(hashlib.sha1(f"pair-eval:{index}".encode()).hexdigest(), 16) % 100 < 2


class Examples:
    """Training sequences for one family from its tokenizer's chunks."""

    def __init__(self, tokenizer, chunks: list[list[np.ndarray]], max_len: int, seed: int):
        self.tok, self.max_len, self.seed = tokenizer, max_len, seed
        self.cls, self.sep, self.pad = tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id
        self.train_idx = [i for i in range(len(chunks)) if not is_pair_eval_chunk(i)]
        self.eval_idx = [i for i in range(len(chunks)) if is_pair_eval_chunk(i)]
        self.chunks = chunks

    def packed(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """[CLS] sentences... [SEP]: full sentences, packed (RoBERTa's FULL-SENTENCES)."""
        body = np.concatenate(self.chunks[i])[: self.max_len - 2]
        ids = np.concatenate([[self.cls], body, [self.sep]])
        return ids, np.zeros_like(ids)

    def pair(self, i: int, rng: np.random.Generator, kind: str) -> tuple[np.ndarray, np.ndarray, int]:
        """[CLS] A [SEP] B [SEP] and its label: NSP (1 = B is random) or SOP (1 = swapped)."""
        chunk = self.chunks[i]
        if len(chunk) >= 2:
            cut = int(rng.integers(1, len(chunk)))
            a, b = np.concatenate(chunk[:cut]), np.concatenate(chunk[cut:])
        else:  # one long sentence: cut it in two
            seq = chunk[0]
            cut = max(1, len(seq) // 2)
            a, b = seq[:cut], seq[cut:]
        label = int(rng.random() < 0.5)
        if label and kind == "nsp":
            other = self.train_idx[int(rng.integers(len(self.train_idx)))]
            if other == i:
                other = self.train_idx[(self.train_idx.index(i) + 1) % len(self.train_idx)]
            b = np.concatenate(self.chunks[other])[: max(len(b), 8)]
        elif label and kind == "sop":
            a, b = b, a
        room = self.max_len - 3
        while len(a) + len(b) > room:  # trim the longer side, as BERT's data builder does
            if len(a) >= len(b):
                a = a[:-1]
            else:
                b = b[:-1]
        ids = np.concatenate([[self.cls], a, [self.sep], b, [self.sep]])
        types = np.concatenate([np.zeros(len(a) + 2, np.int64), np.ones(len(b) + 1, np.int64)])
        return ids, types, label


def pad_batch(rows: list[np.ndarray], types: list[np.ndarray], pad_id: int):
    T = max(len(r) for r in rows)
    ids = torch.full((len(rows), T), pad_id, dtype=torch.long)
    tt = torch.zeros((len(rows), T), dtype=torch.long)
    attention = torch.zeros((len(rows), T), dtype=torch.long)
    for k, (r, t) in enumerate(zip(rows, types)):
        ids[k, : len(r)] = torch.from_numpy(r)
        tt[k, : len(t)] = torch.from_numpy(t)
        attention[k, : len(r)] = 1
    return ids, tt, attention


# --- models -------------------------------------------------------------------------------

def build_models(family: str, tokenizer, shape: Shape, teacher=None) -> dict[str, nn.Module]:
    """The family's transformers model(s), randomly initialised in the shared shape."""
    import transformers as T

    V, H, L, A, F_ = shape.vocab, shape.hidden, shape.layers, shape.heads, shape.ffn
    ids = dict(pad_token_id=tokenizer.pad_token_id)
    common = dict(vocab_size=V, hidden_size=H, num_hidden_layers=L, num_attention_heads=A,
                  intermediate_size=F_, max_position_embeddings=shape.max_len, **ids)
    if family == "mini-bert":
        return {"model": T.BertForPreTraining(T.BertConfig(**common))}
    if family == "mini-roberta":
        cfg = T.RobertaConfig(**{**common, "max_position_embeddings": shape.max_len + 2},
                              type_vocab_size=1, bos_token_id=tokenizer.cls_token_id,
                              eos_token_id=tokenizer.sep_token_id)
        return {"model": T.RobertaForMaskedLM(cfg)}
    if family == "mini-distilbert":
        cfg = T.DistilBertConfig(vocab_size=V, dim=H, n_layers=L // 2, n_heads=A, hidden_dim=F_,
                                 max_position_embeddings=shape.max_len, **ids)
        student = T.DistilBertForMaskedLM(cfg)
        if teacher is not None:
            init_distilbert_from_bert(student, teacher)
        return {"model": student}
    if family == "mini-albert":
        cfg = T.AlbertConfig(**common, embedding_size=shape.albert_embedding, num_hidden_groups=1,
                             inner_group_num=1, hidden_act="gelu_new",
                             bos_token_id=tokenizer.cls_token_id, eos_token_id=tokenizer.sep_token_id)
        return {"model": T.AlbertForPreTraining(cfg)}
    if family == "mini-electra":
        disc = T.ElectraForPreTraining(T.ElectraConfig(**common, embedding_size=shape.albert_embedding))
        g = shape.electra_generator_hidden
        gen = T.ElectraForMaskedLM(T.ElectraConfig(
            vocab_size=V, embedding_size=shape.albert_embedding, hidden_size=g, num_hidden_layers=L,
            num_attention_heads=max(1, g // 64), intermediate_size=4 * g,
            max_position_embeddings=shape.max_len, **ids))
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
    if family == "mini-modernbert":
        cfg = T.ModernBertConfig(
            vocab_size=V, hidden_size=H, num_hidden_layers=L, num_attention_heads=A,
            intermediate_size=F_ // 2, max_position_embeddings=shape.max_len,
            global_attn_every_n_layers=2, local_attention=shape.modernbert_window,
            pad_token_id=tokenizer.pad_token_id, cls_token_id=tokenizer.cls_token_id,
            sep_token_id=tokenizer.sep_token_id, bos_token_id=tokenizer.cls_token_id,
            eos_token_id=tokenizer.sep_token_id, mask_token_id=tokenizer.mask_token_id)
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
            "mini-modernbert": lambda m: m.model}[family](model)
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
    raise ValueError(family)


class Objective(nn.Module):
    """One family's pre-training loss; DDP wraps this (so every head's gradients sync)."""

    def __init__(self, family: str, models: dict[str, nn.Module], teacher=None):
        super().__init__()
        self.family = family
        self.model = models["model"]
        self.generator = models.get("generator")
        self.teacher = teacher  # frozen, never trained (DistilBERT's mini-bert)
        if teacher is not None:
            for p in teacher.parameters():
                p.requires_grad_(False)

    def forward(self, ids, attention, types, inputs, labels, pair_labels=None, generator=None):
        fam, sel = self.family, labels != -100
        parts = {}
        if fam == "mini-electra":
            hidden_g, _ = encode(fam, self.generator, inputs, attention)
            g_logits = mlm_logits(fam, self.generator, hidden_g[sel])  # (N, V)
            parts["mlm"] = F.cross_entropy(g_logits.float(), labels[sel])
            with torch.no_grad():  # sample replacements from the generator (temperature 1)
                sampled = torch.multinomial(g_logits.float().softmax(-1), 1, generator=generator).squeeze(-1)
            corrupted = ids.clone()
            corrupted[sel] = sampled
            replaced = (corrupted != ids).float()
            hidden_d, _ = encode(fam, self.model, corrupted, attention)
            d_logits = self.model.discriminator_predictions(hidden_d)  # (B, T)
            real = attention.bool()
            parts["rtd"] = F.binary_cross_entropy_with_logits(d_logits[real].float(), replaced[real])
            return parts["mlm"] + 50.0 * parts["rtd"], parts
        hidden, pooled = encode(fam, self.model, inputs, attention, types)
        logits = mlm_logits(fam, self.model, hidden[sel])  # (N, V)
        parts["mlm"] = F.cross_entropy(logits.float(), labels[sel])
        loss = parts["mlm"]
        if fam == "mini-bert":
            parts["nsp"] = F.cross_entropy(self.model.cls.seq_relationship(pooled).float(), pair_labels)
            loss = loss + parts["nsp"]
        elif fam == "mini-albert":
            parts["sop"] = F.cross_entropy(self.model.sop_classifier(pooled).float(), pair_labels)
            loss = loss + parts["sop"]
        elif fam == "mini-distilbert":
            with torch.no_grad():
                t_hidden, _ = encode("mini-bert", self.teacher, inputs, attention, torch.zeros_like(inputs))
                t_logits = mlm_logits("mini-bert", self.teacher, t_hidden[sel]).float()
            temperature = 2.0
            parts["kd"] = F.kl_div(F.log_softmax(logits.float() / temperature, -1),
                                   F.softmax(t_logits / temperature, -1),
                                   reduction="batchmean") * temperature ** 2
            real = attention.bool()
            parts["cos"] = 1.0 - F.cosine_similarity(hidden[real].float(), t_hidden[real].float(), dim=-1).mean()
            loss = 5.0 * parts["kd"] + 2.0 * parts["mlm"] + 1.0 * parts["cos"]
        return loss, parts


def masking_policy(family: str) -> MaskingPolicy:
    if family == "mini-modernbert":
        return MaskingPolicy(rate=0.30)  # ModernBERT raised the masking rate to 30 %
    if family == "mini-electra":
        return MaskingPolicy(rate=0.15, mask=1.0, random=0.0, keep=0.0)  # the generator's input
    return MaskingPolicy(rate=0.15)


# --- the comparable score: whole words, independent of the tokenizer ---------------------------

WORD = re.compile(r"[A-Za-z]+")


def chosen_words(sentences: list[str], seed: int = 1234, rate: float = 0.15) -> list[list[tuple[int, int]]]:
    """The character spans of the words to mask in each sentence: the same for every family.

    Words are runs of letters; ``max(1, round(rate * n))`` of them per sentence, drawn with a
    generator seeded by the sentence's position, so the choice never depends on a tokenizer.
    """
    out = []
    for k, text in enumerate(sentences):
        spans = [m.span() for m in WORD.finditer(text)]
        if not spans:
            out.append([])
            continue
        rng = np.random.default_rng([seed, k])
        n = max(1, round(rate * len(spans)))
        out.append([spans[j] for j in sorted(rng.choice(len(spans), size=n, replace=False))])
    return out


@torch.no_grad()
def whole_word_accuracy(family: str, model, tokenizer, sentences: list[str], *, batch_size: int = 64,
                        autocast: str = "", seed: int = 1234) -> dict:
    """Whole-word masking accuracy: every piece of each chosen word -> mask; a word is right
    when every one of its pieces is the model's top-1. Also the mean loss per masked piece."""
    model.eval()
    words = chosen_words(sentences, seed=seed)
    device = next(model.parameters()).device
    right = total = pieces = 0
    loss_sum = 0.0
    for start in range(0, len(sentences), batch_size):
        batch = sentences[start : start + batch_size]
        enc = tokenizer(batch, truncation=True, max_length=128, padding=True,
                        return_offsets_mapping=True, return_special_tokens_mask=True, return_tensors="pt")
        ids, attention = enc["input_ids"], enc["attention_mask"]
        offsets, special = enc["offset_mapping"], enc["special_tokens_mask"].bool()
        word_of = torch.full(ids.shape, -1, dtype=torch.long)
        for b, spans in enumerate(words[start : start + batch_size]):
            for w, (s, e) in enumerate(spans):
                hit = (offsets[b, :, 0] < e) & (offsets[b, :, 1] > s) & ~special[b] & attention[b].bool()
                word_of[b][hit & (word_of[b] < 0)] = w
        sel = word_of >= 0
        if not sel.any():
            continue
        inputs = ids.clone()
        inputs[sel] = tokenizer.mask_token_id
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast == "bf16"):
            hidden, _ = encode(family, model, inputs.to(device), attention.to(device))
            logits = mlm_logits(family, model, hidden[sel.to(device)]).float()
        target = ids[sel].to(device)
        loss_sum += float(F.cross_entropy(logits, target, reduction="sum"))
        pieces += int(sel.sum())
        ok = (logits.argmax(-1) == target).cpu()
        key = torch.stack([torch.arange(len(ids))[:, None].expand_as(ids)[sel], word_of[sel]], 1)
        uniq, inverse = torch.unique(key, dim=0, return_inverse=True)
        wrong = torch.zeros(len(uniq), dtype=torch.long).index_add_(0, inverse, (~ok).long())
        right += int((wrong == 0).sum())
        total += len(uniq)
    return {"word_top1": right / max(total, 1), "words": total,
            "piece_loss": loss_sum / max(pieces, 1), "pieces": pieces}


@torch.no_grad()
def cloze_hits(family: str, model, tokenizer, items: list[dict], k: int = 5) -> dict:
    """The everyday cloze set: a hit when one of the top-k tokens at the mask is an answer."""
    model.eval()
    hits, rows = 0, []
    for item in items:
        enc = tokenizer(item["text"].replace("[MASK]", tokenizer.mask_token), return_tensors="pt")
        pos = int((enc["input_ids"][0] == tokenizer.mask_token_id).nonzero()[0])
        hidden, _ = encode(family, model, enc["input_ids"], enc["attention_mask"])
        top = mlm_logits(family, model, hidden[0, pos : pos + 1]).float()[0].topk(k).indices
        guesses = [tokenizer.decode([int(t)]).strip().lower() for t in top]
        hit = any(g in {a.lower() for a in item["answers"]} for g in guesses)
        hits += hit
        rows.append({"text": item["text"], "top": guesses, "hit": hit})
    return {"hit_rate": hits / max(len(items), 1), "items": rows}


@torch.no_grad()
def pair_accuracy(objective: Objective, examples: Examples, kind: str, seed: int = 1234) -> dict:
    """NSP or SOP accuracy on the held-out chunks (never trained on)."""
    model, fam = objective.model, objective.family
    model.eval()
    rng = np.random.default_rng(seed)
    rows, types, labels = [], [], []
    for i in examples.eval_idx:
        ids, tt, label = examples.pair(i, rng, kind)
        rows.append(ids), types.append(tt), labels.append(label)
    right = 0
    head = model.cls.seq_relationship if fam == "mini-bert" else model.sop_classifier
    for start in range(0, len(rows), 64):
        ids, tt, attention = pad_batch(rows[start : start + 64], types[start : start + 64], examples.pad)
        _, pooled = encode(fam, model, ids, attention, tt)
        pred = head(pooled).argmax(-1)
        right += int((pred == torch.tensor(labels[start : start + 64])).sum())
    return {"accuracy": right / max(len(rows), 1), "pairs": len(rows),
            "majority": max(np.mean(labels), 1 - np.mean(labels))}


@torch.no_grad()
def rtd_scores(objective: Objective, examples: Examples, seed: int = 1234) -> dict:
    """ELECTRA: the discriminator on generator-corrupted held-out chunks."""
    gen, disc = objective.generator, objective.model
    gen.eval(), disc.eval()
    g = torch.Generator().manual_seed(seed)
    p_rep, p_orig = [], []
    policy = masking_policy("mini-electra")
    rows = [examples.packed(i) for i in examples.eval_idx]
    for start in range(0, len(rows), 64):
        ids, tt, attention = pad_batch([r[0] for r in rows[start : start + 64]],
                                       [r[1] for r in rows[start : start + 64]], examples.pad)
        special = (attention == 0) | (ids == examples.cls) | (ids == examples.sep)
        inputs, labels, _ = apply_masking(ids, special, policy, mask_token_id=examples.tok.mask_token_id,
                                          vocab_size=len(examples.tok), generator=g)
        sel = labels != -100
        hidden, _ = encode("mini-electra", gen, inputs, attention)
        logits = mlm_logits("mini-electra", gen, hidden[sel]).float()
        corrupted = ids.clone()
        corrupted[sel] = torch.multinomial(logits.softmax(-1), 1, generator=g).squeeze(-1)
        hidden_d, _ = encode("mini-electra", disc, corrupted, attention)
        prob = disc.discriminator_predictions(hidden_d).float().sigmoid()
        real = attention.bool() & ~special
        replaced = (corrupted != ids) & real
        p_rep.append(prob[replaced]), p_orig.append(prob[real & ~replaced])
    rep, orig = torch.cat(p_rep), torch.cat(p_orig)
    return {"replaced_mean_p": float(rep.mean()), "original_mean_p": float(orig.mean()),
            "replaced_recall": float((rep > 0.5).float().mean()),
            "original_specificity": float((orig <= 0.5).float().mean()),
            "replaced": len(rep), "original": len(orig)}


# --- training -----------------------------------------------------------------------------

def _dist():
    import torch.distributed as dist

    return dist if dist.is_available() and dist.is_initialized() else None


def train_family(family: str, tokenizer, chunks, heldout: list[str], cfg: ZooConfig, out: Path,
                 teacher=None, device: torch.device | None = None, log=print) -> dict:
    """Train one family to ``cfg.tokens`` tokens; returns its record (curves, costs)."""
    from torch.utils.flop_counter import FlopCounterMode

    device = device or torch.device("cpu")
    dist = _dist()
    rank, world = (dist.get_rank(), dist.get_world_size()) if dist else (0, 1)
    torch.manual_seed(cfg.seed)
    models = build_models(family, tokenizer, cfg.shape, teacher)
    objective = Objective(family, models, teacher).to(device)
    trained = [p for p in objective.parameters() if p.requires_grad]
    wrapped = objective
    if dist:
        from torch.nn.parallel import DistributedDataParallel as DDP

        wrapped = DDP(objective, device_ids=[device.index] if device.type == "cuda" else None)
    decay = [p for n, p in objective.named_parameters() if p.requires_grad and p.ndim >= 2]
    no_decay = [p for n, p in objective.named_parameters() if p.requires_grad and p.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=cfg.lr, betas=(0.9, 0.98), eps=1e-6)
    examples = Examples(tokenizer, chunks, cfg.shape.max_len, cfg.seed)
    policy = masking_policy(family)
    pair_kind = {"mini-bert": "nsp", "mini-albert": "sop"}.get(family)
    static = family == "mini-bert"  # BERT: each example's masks (and pair) fixed once
    mask_gen = torch.Generator().manual_seed(cfg.seed * 7919 + rank)
    sample_gen = torch.Generator(device=device).manual_seed(cfg.seed + 17 + rank)
    rng = np.random.default_rng([cfg.seed, rank])
    special_ids = torch.tensor(sorted(set(tokenizer.all_special_ids)))
    eval_at = [round(cfg.tokens * (k + 1) / cfg.evals) for k in range(cfg.evals)]
    curve, log_rows = [], []
    tokens = step = 0
    flops_per_token = None
    cpu0, wall0 = time.process_time(), time.time()
    epoch = 0

    def batches():
        nonlocal epoch
        while True:
            order = np.random.default_rng([cfg.seed, epoch]).permutation(examples.train_idx)
            for b in range(0, len(order) - cfg.batch_size + 1, cfg.batch_size):
                if (b // cfg.batch_size) % world == rank:
                    yield order[b : b + cfg.batch_size]
            epoch += 1

    def make(idx):
        rows, types, labels_pair = [], [], []
        for i in idx:
            if pair_kind:
                r = np.random.default_rng([cfg.seed, int(i)]) if static else rng
                ids, tt, lab = examples.pair(int(i), r, pair_kind)
                labels_pair.append(lab)
            else:
                ids, tt = examples.packed(int(i))
            rows.append(ids), types.append(tt)
        ids, tt, attention = pad_batch(rows, types, examples.pad)
        special = (attention == 0) | torch.isin(ids, special_ids)
        if static:  # BERT's static masking: each example's draw depends on it alone
            parts = [apply_masking(ids[k : k + 1], special[k : k + 1], policy,
                                   mask_token_id=tokenizer.mask_token_id, vocab_size=len(tokenizer),
                                   generator=torch.Generator().manual_seed(cfg.seed * 1_000_003 + int(i)))
                     for k, i in enumerate(idx)]
            inputs, labels = torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])
        else:
            inputs, labels, _ = apply_masking(ids, special, policy, mask_token_id=tokenizer.mask_token_id,
                                              vocab_size=len(tokenizer), generator=mask_gen)
        pair = torch.tensor(labels_pair) if pair_kind else None
        return ids, tt, attention, inputs, labels, pair

    running = []
    for idx in batches():
        ids, tt, attention, inputs, labels, pair = (x.to(device) if x is not None else None for x in make(idx))
        n_tok = torch.tensor(float(attention.sum()), device=device)
        if dist:
            dist.all_reduce(n_tok)
        progress = tokens / cfg.tokens
        lr = cfg.lr * (progress / cfg.warmup if progress < cfg.warmup
                       else max(0.0, (1 - progress) / (1 - cfg.warmup)))
        for group in opt.param_groups:
            group["lr"] = lr
        objective.train()
        if teacher is not None:
            teacher.eval()
        counter = FlopCounterMode(display=False) if flops_per_token is None else None
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=cfg.autocast == "bf16"):
            if counter is not None:
                with counter:
                    loss, parts = wrapped(ids, attention, tt, inputs, labels, pair, sample_gen)
            else:
                loss, parts = wrapped(ids, attention, tt, inputs, labels, pair, sample_gen)
        opt.zero_grad(set_to_none=True)
        if counter is not None:
            with counter:
                loss.backward()
            flops_per_token = counter.get_total_flops() / float(attention.sum())
        else:
            loss.backward()
        torch.nn.utils.clip_grad_norm_(trained, 1.0)
        opt.step()
        tokens += int(n_tok)
        step += 1
        running.append({k: float(v.detach()) for k, v in parts.items()} | {"loss": float(loss.detach())})
        if step % 25 == 0 and rank == 0:
            mean = {k: sum(r[k] for r in running) / len(running) for k in running[0]}
            row = {"step": step, "tokens": tokens, "lr": lr, **{k: round(v, 4) for k, v in mean.items()},
                   "elapsed_s": round(time.time() - wall0, 1),
                   "tokens_per_s": round(tokens / max(time.time() - wall0, 1e-9))}
            log_rows.append(row)
            log(json.dumps({"family": family, **row}))
            running = []
        if eval_at and tokens >= eval_at[0]:
            while eval_at and tokens >= eval_at[0]:
                eval_at.pop(0)
            if rank == 0:
                mlm_model = objective.generator if family == "mini-electra" else objective.model
                score = whole_word_accuracy(family, mlm_model, tokenizer, heldout[: cfg.eval_sentences],
                                            autocast=cfg.autocast)
                point = {"tokens": tokens, "step": step, **score,
                         "train_loss": log_rows[-1]["loss"] if log_rows else float(loss)}
                curve.append(point)
                log(json.dumps({"family": family, "eval": point}))
        if tokens >= cfg.tokens:
            break
    wall, cpu = time.time() - wall0, time.process_time() - cpu0
    record = {
        "family": family, "tokens": tokens, "steps": step, "world_size": world,
        "wall_minutes": wall / 60, "cpu_minutes_rank0": cpu / 60,
        "flops_per_token": flops_per_token, "flops": flops_per_token * tokens,
        "masking": asdict(policy), "static_masking": static, "pair_objective": pair_kind,
        "curve": curve, "log": log_rows, "config": asdict(cfg),
    }
    return {"record": record, "objective": objective, "examples": examples}


def state_digest(module: nn.Module) -> str:
    """sha256 over every tensor of a module's state dict (the DDP replica check)."""
    h = hashlib.sha256()
    for name, value in sorted(module.state_dict().items()):
        h.update(name.encode())
        h.update(value.detach().float().cpu().numpy().tobytes())
    return h.hexdigest()
