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
the same distributions). ``fast_kernels=False`` runs torch's stock kernels on the whole batch (the reference the fast
path is tested against).
Runs on one process or under ``torchrun`` with DistributedDataParallel (gloo on CPU, NCCL
on CUDA): each rank takes every ``world``-th batch; gradients are averaged by DDP.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.nn as nn

from .allocator import current_allocator
from .batches import BatchMaker, Position, batch_indices, mask_generator, pair_rng, sample_generator
from .data import Examples
from .fast import fast_kernels
from .families import DECODERS, Objective, Shape, build_models, masking_policy
from .scores import next_piece_scores, whole_word_accuracy
from .step import split_step, train_step

PAIR_KIND = {"mini-bert": "nsp", "mini-albert": "sop"}  # the families with a sentence-pair objective
LOG_EVERY = 25  # steps per log line (the mean of each loss over them)


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
    # products, fused AdamW; False: torch's stock kernels, one batch per step
    fast_kernels: bool = True
    # with fast_kernels, on the CPU, one process: each batch's rows split over this many threads
    # (torch's threads shared out among them), each part's losses weighted by its share of what
    # they average over and the gradients summed in a fixed order: the whole batch's gradient
    workers: int = 2
    # BERT's NSP negatives: "any" (its own draw) or "same-source" (models.zoo.data.NSP_NEGATIVES);
    # "same-source" needs each chunk's source (train_family's ``sources``)
    nsp_negatives: str = "any"
    shape: Shape = field(default_factory=Shape)


def _dist():
    import torch.distributed as dist

    return dist if dist.is_available() and dist.is_initialized() else None


@dataclass(frozen=True)
class Until:
    """When a run stops: at its budget (``ZooConfig.tokens``) or earlier (see ``train_family``)."""

    max_steps: int = 0
    stop_tokens: int = 0
    deadline: float = 0.0


@dataclass(frozen=True)
class Hooks:
    """What a run calls and writes as it goes (see ``train_family``)."""

    log: Callable[[str], None] = print
    step_hook: Callable[[], None] | None = None
    on_step: Callable[[int, int], None] | None = None
    checkpoint: Path | None = None
    checkpoint_every: int = 0


@dataclass
class Run:
    """A run in progress: its models, optimiser and batches, and where it stands (what a
    checkpoint keeps besides the weights, the optimiser and the generators)."""

    family: str
    cfg: ZooConfig
    device: torch.device
    objective: Objective
    wrapped: nn.Module  # the objective, DDP-wrapped under torchrun
    trained: list[nn.Parameter]
    opt: torch.optim.Optimizer
    examples: Examples
    maker: BatchMaker
    sample_gen: torch.Generator
    teacher: nn.Module | None
    dist: object = None
    rank: int = 0
    world: int = 1
    workers: int = 1  # threads each batch's rows are split over
    fast: bool = False
    position: Position = field(default_factory=Position)
    tokens: int = 0
    step: int = 0
    curve: list[dict] = field(default_factory=list)
    log_rows: list[dict] = field(default_factory=list)
    eval_at: list[int] = field(default_factory=list)
    flops_per_token: float | None = None
    running: list[dict] = field(default_factory=list)  # the loss parts since the last log line
    elapsed: dict = field(default_factory=lambda: {"wall_s": 0.0, "cpu_s": 0.0})  # before this sitting
    wall0: float = field(default_factory=time.time)
    cpu0: float = field(default_factory=time.process_time)
    pool: ThreadPoolExecutor | None = None
    threads: int = 0  # torch's threads outside the worker pool
    stopped_at_deadline: bool = False

    def wall_s(self) -> float:
        return self.elapsed["wall_s"] + time.time() - self.wall0

    def cpu_s(self) -> float:
        return self.elapsed["cpu_s"] + time.process_time() - self.cpu0


def train_family(family: str, tokenizer, chunks, heldout: list[str], cfg: ZooConfig,
                 teacher=None, device: torch.device | None = None, log=print,
                 models: dict[str, nn.Module] | None = None, max_steps: int = 0,
                 deadline: float = 0.0, step_hook=None, checkpoint: Path | None = None,
                 checkpoint_every: int = 0, on_step=None, stop_tokens: int = 0,
                 sources: list[str] | None = None) -> dict:
    """Train one family to ``cfg.tokens`` tokens; returns its record (curves, costs).

    ``models``: start from these instead of a random init (``build_models``' keys);
    ``max_steps``: stop after that many steps (0: at the budget). The FLOPs recount
    (``python -m scripts.zoo flops``) runs the shipped models for one step this way.
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
    the same weights. ``sources``: each chunk's source name (for ``cfg.nsp_negatives``).
    """
    hooks = Hooks(log, step_hook, on_step, checkpoint, checkpoint_every)
    run = start_run(family, tokenizer, chunks, cfg, teacher, device or torch.device("cpu"), models, sources)
    if checkpoint is not None and Path(checkpoint).is_file():
        resume(run, Path(checkpoint), log)
    with worker_pool(run), fast_kernels(run.objective, run.fast):
        train_loop(run, tokenizer, heldout, Until(max_steps, stop_tokens, deadline), hooks)
    if checkpoint is not None:
        save_checkpoint(run, Path(checkpoint))
    return {"record": run_record(run), "objective": run.objective, "examples": run.examples}


def start_run(family: str, tokenizer, chunks, cfg: ZooConfig, teacher, device: torch.device,
              models: dict[str, nn.Module] | None, sources: list[str] | None = None) -> Run:
    """The run's models (``cfg.seed`` seeds their initialisation), optimiser and batches, at step 0."""
    dist = _dist()
    rank, world = (dist.get_rank(), dist.get_world_size()) if dist else (0, 1)
    torch.manual_seed(cfg.seed)
    if models is None:
        models = build_models(family, tokenizer, cfg.shape, teacher, dropout=cfg.dropout,
                              position_init=cfg.position_init, init_std=cfg.init_std)
    objective = Objective(family, models, teacher).to(device)
    wrapped = objective
    if dist:
        from torch.nn.parallel import DistributedDataParallel as DDP

        wrapped = DDP(objective, device_ids=[device.index] if device.type == "cuda" else None)
    fast = cfg.fast_kernels and device.type == "cpu"
    examples = Examples(tokenizer, chunks, cfg.shape.max_len, cfg.seed, sources=sources,
                        nsp_negatives=cfg.nsp_negatives if PAIR_KIND.get(family) == "nsp" else "any")
    maker = BatchMaker(examples, tokenizer, masking_policy(family), PAIR_KIND.get(family),
                       static=family == "mini-bert", seed=cfg.seed, mask_gen=mask_generator(cfg.seed, rank),
                       rng=pair_rng(cfg.seed, rank), causal=family in DECODERS)
    return Run(family, cfg, device, objective, wrapped, [p for p in objective.parameters() if p.requires_grad],
               optimizer(objective, cfg, fused=device.type == "cuda" or fast), examples, maker,
               sample_generator(cfg.seed, rank, device), teacher, dist, rank, world,
               workers=max(1, cfg.workers) if fast and not dist else 1, fast=fast,
               eval_at=[round(cfg.tokens * (k + 1) / cfg.evals) for k in range(cfg.evals)])


def optimizer(objective: nn.Module, cfg: ZooConfig, fused: bool) -> torch.optim.AdamW:
    """AdamW, weight decay on the matrices only (not on biases, norms' gains)."""
    params = [p for p in objective.parameters() if p.requires_grad]
    return torch.optim.AdamW([{"params": [p for p in params if p.ndim >= 2], "weight_decay": cfg.weight_decay},
                              {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0}],
                             lr=cfg.lr, betas=(0.9, 0.98), eps=1e-6, **({"fused": True} if fused else {"foreach": True}))


def resume(run: Run, checkpoint: Path, log) -> None:
    """The run's state as ``save_checkpoint`` wrote it: it goes on exactly where it stopped."""
    # read onto the CPU: a generator's state (a CUDA one's too) must be a CPU byte tensor;
    # the weights and the optimiser's moments are copied onto their parameters' device
    saved = torch.load(checkpoint, map_location="cpu", weights_only=False)
    run.objective.load_state_dict(saved["objective"])
    run.opt.load_state_dict(saved["optimizer"])
    run.maker.mask_gen.set_state(saved["mask_gen"])
    run.sample_gen.set_state(saved["sample_gen"])
    run.maker.rng.bit_generator.state = saved["numpy_rng"]
    torch.set_rng_state(saved["torch_rng"])
    if run.device.type == "cuda" and saved.get("cuda_rng") is not None:
        torch.cuda.set_rng_state(saved["cuda_rng"], run.device)
    run.tokens, run.step = saved["tokens"], saved["step"]
    run.position = Position(saved["epoch"], saved["slot"])
    run.curve, run.log_rows, run.eval_at = saved["curve"], saved["log_rows"], saved["eval_at"]
    run.flops_per_token = saved["flops_per_token"]
    run.running = [{k: torch.tensor(v, dtype=torch.float32, device=run.device) for k, v in r.items()}
                   for r in saved["running"]]
    run.elapsed = saved["elapsed"]
    log(json.dumps({"family": run.family, "resumed": {"step": run.step, "tokens": run.tokens}}))


def save_checkpoint(run: Run, checkpoint: Path) -> None:
    """Everything a resumed run needs, written atomically (a temporary file, then renamed)."""
    tmp = Path(str(checkpoint) + ".tmp")
    torch.save({
        "objective": run.objective.state_dict(), "optimizer": run.opt.state_dict(),
        "mask_gen": run.maker.mask_gen.get_state(), "sample_gen": run.sample_gen.get_state(),
        "numpy_rng": run.maker.rng.bit_generator.state, "torch_rng": torch.get_rng_state(),
        "cuda_rng": torch.cuda.get_rng_state(run.device) if run.device.type == "cuda" else None,
        "tokens": run.tokens, "step": run.step, "epoch": run.position.epoch, "slot": run.position.slot,
        "curve": run.curve, "log_rows": run.log_rows, "eval_at": run.eval_at,
        "flops_per_token": run.flops_per_token,
        "running": [{k: float(v) for k, v in r.items()} for r in run.running],
        "elapsed": {"wall_s": run.wall_s(), "cpu_s": run.cpu_s()},
    }, tmp)
    tmp.replace(checkpoint)


@contextlib.contextmanager
def worker_pool(run: Run):
    """The threads a split step runs its parts on, torch's threads shared out among them."""
    run.threads = torch.get_num_threads()
    if run.workers <= 1:
        yield
        return
    run.pool = ThreadPoolExecutor(max_workers=run.workers, thread_name_prefix="zoo-worker")
    torch.set_num_threads(max(1, run.threads // run.workers))
    try:
        yield
    finally:
        run.pool.shutdown()
        torch.set_num_threads(run.threads)


def train_loop(run: Run, tokenizer, heldout: list[str], until: Until, hooks: Hooks) -> None:
    """Steps until the budget, ``until``'s limit or its deadline; a finished trial, resumed, takes none."""
    if until.stop_tokens and run.tokens >= until.stop_tokens:
        return
    cfg = run.cfg
    for idx in batch_indices(run.position, cfg.seed, run.examples.train_idx, cfg.batch_size, run.rank, run.world):
        batch, n_real, n_local = next_batch(run, idx)
        lr = learning_rate(cfg, run.tokens)
        loss, parts = optimise(run, batch, lr, n_local)
        run.tokens += n_real
        run.step += 1
        log_progress(run, loss, parts, lr, hooks.log)
        evaluate_if_due(run, tokenizer, heldout, loss, hooks.log)
        if hooks.step_hook is not None:
            hooks.step_hook()
        if hooks.on_step is not None:
            hooks.on_step(run.step, run.tokens)
        if hooks.checkpoint is not None and hooks.checkpoint_every and run.step % hooks.checkpoint_every == 0:
            save_checkpoint(run, Path(hooks.checkpoint))
        if (run.tokens >= cfg.tokens or run.step == until.max_steps
                or (until.stop_tokens and run.tokens >= until.stop_tokens)):
            break
        if until.deadline and time.time() > until.deadline:
            run.stopped_at_deadline = True
            break


def next_batch(run: Run, idx) -> tuple[tuple, int, int]:
    """(the batch of chunks ``idx`` on the device, its non-padding tokens on every rank, on this one)."""
    with torch.profiler.record_function("zoo.data"):
        made = run.maker.make(idx, run.position.epoch)
    n_local = int(made[2].sum())  # counted on the CPU (no device sync)
    ids, tt, attention, inputs, labels, pair = (x.to(run.device, non_blocking=True) if x is not None else None
                                                for x in made)
    n_real = n_local
    if run.dist:
        n_tok = torch.tensor(float(n_local), device=run.device)
        run.dist.all_reduce(n_tok)
        n_real = int(n_tok)
    return (ids, attention, tt, inputs, labels, pair), n_real, n_local


def learning_rate(cfg: ZooConfig, tokens: int) -> float:
    """A linear warm-up over ``cfg.warmup`` of the budget, then a linear decay to 0 at its end."""
    progress = tokens / cfg.tokens
    return cfg.lr * (progress / cfg.warmup if progress < cfg.warmup else max(0.0, (1 - progress) / (1 - cfg.warmup)))


def optimise(run: Run, batch: tuple, lr: float, n_local: int) -> tuple[torch.Tensor, dict]:
    """One step at learning rate ``lr``; the first step's FLOPs are counted (per local token)."""
    for group in run.opt.param_groups:
        group["lr"] = lr
    run.objective.train()
    if run.teacher is not None:
        run.teacher.eval()
    count = run.flops_per_token is None
    if run.pool is not None:
        loss, parts, flops = split_step(run.objective, run.opt, run.trained, batch, run.sample_gen, run.pool,
                                        run.workers, count_flops=count, autocast=run.cfg.autocast)
    else:
        loss, parts, flops = train_step(run.wrapped, run.opt, run.trained, batch, run.sample_gen, run.cfg.autocast,
                                        count_flops=count)
    if flops is not None:
        run.flops_per_token = flops / float(n_local)
    return loss, parts


def log_progress(run: Run, loss: torch.Tensor, parts: dict, lr: float, log) -> None:
    """Every ``LOG_EVERY`` steps, the mean of each loss since the last line (rank 0 writes it)."""
    # kept on the device until the log line (reading a value every step would sync)
    run.running.append({k: v.detach() for k, v in parts.items()} | {"loss": loss.detach()})
    if run.step % LOG_EVERY or run.rank != 0:
        return
    mean = {k: float(torch.stack([r[k] for r in run.running]).float().mean()) for k in run.running[0]}
    wall = run.wall_s()
    row = {"step": run.step, "tokens": run.tokens, "lr": lr, **{k: round(v, 4) for k, v in mean.items()},
           "elapsed_s": round(wall, 1), "tokens_per_s": round(run.tokens / max(wall, 1e-9))}
    run.log_rows.append(row)
    log(json.dumps({"family": run.family, **row}))
    run.running = []


def evaluate_if_due(run: Run, tokenizer, heldout: list[str], loss: torch.Tensor, log) -> None:
    """A learning-curve point when the tokens pass the next of ``ZooConfig.evals`` marks (rank 0)."""
    if not (run.eval_at and run.tokens >= run.eval_at[0]):
        return
    while run.eval_at and run.tokens >= run.eval_at[0]:
        run.eval_at.pop(0)
    if run.rank != 0:
        return
    mlm_model = run.objective.generator if run.family == "mini-electra" else run.objective.model
    if run.pool is not None:  # the evaluation is one batch at a time: all of torch's threads
        torch.set_num_threads(run.threads)
    score = (next_piece_scores if run.maker.causal else whole_word_accuracy)(
        run.family, mlm_model, tokenizer, heldout[: run.cfg.eval_sentences], autocast=run.cfg.autocast)
    if run.pool is not None:
        torch.set_num_threads(max(1, run.threads // run.workers))
    point = {"tokens": run.tokens, "step": run.step, **score,
             "train_loss": run.log_rows[-1]["loss"] if run.log_rows else float(loss.detach())}
    run.curve.append(point)
    log(json.dumps({"family": run.family, "eval": point}))


def run_record(run: Run) -> dict:
    """The run's record: what it trained, how long it took, its curve and log."""
    return {
        "family": run.family, "tokens": run.tokens, "steps": run.step, "world_size": run.world,
        "allocator": current_allocator(), "wall_minutes": run.wall_s() / 60, "cpu_minutes_rank0": run.cpu_s() / 60,
        "flops_per_token": run.flops_per_token, "flops": run.flops_per_token * run.tokens,
        "masking": None if run.maker.causal else asdict(run.maker.policy), "static_masking": run.maker.static,
        "pair_objective": run.maker.pair_kind,
        **({"objective": "next-token prediction (causal LM)"} if run.maker.causal else {}),
        "curve": run.curve, "log": run.log_rows, "config": asdict(run.cfg), "stopped_at_deadline": run.stopped_at_deadline,
    }


def state_digest(module: nn.Module) -> str:
    """sha256 over every tensor of a module's state dict (the DDP replica check)."""
    h = hashlib.sha256()
    for name, value in sorted(module.state_dict().items()):
        h.update(name.encode())
        h.update(value.detach().float().cpu().numpy().tobytes())
    return h.hexdigest()
