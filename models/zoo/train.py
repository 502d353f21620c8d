"""Training the mini zoo: seven encoder families, one shape, one corpus, one token budget.

Each family is the real transformers class with its defining ideas in miniature:

=================  =====================================================================
mini-bert          BertForPreTraining: MLM + next-sentence prediction, static masking
mini-roberta       RobertaForMaskedLM: dynamic masking, no NSP, full-sentence packing
mini-distilbert    DistilBertForMaskedLM, 2 layers initialised from every other layer of
                   mini-bert, triple loss (soft targets, MLM, hidden-state cosine)
mini-albert        AlbertForPreTraining: factorised embedding (96), one shared layer, MLM + SOP
mini-electra       ElectraForPreTraining (discriminator) trained jointly with a 128-wide
                   ElectraForMaskedLM generator (shared embeddings): replaced-token detection
mini-deberta       DebertaV2ForMaskedLM: disentangled attention with relative positions,
                   MLM objective (DeBERTa-v2's, not v3's RTD)
mini-modernbert    ModernBertForMaskedLM: RoPE, GeGLU, alternating global / local (window
                   32: 16 tokens each side) attention, 30 % masking, no biases; padded
                   batches (transformers' ModernBERT does not unpad; no flash-attn here)
=================  =====================================================================

The loss runs each MLM head at the masked positions only (the 8k-way projection is most of
the cost). Masking is the project's one implementation (``models.pretraining.masking.apply_masking``).
On the CPU (``ZooConfig.fast_kernels``, default on) each batch's rows are split over
``ZooConfig.workers`` threads, each running torch's kernels on its own core, with the
faster dropout and attention of ``models.zoo.fast``: each part's losses are weighted by its
share of what they average over and the gradients summed in a fixed order, so the step is
the whole batch's (summation order aside; dropout and ELECTRA's samples are other draws of
the same distributions). ``fast_kernels=False`` is the path the CPU zoo was first trained on.
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
from .allocator import current_allocator
from .data import Examples, pad_batch, static_masking
from .fast import dropout_generator, fast_kernels
from .families import DECODERS, Objective, Shape, build_models, masking_policy
from .scores import next_piece_scores, whole_word_accuracy

STATIC_COPIES = 10  # BERT's dupe_factor: static masking draws 10 maskings of each sequence


@dataclass(frozen=True)
class ZooConfig:
    """One training budget for every family."""

    tokens: int = 3_000_000  # training tokens per family (non-padding inputs of the trained model)
    batch_size: int = 16
    lr: float = 1e-3
    warmup: float = 0.06  # share of the budget with a linear warm-up, then linear decay to 0
    weight_decay: float = 0.01
    seed: int = 0
    # "" (float32) or "bf16": the products in bfloat16, weights, optimiser and losses in float32.
    # With the fast CPU path bf16 trained mini-bert at 24.5 k tokens/s here, float32 at 16.7 k
    # (2 AMD EPYC cores with avx512_bf16; bench/zoo_throughput.py, two runs of 2026-11-27); on
    # the stock path it was slower (4.4 k against 6.7 k tokens/s, SDPA's bf16 backward)
    autocast: str = ""
    evals: int = 8  # learning-curve points
    eval_sentences: int = 300  # held-out sentences per learning-curve point
    threads: int = 0
    dropout: float | None = None  # None: each family's config default (0.1; ModernBERT 0)
    # how a learnt absolute position table starts: "local" (the locality start, locality.py:
    # sinusoids, heads 0 and 1 of each layer as previous/next-token heads), "sinusoidal", "random"
    position_init: str = "local"
    init_std: float | None = None  # initializer_range (None: transformers' 0.02)
    # the same maths on faster CPU kernels (models/zoo/fast.py): linear layers on oneDNN forward
    # and backward, dropout masks from 32-bit random integers, attention with dropout as explicit
    # products, fused AdamW; False: torch's stock kernels (the shipped zoo's path)
    fast_kernels: bool = True
    # with fast_kernels, on the CPU, one process: each batch's rows split over this many threads
    # (torch's threads shared out among them), each part's losses weighted by its share of what
    # they average over and the gradients summed in a fixed order: the whole batch's gradient
    workers: int = 2
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
    mapping = {aten._scaled_dot_product_flash_attention_for_cpu: forward,
               aten._scaled_dot_product_flash_attention_for_cpu_backward: backward}
    return FlopCounterMode(display=False, custom_mapping=mapping)


def train_step(wrapped, opt, trained, batch, sample_gen, autocast: str = "", count_flops: bool = False):
    """One optimisation step: (loss, loss parts, FLOPs or None).

    With ``count_flops`` one counter spans the forward (a teacher's included) and the
    backward: FlopCounterMode resets its counts each time it is entered, so it is entered
    once per step.
    """
    ids, attention, tt, inputs, labels, pair = batch
    counter = flop_counter() if count_flops else contextlib.nullcontext()
    from torch.profiler import record_function  # labels for scripts/zoo_profile.py (no cost unprofiled)

    with counter:
        with record_function("zoo.forward"), torch.autocast(ids.device.type, dtype=torch.bfloat16,
                                                            enabled=autocast == "bf16"):
            loss, parts = wrapped(ids, attention, tt, inputs, labels, pair, sample_gen)
        opt.zero_grad(set_to_none=True)
        with record_function("zoo.backward"):
            loss.backward()
    with record_function("zoo.optimizer"):
        torch.nn.utils.clip_grad_norm_(trained, 1.0)
        opt.step()
    return loss, parts, counter.get_total_flops() if count_flops else None


def split_batch(batch, workers: int):
    """``batch`` as ``workers`` parts of consecutive rows, each cut to its longest row, with
    each part's shares of the batch's masked positions, real tokens and rows; None when a
    part would have no masked position (its mean would be undefined)."""
    ids, attention, tt, inputs, labels, pair = batch
    rows = ids.shape[0]
    bounds = [round(rows * k / workers) for k in range(workers + 1)]
    n_masked, n_real = float((labels != -100).sum()), float(attention.sum())
    parts = []
    for a, b in zip(bounds, bounds[1:]):
        if b <= a:
            return None
        width = int(attention[a:b].sum(1).max())
        part = tuple(None if x is None else x[a:b, :width] if x.dim() == 2 else x[a:b] for x in batch)
        masked = float((part[4] != -100).sum())
        if not masked:
            return None
        parts.append((part, {"masked": masked / n_masked, "real": float(part[1].sum()) / n_real,
                             "rows": (b - a) / rows}))
    return parts


def split_step(objective, opt, trained, batch, sample_gen, pool, workers: int, count_flops: bool = False,
               autocast: str = ""):
    """``train_step`` with the batch's rows split over ``pool``'s threads (see ``split_batch``):
    the same loss and, summation order aside, the same gradient. Each part draws its dropout
    and ELECTRA's samples from generators seeded here, from torch's default generator and
    ``sample_gen``, so a run (and a resumed one) is reproducible whichever thread runs first."""
    from torch.profiler import record_function

    parts = split_batch(batch, workers)
    if parts is None:
        return train_step(objective, opt, trained, batch, sample_gen, autocast, count_flops=count_flops)
    seeds = torch.randint(0, 2 ** 62, (len(parts),)).tolist()
    sample_seeds = torch.randint(0, 2 ** 62, (len(parts),), generator=sample_gen,
                                 device=sample_gen.device).tolist()

    def work(k):
        part, shares = parts[k]
        with dropout_generator(torch.Generator().manual_seed(seeds[k])):
            # autocast's state is per thread, its cache of weights cast to bfloat16 is not: with it,
            # one part's graph could take the other's cast of a weight (its backward node, numbered
            # in that thread), and the tied embeddings' gradient be summed in another order from
            # run to run (ELECTRA's runs differed in the last bits within 20 steps)
            with record_function("zoo.forward"), torch.autocast(
                    "cpu", dtype=torch.bfloat16, enabled=autocast == "bf16", cache_enabled=False):
                loss, losses = objective(*part, torch.Generator().manual_seed(sample_seeds[k]), shares=shares)
            with record_function("zoo.backward"):
                if count_flops:  # in turn, into .grad (FlopCounterMode's module hooks refuse autograd.grad)
                    loss.backward()
                    grads = None
                else:
                    grads = torch.autograd.grad(loss, trained, allow_unused=True)
        return loss.detach(), {name: v.detach() for name, v in losses.items()}, grads

    opt.zero_grad(set_to_none=True)
    counter = flop_counter() if count_flops else contextlib.nullcontext()
    with counter:  # a dispatch mode sees its own thread only: the counted step runs the parts in turn
        done = [work(k) for k in range(len(parts))] if count_flops else list(pool.map(work, range(len(parts))))
    if not count_flops:
        for i, p in enumerate(trained):
            grads = [d[2][i] for d in done if d[2][i] is not None]
            if grads:
                total = grads[0]
                for g in grads[1:]:  # a fixed order: part 0 + part 1 + ... (as .grad accumulates in turn)
                    total = total + g
                p.grad = total
    with record_function("zoo.optimizer"):
        torch.nn.utils.clip_grad_norm_(trained, 1.0)
        opt.step()
    loss, losses = done[0][0], dict(done[0][1])
    for d in done[1:]:
        loss = loss + d[0]
        losses = {name: v + d[1][name] for name, v in losses.items()}
    return loss, losses, counter.get_total_flops() if count_flops else None


def train_family(family: str, tokenizer, chunks, heldout: list[str], cfg: ZooConfig,
                 teacher=None, device: torch.device | None = None, log=print,
                 models: dict[str, nn.Module] | None = None, max_steps: int = 0,
                 deadline: float = 0.0, step_hook=None, checkpoint: Path | None = None,
                 checkpoint_every: int = 0, on_step=None, stop_tokens: int = 0) -> dict:
    """Train one family to ``cfg.tokens`` tokens; returns its record (curves, costs).

    ``models``: start from these instead of a random init (``build_models``' keys);
    ``max_steps``: stop after that many steps (0: at the budget). The FLOPs recount
    (``scripts/zoo_flops.py``) runs the shipped models for one step this way.
    ``stop_tokens``: stop once that many tokens are reached, on the schedule of the whole
    budget (0: at the budget): a tuning trial that is the opening of its own full run.
    ``deadline``: a ``time.time()`` after which the run stops where it is (0: none); the
    record then says ``stopped_at_deadline`` and has the tokens it reached.
    ``step_hook``: called after every step (the profiler's ``step``); ``on_step``: called
    after every step with (steps, tokens) so far (the throughput bench's clock).
    ``checkpoint``: a file; when it exists the run resumes from it exactly where it stopped
    (weights, optimizer, data position, every random generator, curve and log), and every
    ``checkpoint_every`` steps (and at the end) the run's state is written there, so a long
    run can be spread over several sittings: N steps straight and N/2 + resume + N/2 give
    the same weights.
    """
    device = device or torch.device("cpu")
    dist = _dist()
    rank, world = (dist.get_rank(), dist.get_world_size()) if dist else (0, 1)
    torch.manual_seed(cfg.seed)
    if models is None:
        models = build_models(family, tokenizer, cfg.shape, teacher, dropout=cfg.dropout,
                              position_init=cfg.position_init, init_std=cfg.init_std)
    objective = Objective(family, models, teacher).to(device)
    trained = [p for p in objective.parameters() if p.requires_grad]
    wrapped = objective
    if dist:
        from torch.nn.parallel import DistributedDataParallel as DDP

        wrapped = DDP(objective, device_ids=[device.index] if device.type == "cuda" else None)
    decay = [p for n, p in objective.named_parameters() if p.requires_grad and p.ndim >= 2]
    no_decay = [p for n, p in objective.named_parameters() if p.requires_grad and p.ndim < 2]
    fast = cfg.fast_kernels and device.type == "cpu"
    workers = max(1, cfg.workers) if fast and not dist else 1
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=cfg.lr, betas=(0.9, 0.98), eps=1e-6,
                            **({"fused": True} if device.type == "cuda" or fast else {"foreach": True}))
    examples = Examples(tokenizer, chunks, cfg.shape.max_len, cfg.seed)
    policy = masking_policy(family)
    causal = family in DECODERS
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
    epoch = slot = 0  # the data position: epoch, and batch slots of it already taken
    running = []
    state_extra = {"wall_s": 0.0, "cpu_s": 0.0}
    if checkpoint is not None and Path(checkpoint).is_file():
        # read onto the CPU: a generator's state (a CUDA one's too) must be a CPU byte tensor;
        # the weights and the optimiser's moments are copied onto their parameters' device
        saved = torch.load(checkpoint, map_location="cpu", weights_only=False)
        objective.load_state_dict(saved["objective"])
        opt.load_state_dict(saved["optimizer"])
        mask_gen.set_state(saved["mask_gen"])
        sample_gen.set_state(saved["sample_gen"])
        rng.bit_generator.state = saved["numpy_rng"]
        torch.set_rng_state(saved["torch_rng"])
        if device.type == "cuda" and saved.get("cuda_rng") is not None:
            torch.cuda.set_rng_state(saved["cuda_rng"], device)
        tokens, step, epoch, slot = saved["tokens"], saved["step"], saved["epoch"], saved["slot"]
        curve, log_rows, eval_at = saved["curve"], saved["log_rows"], saved["eval_at"]
        flops_per_token = saved["flops_per_token"]
        running = [{k: torch.tensor(v, dtype=torch.float32, device=device) for k, v in r.items()}
                   for r in saved["running"]]
        state_extra = saved["elapsed"]
        log(json.dumps({"family": family, "resumed": {"step": step, "tokens": tokens}}))

    def save_checkpoint():
        tmp = Path(str(checkpoint) + ".tmp")
        torch.save({
            "objective": objective.state_dict(), "optimizer": opt.state_dict(),
            "mask_gen": mask_gen.get_state(), "sample_gen": sample_gen.get_state(),
            "numpy_rng": rng.bit_generator.state, "torch_rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state(device) if device.type == "cuda" else None,
            "tokens": tokens, "step": step, "epoch": epoch, "slot": slot, "curve": curve,
            "log_rows": log_rows, "eval_at": eval_at, "flops_per_token": flops_per_token,
            "running": [{k: float(v) for k, v in r.items()} for r in running],
            "elapsed": {"wall_s": state_extra["wall_s"] + time.time() - wall0,
                        "cpu_s": state_extra["cpu_s"] + time.process_time() - cpu0},
        }, tmp)
        tmp.replace(checkpoint)

    def batches():
        nonlocal epoch, slot
        while True:
            order = np.random.default_rng([cfg.seed, epoch]).permutation(examples.train_idx)
            n_slots = (len(order) - cfg.batch_size) // cfg.batch_size + 1 if len(order) >= cfg.batch_size else 0
            while slot < n_slots:
                b = slot * cfg.batch_size
                slot += 1
                if (slot - 1) % world == rank:
                    yield order[b : b + cfg.batch_size]
            epoch, slot = epoch + 1, 0

    def make(idx):
        # BERT's static masking: each example's masks and pair are drawn once per copy; the
        # data is copied STATIC_COPIES times (BERT's dupe_factor), so epoch e sees copy e % 10.
        copy_seed = 7_777_777 * (epoch % STATIC_COPIES)
        rows, types, labels_pair = [], [], []
        for i in idx:
            if pair_kind:
                r = np.random.default_rng([cfg.seed, int(i) + copy_seed]) if static else rng
                ids, tt, lab = examples.pair(int(i), r, pair_kind)
                labels_pair.append(lab)
            else:
                ids, tt = examples.packed(int(i))
            rows.append(ids), types.append(tt)
        ids, tt, attention = pad_batch(rows, types, examples.pad)
        if causal:  # a decoder: no masking; every real piece after the first is a target
            labels = ids.masked_fill(attention == 0, -100)
            labels[:, 0] = -100
            return ids, tt, attention, ids, labels, None
        special = (attention == 0) | torch.isin(ids, special_ids)
        if static:  # BERT's static masking: each example's draw depends on it (and its copy) alone
            keys = np.array([cfg.seed * 1_000_003 + int(i) + copy_seed for i in idx], dtype=np.uint64)
            inputs, labels = static_masking(ids, special, policy, keys, mask_token_id=tokenizer.mask_token_id,
                                            vocab_size=len(tokenizer))
        else:
            inputs, labels, _ = apply_masking(ids, special, policy, mask_token_id=tokenizer.mask_token_id,
                                              vocab_size=len(tokenizer), generator=mask_gen)
        pair = torch.tensor(labels_pair) if pair_kind else None
        return ids, tt, attention, inputs, labels, pair

    stopped_at_deadline = False
    threads = torch.get_num_threads()
    pool = None
    if workers > 1:  # torch's threads shared out among the workers
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="zoo-worker")
        torch.set_num_threads(max(1, threads // workers))
    with fast_kernels(objective, fast), contextlib.ExitStack() as cleanup:
        if pool is not None:
            cleanup.callback(torch.set_num_threads, threads)
            cleanup.callback(pool.shutdown)
        reached = bool(stop_tokens) and tokens >= stop_tokens  # a finished trial, resumed: no step more
        for idx in () if reached else batches():
            with torch.profiler.record_function("zoo.data"):
                made = make(idx)
            n_real = int(made[2].sum())  # non-padding tokens, counted on the CPU (no device sync)
            ids, tt, attention, inputs, labels, pair = (x.to(device, non_blocking=True) if x is not None else None
                                                        for x in made)
            if dist:
                n_tok = torch.tensor(float(n_real), device=device)
                dist.all_reduce(n_tok)
                n_real = int(n_tok)
            progress = tokens / cfg.tokens
            lr = cfg.lr * (progress / cfg.warmup if progress < cfg.warmup
                           else max(0.0, (1 - progress) / (1 - cfg.warmup)))
            for group in opt.param_groups:
                group["lr"] = lr
            objective.train()
            if teacher is not None:
                teacher.eval()
            batch = (ids, attention, tt, inputs, labels, pair)
            if pool is not None:
                loss, parts, flops = split_step(objective, opt, trained, batch, sample_gen, pool, workers,
                                                count_flops=flops_per_token is None, autocast=cfg.autocast)
            else:
                loss, parts, flops = train_step(wrapped, opt, trained, batch, sample_gen, cfg.autocast,
                                                count_flops=flops_per_token is None)
            if flops is not None:
                flops_per_token = flops / float(made[2].sum())
            tokens += n_real
            step += 1
            # kept on the device until the log line (reading a value every step would sync)
            running.append({k: v.detach() for k, v in parts.items()} | {"loss": loss.detach()})
            if step % 25 == 0 and rank == 0:
                mean = {k: float(torch.stack([r[k] for r in running]).float().mean()) for k in running[0]}
                row = {"step": step, "tokens": tokens, "lr": lr, **{k: round(v, 4) for k, v in mean.items()},
                       "elapsed_s": round(state_extra["wall_s"] + time.time() - wall0, 1),
                       "tokens_per_s": round(tokens / max(state_extra["wall_s"] + time.time() - wall0, 1e-9))}
                log_rows.append(row)
                log(json.dumps({"family": family, **row}))
                running = []
            if eval_at and tokens >= eval_at[0]:
                while eval_at and tokens >= eval_at[0]:
                    eval_at.pop(0)
                if rank == 0:
                    mlm_model = objective.generator if family == "mini-electra" else objective.model
                    if pool is not None:  # the evaluation is one batch at a time: all of torch's threads
                        torch.set_num_threads(threads)
                    score = (next_piece_scores if causal else whole_word_accuracy)(
                        family, mlm_model, tokenizer, heldout[: cfg.eval_sentences], autocast=cfg.autocast)
                    if pool is not None:
                        torch.set_num_threads(max(1, threads // workers))
                    point = {"tokens": tokens, "step": step, **score,
                             "train_loss": log_rows[-1]["loss"] if log_rows else float(loss.detach())}
                    curve.append(point)
                    log(json.dumps({"family": family, "eval": point}))
            if step_hook is not None:
                step_hook()
            if on_step is not None:
                on_step(step, tokens)
            if checkpoint is not None and checkpoint_every and step % checkpoint_every == 0:
                save_checkpoint()
            if tokens >= cfg.tokens or step == max_steps or (stop_tokens and tokens >= stop_tokens):
                break
            if deadline and time.time() > deadline:
                stopped_at_deadline = True
                break
    if checkpoint is not None:
        save_checkpoint()
    wall = state_extra["wall_s"] + time.time() - wall0
    cpu = state_extra["cpu_s"] + time.process_time() - cpu0
    record = {
        "family": family, "tokens": tokens, "steps": step, "world_size": world, "allocator": current_allocator(),
        "wall_minutes": wall / 60, "cpu_minutes_rank0": cpu / 60,
        "flops_per_token": flops_per_token, "flops": flops_per_token * tokens,
        "masking": None if causal else asdict(policy), "static_masking": static, "pair_objective": pair_kind,
        **({"objective": "next-token prediction (causal LM)"} if causal else {}),
        "curve": curve, "log": log_rows, "config": asdict(cfg), "stopped_at_deadline": stopped_at_deadline,
    }
    return {"record": record, "objective": objective, "examples": examples}


def state_digest(module: nn.Module) -> str:
    """sha256 over every tensor of a module's state dict (the DDP replica check)."""
    h = hashlib.sha256()
    for name, value in sorted(module.state_dict().items()):
        h.update(name.encode())
        h.update(value.detach().float().cpu().numpy().tobytes())
    return h.hexdigest()
