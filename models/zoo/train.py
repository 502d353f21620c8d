"""Training the mini zoo: seven encoder families, one shape, one corpus, one token budget.

Each family is the real transformers class with its defining ideas in miniature:

=================  =====================================================================
mini-bert          BertForPreTraining: MLM + next-sentence prediction, static masking
mini-roberta       RobertaForMaskedLM: dynamic masking, no NSP, full-sentence packing
mini-distilbert    DistilBertForMaskedLM, 2 layers initialised from every other layer of
                   mini-bert, triple loss (soft targets, MLM, hidden-state cosine)
mini-albert        AlbertForPreTraining: factorised embedding (64), one shared layer, MLM + SOP
mini-electra       ElectraForPreTraining (discriminator) trained jointly with a 32-wide
                   ElectraForMaskedLM generator (shared embeddings): replaced-token detection
mini-deberta       DebertaV2ForMaskedLM: disentangled attention with relative positions,
                   MLM objective (DeBERTa-v2's, not v3's RTD)
mini-modernbert    ModernBertForMaskedLM: RoPE, GeGLU, alternating global / local (window
                   32: 16 tokens each side) attention, 30 % masking, no biases; padded
                   batches (transformers' ModernBERT does not unpad; no flash-attn here)
=================  =====================================================================

The loss runs each MLM head at the masked positions only (the 8k-way projection is most of
the cost). Masking is the project's one implementation (``models.pretraining.masking.apply_masking``).
Runs on one process or under ``torchrun`` with DistributedDataParallel (gloo on CPU, NCCL
on CUDA): each rank takes every ``world``-th batch; gradients are averaged by DDP.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn

from ..pretraining.masking import apply_masking
from .data import Examples, pad_batch
from .families import Objective, Shape, build_models, masking_policy
from .scores import whole_word_accuracy

@dataclass(frozen=True)
class ZooConfig:
    """One training budget for every family."""

    tokens: int = 3_000_000  # training tokens per family (non-padding inputs of the trained model)
    batch_size: int = 16
    lr: float = 1e-3
    warmup: float = 0.06  # share of the budget with a linear warm-up, then linear decay to 0
    weight_decay: float = 0.01
    seed: int = 0
    autocast: str = ""  # "" (float32) or "bf16"; float32 ran 6.7 k tokens/s here, bf16 4.4 k (2 Zen 4 cores)
    evals: int = 8  # learning-curve points
    eval_sentences: int = 300  # held-out sentences per learning-curve point
    threads: int = 0
    shape: Shape = field(default_factory=Shape)


def _dist():
    import torch.distributed as dist

    return dist if dist.is_available() and dist.is_initialized() else None


def flop_counter():
    """torch's FlopCounterMode, also counting the CPU's fused attention kernel.

    torch (2.13) has FLOP formulas for the CUDA SDPA kernels but not for
    ``_scaled_dot_product_flash_attention_for_cpu`` (what SDPA runs for ModernBERT on a CPU):
    without these two entries its attention would count as zero. They use torch's own
    formulas for the other SDPA kernels (forward: QK^T and AV; backward: five matmuls).
    """
    from torch.utils.flop_counter import FlopCounterMode, sdpa_backward_flop_count, sdpa_flop_count

    def forward(query, key, value, *args, out_shape=None, **kwargs) -> int:
        return sdpa_flop_count(query, key, value)

    def backward(grad_out, query, key, value, *args, out_shape=None, **kwargs) -> int:
        return sdpa_backward_flop_count(grad_out, query, key, value)

    aten = torch.ops.aten
    return FlopCounterMode(display=False, custom_mapping={
        aten._scaled_dot_product_flash_attention_for_cpu: forward,
        aten._scaled_dot_product_flash_attention_for_cpu_backward: backward,
    })


def train_step(wrapped, opt, trained, batch, sample_gen, autocast: str = "", count_flops: bool = False):
    """One optimisation step: (loss, loss parts, FLOPs or None).

    With ``count_flops`` one counter spans the forward (a teacher's included) and the
    backward: FlopCounterMode resets its counts each time it is entered, so it is entered
    once per step.
    """
    ids, attention, tt, inputs, labels, pair = batch
    counter = flop_counter() if count_flops else contextlib.nullcontext()
    with counter:
        with torch.autocast(ids.device.type, dtype=torch.bfloat16, enabled=autocast == "bf16"):
            loss, parts = wrapped(ids, attention, tt, inputs, labels, pair, sample_gen)
        opt.zero_grad(set_to_none=True)
        loss.backward()
    torch.nn.utils.clip_grad_norm_(trained, 1.0)
    opt.step()
    return loss, parts, counter.get_total_flops() if count_flops else None


def train_family(family: str, tokenizer, chunks, heldout: list[str], cfg: ZooConfig, out: Path,
                 teacher=None, device: torch.device | None = None, log=print,
                 models: dict[str, nn.Module] | None = None, max_steps: int = 0) -> dict:
    """Train one family to ``cfg.tokens`` tokens; returns its record (curves, costs).

    ``models``: start from these instead of a random init (``build_models``' keys);
    ``max_steps``: stop after that many steps (0: at the budget). The FLOPs recount
    (``scripts/zoo_flops.py``) runs the shipped models for one step this way.
    """
    device = device or torch.device("cpu")
    dist = _dist()
    rank, world = (dist.get_rank(), dist.get_world_size()) if dist else (0, 1)
    torch.manual_seed(cfg.seed)
    if models is None:
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
        loss, parts, flops = train_step(wrapped, opt, trained, (ids, attention, tt, inputs, labels, pair),
                                        sample_gen, cfg.autocast, count_flops=flops_per_token is None)
        if flops is not None:
            flops_per_token = flops / float(attention.sum())
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
        if tokens >= cfg.tokens or step == max_steps:
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
