"""Task heads: pre-train once, fine-tune everywhere.

A head is one linear layer, C x d weights + C biases, on top of an encoder:

* on the pooled sentence vector ([CLS] or mean) for a ``sequence`` task;
* on each word's first token for a ``token`` task (one label per word).

``freeze=True`` trains the head alone on features the encoder computes once (cached per
model, task and pooling, every layer at once): a linear *probe*, seconds on a CPU.
``freeze=False`` fine-tunes a **copy** of the encoder with the head (the shared cached model
is never modified), small models only.

The result keeps a ``head_id``; ``classify(head_id, text)`` labels new text and
``classifier_forward(head_id)`` returns the trained classifier as a differentiable
``torch.nn.Module`` (input ids or input embeddings in, logits out), e.g. for attribution.
Trained heads live in this process only (the last few are kept).
"""

from __future__ import annotations

import itertools
import math
import secrets
import time
from dataclasses import dataclass, replace

import numpy as np
import torch
import torch.nn.functional as F

from ..embeddings.pooling import layer_index
from ..errors import CapabilityError, InputError
from ..registry import catalogue
from ..registry.spec import ModelSpec
from ..runtime.loading import BUILD_LOCK, RESULT_CACHES, check_token_count, load_model
from ..runtime.memory import KeptRuns, own_bytes
from ..runtime.run_store import register_kind
from ..validation import check_bool, check_int, check_text
from .classifier_model import ClassifierModel
from .features import task_features, word_positions
from .live_training import adopt_head_model, check_rate, exclusive_run, export_head_run, train_how
from .finetuning import FINETUNE_BATCH, finetune
from .task_data import load_task, word_spans
from .task_scores import TaskScores, task_scores

HEAD_POOLINGS = ("cls", "mean")
MAX_PROBE_EPOCHS = 300
MAX_FINETUNE_EPOCHS = 5
PROBE_BATCH = 64  # sentences per step; token tasks (thousands of words) take 4x


# --- results -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ClassifierResult:
    """A head trained on a task: its size against the body's, its curves, its accuracy."""

    head_id: str  # for classify() and classifier_forward(), in this process
    model_key: str
    task: str
    kind: str  # "sequence" or "token"
    labels: tuple[str, ...]
    pooling: str  # "cls" or "mean" (sequence tasks); token tasks read each word's first token
    layer: int  # the encoder layer read, 0..L
    freeze: bool  # True: a probe on frozen features; False: a fine-tuned copy of the encoder
    epochs: int
    seed: int
    head_parameters: int  # C x d + C
    body_parameters: int  # the encoder's parameters (embeddings included)
    train_examples: int  # sentences used for training
    validation_examples: int  # sentences of the fixed held-out split
    train_units: int  # labelled units: sentences, or words for a token task
    validation_units: int
    train_loss: tuple[float, ...]  # one per epoch (end of epoch, over the training examples)
    train_accuracy: tuple[float, ...]
    validation_loss: tuple[float, ...]
    validation_accuracy: tuple[float, ...]
    majority_label: str  # the most frequent label of the training examples
    majority_baseline: float  # its share of the validation units: what guessing it scores
    seconds: float  # wall-clock training time (features included), for information only
    note: str  # what was trained, on what, how
    scores: TaskScores | None = None  # entities, sentiment: held-out figures beside their baselines

    @property
    def final_validation_accuracy(self) -> float:
        return self.validation_accuracy[-1]


@dataclass(frozen=True)
class ProbeLayersResult:
    """A frozen probe's validation accuracy on each layer (0 = the input embeddings)."""

    model_key: str
    task: str
    pooling: str
    layers: tuple[int, ...]
    train_accuracy: tuple[float, ...]
    validation_accuracy: tuple[float, ...]
    majority_baseline: float
    epochs: int
    seed: int


@dataclass(frozen=True)
class Classification:
    """A trained head's prediction for one text: per sentence, or per word (token tasks)."""

    head_id: str
    text: str
    kind: str
    labels: tuple[str, ...]  # class names
    probabilities: np.ndarray  # (C,) for a sentence, (W, C) for W words; rows sum to 1
    predicted: tuple[str, ...]  # one label (sequence) or one per word
    spans: tuple[tuple[int, int], ...] = ()  # token tasks: each labelled word's characters


@dataclass
class _Trained:
    model: ClassifierModel
    model_key: str
    task: str
    finetuned: bool


# Kept by id within the server's memory budget; ``clear_cache`` drops them too (a probe holds
# the cached encoder, and its device).
_TRAINED = KeptRuns("trained heads", "trained head", train_how("one first", "Train the head", "train_classifier"))
RESULT_CACHES.append(_TRAINED)
_IDS = itertools.count(1)


def _keep(trained: _Trained) -> str:
    # a random tail, as a sentence encoder's key: the number alone starts again at a restart, and
    # an id a page still holds would name a head someone else trained since
    head_id = f"{trained.model_key}/{trained.task}/{next(_IDS)}-{secrets.token_hex(2)}"
    return _TRAINED.keep(head_id, trained, own_bytes(trained.model))


def _trained(head_id) -> _Trained:
    return _TRAINED.get(head_id)


def head_model_key(head_id: str) -> str:
    """The registry key of the encoder a trained head sits on."""
    return _trained(head_id).model_key


def classifier_forward(head_id: str) -> ClassifierModel:
    """The trained classifier as a ``torch.nn.Module`` in eval mode, differentiable.

    ``model(input_ids=..., attention_mask=...)`` or ``model(inputs_embeds=...)`` returns logits
    (B, C) for a sequence task, (B, T, C) for a token task; ``model.tokenizer`` and
    ``model.labels`` go with it. A probe's body is the shared cached encoder: do not train it.
    """
    return _trained(head_id).model


# --- checks ------------------------------------------------------------------------------


def _check_pooling(pooling) -> str:
    if pooling not in HEAD_POOLINGS:
        raise InputError(f"Unknown pooling {pooling!r} for a head; choose one of: {', '.join(HEAD_POOLINGS)}.")
    return pooling


def _lowercases(tokenizer) -> bool:
    probe = "Paris London Tuesday"
    return tokenizer(probe)["input_ids"] == tokenizer(probe.lower())["input_ids"]


def _check_task_fits(loaded, task) -> None:
    if task.info.name == "truecase" and not _lowercases(loaded.tokenizer):
        raise CapabilityError(
            f"{loaded.spec.key}'s tokenizer keeps capital letters, so truecasing would read them off the "
            "input: the task only means something for an uncased model (one whose tokenizer lowercases)."
        )


# --- training ----------------------------------------------------------------------------


def _subset(train_size, n_sentences: int, seed: int) -> np.ndarray | None:
    """Which training sentences to use: all (None), or a seeded sample of train_size."""
    if train_size is None:
        return None
    size = check_int(train_size, "train_size", 2, n_sentences)
    return np.sort(np.random.default_rng(seed).permutation(n_sentences)[:size])


def _metrics(logits: torch.Tensor, y: torch.Tensor) -> tuple[float, float]:
    return float(F.cross_entropy(logits, y)), int((logits.argmax(-1) == y).sum()) / len(y)


def _seeded_linear(n_in: int, n_out: int, seed: int) -> torch.nn.Linear:
    """nn.Linear's own initialisation (``reset_parameters``) in float32, drawn from a generator of
    its own seeded with ``seed``: the numbers ``torch.manual_seed(seed)`` then ``nn.Linear`` give,
    without touching torch's global generator (a live run beside it draws its dropout from it) or
    its default dtype (another request's model load sets it process-wide meanwhile)."""
    head = torch.nn.Linear(n_in, n_out, device="meta", dtype=torch.float32).to_empty(device="cpu")
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        torch.nn.init.kaiming_uniform_(head.weight, a=math.sqrt(5), generator=generator)
        bound = 1 / math.sqrt(n_in)
        torch.nn.init.uniform_(head.bias, -bound, bound, generator=generator)
    return head


def _fit_probe(x_train, y_train, x_val, y_val, n_classes: int, epochs: int, seed: int, lr: float):
    """A linear head on fixed features (standardised while training, folded in at the end)."""
    x_train, x_val = torch.from_numpy(x_train), torch.from_numpy(x_val)
    y_train, y_val = torch.from_numpy(y_train), torch.from_numpy(y_val)
    mean, std = x_train.mean(0), x_train.std(0).clamp(min=1e-6)  # (d,)
    z_train, z_val = (x_train - mean) / std, (x_val - mean) / std
    generator = torch.Generator().manual_seed(seed)
    head = _seeded_linear(x_train.shape[1], n_classes, seed)
    optimiser = torch.optim.AdamW(head.parameters(), lr=lr, weight_decay=1e-2)
    batch = PROBE_BATCH * (4 if len(y_train) > 2000 else 1)
    curves = ([], [], [], [])
    for _ in range(epochs):
        order = torch.randperm(len(y_train), generator=generator)
        for start in range(0, len(order), batch):
            rows = order[start:start + batch]
            loss = F.cross_entropy(head(z_train[rows]), y_train[rows])
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
        with torch.no_grad():
            for curve, value in zip(curves, _metrics(head(z_train), y_train) + _metrics(head(z_val), y_val)):
                curve.append(value)
    with torch.no_grad():  # fold the standardisation in: W' = W / std, b' = b - W' . mean
        head.weight.div_(std)
        head.bias.sub_(head.weight @ mean)
    return head, curves


def _majority(train_labels: np.ndarray, val_labels: np.ndarray, n_classes: int) -> tuple[int, float]:
    label = int(np.bincount(train_labels, minlength=n_classes).argmax())
    return label, float((val_labels == label).mean())


def _units(task, split: str, subset=None) -> np.ndarray:
    labels = getattr(task, f"{split}_labels")
    if subset is not None:
        labels = [labels[i] for i in subset]
    if task.info.kind == "token":
        return np.array([y for ys in labels for y in ys], dtype=np.int64)
    return np.asarray(labels, dtype=np.int64)


def _export_run(result: ClassifierResult) -> dict:
    return export_head_run(_trained(result.head_id).model, result.freeze, ("kind",))


def _adopt_run(result: ClassifierResult, payload: dict, spec: ModelSpec) -> ClassifierResult:
    model = adopt_head_model(ClassifierModel, spec, payload, ("kind",))
    return replace(result, head_id=_keep(_Trained(model, result.model_key, result.task, finetuned=not result.freeze)))


register_kind(ClassifierResult, _export_run, _adopt_run)


def train_classifier(model_key: str, task: str, pooling: str = "cls", layer: int | None = None,
                     freeze: bool = True, epochs: int | None = None, seed: int = 0,
                     train_size: int | None = None, learning_rate: float | None = None) -> ClassifierResult:
    """Train a linear head for a task on an encoder; validation on the task's fixed held-out split.

    pooling: "cls" or "mean" (sequence tasks; a token task reads each word's first token).
    layer: the encoder layer the head reads (None = the last). freeze=True: a probe on frozen
    features (epochs default 30, lr 1e-2); freeze=False: fine-tune a copy of the encoder with
    the head (small models only; epochs default 2, lr 5e-5 for the encoder, 20x for the head).
    train_size: use only this many training sentences (a seeded sample), e.g. to watch a head
    overfit. Returns the head's and the body's parameter counts, per-epoch curves, the
    validation accuracy and the majority-class baseline.
    """
    spec = catalogue.get_spec(model_key)
    data = load_task(task)
    pooling = _check_pooling(pooling)
    freeze = check_bool(freeze, "freeze")
    seed = check_int(seed, "seed", 0, 2**31 - 1)
    high = MAX_PROBE_EPOCHS if freeze else MAX_FINETUNE_EPOCHS
    epochs = check_int((30 if freeze else 2) if epochs is None else epochs, "epochs", 1, high)
    lr = check_rate(learning_rate if learning_rate is not None else (1e-2 if freeze else 5e-5))
    subset = _subset(train_size, data.info.train_size, seed)
    loaded = load_model(spec, head="base")
    _check_task_fits(loaded, data)
    n_layers = int(loaded.model.config.num_hidden_layers)
    layer = n_layers if layer is None else layer_index(n_layers, layer, model_key)
    n_classes = len(data.info.labels)
    started = time.perf_counter()
    if freeze:
        feats = task_features(loaded, data, pooling)
        train_rows = np.arange(len(feats.labels["train"]))
        if subset is not None:
            train_rows = np.flatnonzero(np.isin(feats.sentence["train"], subset))
        y_train = feats.labels["train"][train_rows]
        head, curves = _fit_probe(feats.states["train"][layer][train_rows], y_train,
                                  feats.states["validation"][layer], feats.labels["validation"],
                                  n_classes, epochs, seed, lr)
        head = head.to(loaded.device, loaded.dtype)
        model = ClassifierModel(loaded.model, head, data.info.kind, pooling, layer, loaded.tokenizer,
                                data.info.labels)
        y_val = feats.labels["validation"]
        note = (f"A linear probe: the {model_key} encoder frozen (its cached weights, not changed), "
                f"the head trained on its layer-{layer} features with AdamW (lr {lr:g}) "
                f"for {epochs} epoch(s), seed {seed}, in this process.")
    else:
        # the process's one live-training slot, as every run that trains an encoder's copy: beside another
        # run both would draw dropout from torch's one global generator (a seed's curve not its own)
        with exclusive_run(f"fine-tuning {model_key} on {task}",
                           stopped_by=f"a fine-tuning run that ends after its {epochs} epoch(s)"):
            model, curves = finetune(loaded, data, pooling, layer, epochs, seed, subset, lr)
        head = model.head
        y_train, y_val = _units(data, "train", subset), _units(data, "validation")
        note = (f"Fine-tuned: a copy of the {model_key} encoder (the shared model is not changed) and the "
                f"head trained together with AdamW (lr {lr:g} encoder, {lr * 20:g} head, batch "
                f"{FINETUNE_BATCH}) for {epochs} epoch(s), seed {seed}, float32 on {loaded.device}.")
    seconds = time.perf_counter() - started
    scores = task_scores(model, loaded, data)
    majority, baseline = _majority(y_train, y_val, n_classes)
    train_sentences = data.info.train_size if subset is None else len(subset)
    head_id = _keep(_Trained(model, model_key, task, finetuned=not freeze))
    return ClassifierResult(
        head_id=head_id,
        model_key=model_key,
        task=task,
        kind=data.info.kind,
        labels=data.info.labels,
        pooling=pooling if data.info.kind == "sequence" else "first token of each word",
        layer=layer,
        freeze=freeze,
        epochs=epochs,
        seed=seed,
        head_parameters=sum(p.numel() for p in head.parameters()),
        body_parameters=sum(p.numel() for p in loaded.model.parameters()),
        train_examples=train_sentences,
        validation_examples=data.info.validation_size,
        train_units=len(y_train),
        validation_units=len(y_val),
        train_loss=tuple(curves[0]),
        train_accuracy=tuple(curves[1]),
        validation_loss=tuple(curves[2]),
        validation_accuracy=tuple(curves[3]),
        majority_label=data.info.labels[majority],
        majority_baseline=baseline,
        seconds=seconds,
        note=note,
        scores=scores,
    )


def probe_layers(model_key: str, task: str, pooling: str = "mean", epochs: int = 30,
                 seed: int = 0) -> ProbeLayersResult:
    """A frozen probe on every layer (0 = the input embeddings .. L): where does the task live?

    task: a name of ``list_tasks``; pooling: "cls" or "mean"; epochs: 1 to 300; seed: 0 to
    2**31 - 1. Anything else is an ``InputError``."""
    spec = catalogue.get_spec(model_key)
    data = load_task(task)
    pooling = _check_pooling(pooling)
    epochs = check_int(epochs, "epochs", 1, MAX_PROBE_EPOCHS)
    seed = check_int(seed, "seed", 0, 2**31 - 1)
    loaded = load_model(spec, head="base")
    _check_task_fits(loaded, data)
    feats = task_features(loaded, data, pooling)
    n_classes = len(data.info.labels)
    train_acc, val_acc = [], []
    layers = tuple(range(feats.states["train"].shape[0]))
    for layer in layers:
        _, curves = _fit_probe(feats.states["train"][layer], feats.labels["train"],
                               feats.states["validation"][layer], feats.labels["validation"],
                               n_classes, epochs, seed, 1e-2)
        train_acc.append(curves[1][-1])
        val_acc.append(curves[3][-1])
    _, baseline = _majority(feats.labels["train"], feats.labels["validation"], n_classes)
    return ProbeLayersResult(model_key, task, pooling if data.info.kind == "sequence" else "token",
                             layers, tuple(train_acc), tuple(val_acc), baseline, epochs, seed)


# --- using a trained head ------------------------------------------------------------------


def classify(head_id: str, text: str) -> Classification:
    """Label one text with a trained head: a class with probabilities, or one class per word."""
    trained = _trained(head_id)
    text = check_text(text)
    model = trained.model
    device = model.head.weight.device
    enc = model.tokenizer(text, return_offsets_mapping=model.kind == "token", truncation=False, verbose=False)
    loaded = load_model(catalogue.get_spec(trained.model_key), head="base")
    check_token_count(loaded, len(enc["input_ids"]))
    input_ids = torch.tensor([enc["input_ids"]], device=device)  # (1, T)
    with torch.inference_mode():
        logits = model(input_ids=input_ids, attention_mask=torch.ones_like(input_ids)).float()
    probabilities = torch.softmax(logits[0], dim=-1).cpu().numpy()  # (C,) or (T, C)
    if model.kind == "sequence":
        return Classification(head_id, text, model.kind, model.labels, probabilities,
                              (model.labels[int(probabilities.argmax())],))
    spans = word_spans(trained.task, text)
    positions = word_positions(enc["offset_mapping"], spans)
    kept = [(s, p) for s, p in zip(spans, positions) if p >= 0]
    words = probabilities[[p for _, p in kept]] if kept else np.zeros((0, len(model.labels)), np.float32)
    return Classification(head_id, text, model.kind, model.labels, words,
                          tuple(model.labels[int(i)] for i in words.argmax(-1)), tuple(s for s, _ in kept))

