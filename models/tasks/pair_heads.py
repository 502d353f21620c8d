"""Sentence-pair heads: [CLS] A [SEP] B [SEP], with segment ids, -> C classes.

The pair is read as BERT reads one: both sentences in one input, the second marked by
token type (segment) 1 where the model has segment embeddings, and a linear head on the
[CLS] state (C x d + C parameters), as transformers' ``*ForSequenceClassification``.
``freeze=True`` trains the head on the frozen encoder's [CLS] (a probe, computed once per
model and task); ``freeze=False`` fine-tunes a copy of a small encoder with the head.

The tasks are built from the project's data, labels from where the text comes from:

* ``definition-match``: a word and a definition; ``match`` when WordNet 3.0 gives it as one
  of the word's senses, ``other`` when it is another word's (``data/tasks/definition-match.tsv``,
  ``scripts/build_pairs.py``; split by word).
* ``same-source``: two corpus sentences; ``same`` when they come from the same corpus source
  (``data/tasks/source.tsv``), else ``different``; pairs drawn within each split, so no
  validation sentence is trained on.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np
import torch
import torch.nn.functional as F

from ..embeddings.pooling import layer_index, pool_hidden
from ..errors import InputError
from ..registry import catalogue
from ..registry.spec import ModelSpec
from ..runtime.loading import BUILD_LOCK, check_token_count, load_model, max_input_tokens
from ..runtime.run_store import register_kind
from ..validation import check_bool, check_int, check_text
from .classifier import _fit_probe, _majority, _subset
from .live_training import (Budget, HeadStore, adopt_head_model, check_rate, check_seconds, exclusive_run,
                            export_head_run, linear_head, parameter_count, trainable_copy)
from .task_data import TASKS_DIR, load_task

PAIR_POOLINGS = ("cls", "mean")
MAX_PAIR_EPOCHS = {True: 300, False: 3}  # probe, fine-tuning
PAIR_BATCH = 16


@dataclass(frozen=True)
class PairTaskInfo:
    name: str
    labels: tuple[str, ...]
    train_size: int
    validation_size: int
    description: str
    label_source: str


@dataclass(frozen=True)
class PairTask:
    info: PairTaskInfo
    train_pairs: tuple[tuple[str, str], ...]
    train_labels: tuple[int, ...]
    validation_pairs: tuple[tuple[str, str], ...]
    validation_labels: tuple[int, ...]


@dataclass(frozen=True)
class PairClassifierResult:
    """A pair head: its size against transformers' own head, its curves, its accuracy."""

    head_id: str
    model_key: str
    task: str
    labels: tuple[str, ...]
    pooling: str
    layer: int
    freeze: bool
    epochs: int  # epochs run
    seed: int
    head_parameters: int  # C x d + C
    body_parameters: int
    reference_head: str  # transformers' *ForSequenceClassification head, e.g. "BertForSequenceClassification.classifier"
    reference_parameters: int  # its parameter count for the same C
    segment_ids: bool  # does the model read token type (segment) ids?
    train_examples: int
    validation_examples: int
    train_loss: tuple[float, ...]  # per epoch
    train_accuracy: tuple[float, ...]
    validation_loss: tuple[float, ...]
    validation_accuracy: tuple[float, ...]
    majority_label: str
    majority_baseline: float  # its share of the validation pairs
    seconds: float
    stopped: str
    note: str

    @property
    def final_validation_accuracy(self) -> float:
        return self.validation_accuracy[-1]


@dataclass(frozen=True)
class PairClassification:
    head_id: str
    text_a: str
    text_b: str
    labels: tuple[str, ...]
    probabilities: np.ndarray  # (C,)
    predicted: str


# --- the tasks ---------------------------------------------------------------------------

_PAIR_TASKS = {
    "definition-match": (
        ("match", "other"),
        "Does the definition (B) give a sense of the word (A)?",
        "WordNet 3.0 (Debian's wordnet-base): 'match' pairs a noun with the gloss of one of its "
        "synsets, 'other' with another word's gloss (scripts/build_pairs.py); split by word.",
    ),
    "same-source": (
        ("different", "same"),
        "Do the two sentences come from the same corpus source (one of six)?",
        "The corpus source of each sentence (data/tasks/source.tsv, scripts/build_corpus.py); "
        "pairs drawn with a fixed seed within each split, half from one source.",
    ),
}


def _definition_rows():
    with open(TASKS_DIR / "definition-match.tsv", encoding="utf-8") as f:
        for line in f:
            split, label, a, b = line.rstrip("\n").split("\t", 3)
            yield split, label, (a, b)


def _source_rows():
    data = load_task("source")
    for split in ("train", "validation"):
        texts, labels = getattr(data, f"{split}_texts"), getattr(data, f"{split}_labels")
        by_source = defaultdict(list)
        for t, y in zip(texts, labels):
            by_source[y].append(t)
        rng = np.random.default_rng(0)
        for i, (t, y) in enumerate(zip(texts, labels)):
            if i % 2 == 0:
                pool = [s for s in by_source[y] if s != t]
                label = "same"
            else:
                pool = [s for z, group in by_source.items() if z != y for s in group]
                label = "different"
            yield split, label, (t, pool[rng.integers(len(pool))])


def load_pair_task(name: str) -> PairTask:
    """A pair task's pairs and labels, train and validation (cached)."""
    if not isinstance(name, str) or name not in _PAIR_TASKS:  # a list has no cache key
        raise InputError(f"Unknown pair task {name!r}; choose one of: {', '.join(_PAIR_TASKS)}.")
    return _load_pair_task(name)


@lru_cache(maxsize=None)
def _load_pair_task(name: str) -> PairTask:
    labels, description, source = _PAIR_TASKS[name]
    rows = _definition_rows() if name == "definition-match" else _source_rows()
    parts = {"train": ([], []), "validation": ([], [])}
    for split, label, pair in rows:
        parts[split][0].append(pair)
        parts[split][1].append(labels.index(label))
    info = PairTaskInfo(name, labels, len(parts["train"][0]), len(parts["validation"][0]), description, source)
    return PairTask(info, tuple(parts["train"][0]), tuple(parts["train"][1]),
                    tuple(parts["validation"][0]), tuple(parts["validation"][1]))


def list_pair_tasks() -> tuple[PairTaskInfo, ...]:
    """Every sentence-pair task: labels, sizes and where its labels come from."""
    return tuple(load_pair_task(name).info for name in _PAIR_TASKS)


# --- encoding pairs ----------------------------------------------------------------------


def _encode_pairs(loaded, pairs, truncate: bool = False) -> list[dict]:
    """Per pair: input_ids and token_type_ids ([CLS] A [SEP] B [SEP], segment 0 then 1).

    truncate=False (a pair typed by the user): a pair longer than the model reads is refused.
    truncate=True (the task's own training and validation pairs): cut to the model's limit,
    the longer text first (the tokenizer's ``longest_first``, as transformers' examples do).
    """
    limit = max_input_tokens(loaded) if truncate else None
    enc = loaded.tokenizer([a for a, _ in pairs], [b for _, b in pairs], truncation="longest_first" if truncate else False,
                           max_length=limit, return_attention_mask=False, return_token_type_ids=True, verbose=False)
    types = enc.get("token_type_ids") or [[0] * len(ids) for ids in enc["input_ids"]]
    if not truncate:
        for number, ids in enumerate(enc["input_ids"], start=1):
            check_token_count(loaded, len(ids), f"Pair {number}")
    return [{"input_ids": i, "token_type_ids": t} for i, t in zip(enc["input_ids"], types)]


def _cut_pairs(loaded, pairs) -> int:
    """How many of the task's pairs are longer than the model reads (and so are cut)."""
    enc = loaded.tokenizer([a for a, _ in pairs], [b for _, b in pairs], truncation=False,
                           return_attention_mask=False, verbose=False)
    limit = max_input_tokens(loaded)
    return sum(len(ids) > limit for ids in enc["input_ids"])


def _reads_segments(model) -> bool:
    return int(getattr(model.config, "type_vocab_size", 0) or 0) > 1


def _batch(rows: list[dict], pad_id: int, device, segments: bool) -> dict:
    width = max(len(r["input_ids"]) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)  # (B, T)
    types = torch.zeros((len(rows), width), dtype=torch.long)  # (B, T)
    mask = torch.zeros((len(rows), width), dtype=torch.long)  # (B, T)
    for i, r in enumerate(rows):
        n = len(r["input_ids"])
        ids[i, :n], types[i, :n], mask[i, :n] = torch.tensor(r["input_ids"]), torch.tensor(r["token_type_ids"]), 1
    out = {"input_ids": ids.to(device), "attention_mask": mask.to(device)}
    if segments:
        out["token_type_ids"] = types.to(device)
    return out


class PairClassifierModel(torch.nn.Module):
    """Encoder + [CLS] (or mean) + linear head: forward(**batch) -> logits (B, C)."""

    def __init__(self, body, head: torch.nn.Linear, pooling: str, layer: int, tokenizer, labels):
        super().__init__()
        self.body, self.head, self.pooling, self.layer = body, head, pooling, layer
        self.tokenizer, self.labels = tokenizer, labels
        self.n_layers = int(body.config.num_hidden_layers)
        self.segments = _reads_segments(body)

    def states(self, batch: dict) -> torch.Tensor:
        out = self.body(**batch, output_hidden_states=self.layer != self.n_layers)
        hidden = out.last_hidden_state if self.layer == self.n_layers else out.hidden_states[self.layer]
        return pool_hidden(hidden.float(), batch["attention_mask"], self.pooling)  # (B, d)

    def forward(self, **batch) -> torch.Tensor:
        return self.head(self.states(batch).to(self.head.weight.dtype))  # (B, C)


def reference_head(loaded, n_classes: int) -> tuple[str, int]:
    """(name, parameter count) of transformers' own sequence-classification head for C classes."""
    from transformers import AutoConfig, AutoModelForSequenceClassification

    config = AutoConfig.for_model(**loaded.model.config.to_dict())
    config.num_labels = n_classes
    with BUILD_LOCK, torch.device("meta"):
        model = AutoModelForSequenceClassification.from_config(config)
    name = type(model).__name__
    parts = [n for n in ("pre_classifier", "classifier") if getattr(model, n, None) is not None]
    count = sum(parameter_count(getattr(model, n)) for n in parts)
    return f"{name}.{' + '.join(parts)}", count


# --- the trained heads, kept in this process ------------------------------------------------

_HEADS = HeadStore("pair", "train_pair_classifier", "Train the pair head")


# --- training ----------------------------------------------------------------------------

_FEATURES: dict[tuple, tuple] = {}


def _frozen_features(loaded, task: PairTask, pooling: str, layer: int, rows: dict) -> dict:
    key = (loaded.spec.key, task.info.name, hash(task.train_pairs), pooling, layer, str(loaded.device))
    if key not in _FEATURES:
        probe = PairClassifierModel(loaded.model, torch.nn.Linear(1, 1), pooling, layer, None, ())
        pad_id = loaded.tokenizer.pad_token_id or 0
        out = {}
        with torch.inference_mode():
            for split, items in rows.items():
                parts = [probe.states(_batch(items[i:i + 64], pad_id, loaded.device, probe.segments)).cpu()
                         for i in range(0, len(items), 64)]
                out[split] = torch.cat(parts).numpy()
        _FEATURES.clear()  # one task's features at a time: small, and never stale
        _FEATURES[key] = out
    return _FEATURES[key]


def _export_run(result: PairClassifierResult) -> dict:
    return export_head_run(_HEADS.get(result.head_id)[0], result.freeze, ())


def _adopt_run(result: PairClassifierResult, payload: dict, spec: ModelSpec) -> PairClassifierResult:
    model = adopt_head_model(PairClassifierModel, spec, payload, ())
    return replace(result, head_id=_HEADS.keep(model, result.model_key, result.task))


register_kind(PairClassifierResult, _export_run, _adopt_run)


def train_pair_classifier(model_key: str, task: str = "definition-match", pooling: str = "cls",
                          layer: int | None = None, freeze: bool = True, epochs: int | None = None,
                          seed: int = 0, learning_rate: float | None = None,
                          max_seconds: float = 120, train_size: int | None = None) -> PairClassifierResult:
    """Train a linear head on the [CLS] state of a sentence pair (segment ids 0 / 1).

    freeze=True: a probe on the frozen encoder (epochs default 60, lr 1e-2); freeze=False:
    fine-tune a copy of a small encoder with the head (epochs default 1, at most 3, lr 5e-5
    for the encoder, 20x for the head), within ``max_seconds``. train_size: only this many training
    pairs (a seeded sample). Validation on the task's fixed
    held-out split, with the majority baseline and transformers' own head for comparison.
    """
    spec = catalogue.get_spec(model_key)
    data = load_pair_task(task)
    if pooling not in PAIR_POOLINGS:
        raise InputError(f"Unknown pooling {pooling!r} for a pair head; choose one of: {', '.join(PAIR_POOLINGS)}.")
    freeze = check_bool(freeze, "freeze")
    epochs = check_int((60 if freeze else 1) if epochs is None else epochs, "epochs", 1, MAX_PAIR_EPOCHS[freeze])
    seed = check_int(seed, "seed", 0, 2**31 - 1)
    lr = check_rate(learning_rate if learning_rate is not None else (1e-2 if freeze else 5e-5))
    seconds = check_seconds(max_seconds)
    loaded = load_model(spec, head="base")
    n_layers = int(loaded.model.config.num_hidden_layers)
    layer = n_layers if layer is None else layer_index(n_layers, layer, model_key)
    labels = data.info.labels
    subset = _subset(train_size, data.info.train_size, seed)
    if subset is not None:
        data = PairTask(data.info, tuple(data.train_pairs[i] for i in subset),
                        tuple(data.train_labels[i] for i in subset), data.validation_pairs, data.validation_labels)
    with exclusive_run(f"training a pair head on {model_key}"):
        budget = Budget(seconds)
        rows = {"train": _encode_pairs(loaded, data.train_pairs, truncate=True),
                "validation": _encode_pairs(loaded, data.validation_pairs, truncate=True)}
        y_train, y_val = np.asarray(data.train_labels), np.asarray(data.validation_labels)
        if freeze:
            feats = _frozen_features(loaded, data, pooling, layer, rows)
            head, curves = _fit_probe(feats["train"], y_train, feats["validation"], y_val, len(labels), epochs, seed, lr)
            model = PairClassifierModel(loaded.model, head.to(loaded.device, loaded.dtype), pooling, layer,
                                        loaded.tokenizer, labels)
            how = (f"A linear probe on the frozen {model_key} encoder's layer-{layer} {pooling} state (the shared "
                   f"model, not changed), AdamW lr {lr:g}, {epochs} epoch(s), seed {seed}")
        else:
            model, curves = _finetune_pairs(loaded, rows, y_train, y_val, labels, pooling, layer, epochs, seed, lr, budget)
            how = (f"Fine-tuned: a copy of {model_key} (the shared model is not changed) with the head, AdamW lr "
                   f"{lr:g} (head {lr * 20:g}), batch {PAIR_BATCH}, {len(curves[0])} epoch(s), seed {seed}, float32")
    majority, baseline = _majority(y_train, y_val, len(labels))
    reference, reference_count = reference_head(loaded, len(labels))
    segments = _reads_segments(loaded.model)
    head_id = _HEADS.keep(model, model_key, task)
    note = (f"{how}, {budget.elapsed():.0f} s, on {len(data.train_pairs):,} training pairs of '{task}' "
            f"({data.info.label_source}) Pairs read as [CLS] A [SEP] B [SEP]"
            f"{' with segment ids 0 / 1' if segments else ' (this model has no segment embeddings)'}.")
    cut = _cut_pairs(loaded, data.train_pairs + data.validation_pairs)
    if cut:
        note += (f" {cut:,} of the {len(rows['train']) + len(rows['validation']):,} pairs are longer than the "
                 f"{max_input_tokens(loaded)} tokens {model_key} reads; they were cut to that length, the "
                 "longer text first.")
    return PairClassifierResult(
        head_id=head_id, model_key=model_key, task=task, labels=labels, pooling=pooling, layer=layer,
        freeze=freeze, epochs=len(curves[0]), seed=seed, head_parameters=parameter_count(model.head),
        body_parameters=parameter_count(loaded.model), reference_head=reference,
        reference_parameters=reference_count, segment_ids=segments, train_examples=len(data.train_pairs),
        validation_examples=data.info.validation_size, train_loss=tuple(curves[0]),
        train_accuracy=tuple(curves[1]), validation_loss=tuple(curves[2]),
        validation_accuracy=tuple(curves[3]), majority_label=labels[majority], majority_baseline=baseline,
        seconds=budget.elapsed(), stopped=budget.why, note=note,
    )


def _pass(model, rows, y, order, pad_id, device, optimiser=None, budget=None):
    """One pass in batches; returns (mean loss, accuracy) over the pairs it saw."""
    total, correct, seen = 0.0, 0, 0
    for start in range(0, len(order), PAIR_BATCH):
        if budget is not None and budget.over():
            break
        idx = order[start:start + PAIR_BATCH]
        batch = _batch([rows[i] for i in idx], pad_id, device, model.segments)
        target = torch.as_tensor(y[idx], device=device)
        with torch.set_grad_enabled(optimiser is not None):
            logits = model(**batch)
            loss = F.cross_entropy(logits, target, reduction="sum")
        if optimiser is not None:
            optimiser.zero_grad()
            (loss / len(idx)).backward()
            optimiser.step()
        total += float(loss.detach())
        correct += int((logits.argmax(-1) == target).sum())
        seen += len(idx)
    return total / max(1, seen), correct / max(1, seen)


def _finetune_pairs(loaded, rows, y_train, y_val, labels, pooling, layer, epochs, seed, lr, budget):
    device = loaded.device
    pad_id = loaded.tokenizer.pad_token_id or 0
    with torch.random.fork_rng(devices=[] if device.type == "cpu" else [device]):
        body = trainable_copy(loaded, seed).to(device)
        head = linear_head(body, len(labels), device)
        model = PairClassifierModel(body, head, pooling, layer, loaded.tokenizer, labels)
        optimiser = torch.optim.AdamW([{"params": body.parameters(), "lr": lr},
                                       {"params": head.parameters(), "lr": lr * 20}], weight_decay=0.01)
        generator = np.random.default_rng(seed)
        curves = ([], [], [], [])
        for _ in range(epochs):
            model.train()
            _pass(model, rows["train"], y_train, generator.permutation(len(y_train)), pad_id, device, optimiser, budget)
            model.eval()
            with torch.inference_mode():
                train = _pass(model, rows["train"], y_train, np.arange(len(y_train)), pad_id, device)
                val = _pass(model, rows["validation"], y_val, np.arange(len(y_val)), pad_id, device)
            for curve, value in zip(curves, train + val):
                curve.append(value)
            if budget.why:
                break
    model.eval()
    return model, curves


def classify_pair(head_id: str, text_a: str, text_b: str) -> PairClassification:
    """A trained pair head's class probabilities for (A, B)."""
    model, model_key = _HEADS.get(head_id)
    text_a, text_b = check_text(text_a), check_text(text_b)
    loaded = load_model(catalogue.get_spec(model_key), head="base")
    rows = _encode_pairs(loaded, [(text_a, text_b)])
    batch = _batch(rows, loaded.tokenizer.pad_token_id or 0, model.head.weight.device, model.segments)
    with torch.inference_mode():
        p = torch.softmax(model(**batch).float()[0], -1).cpu().numpy()
    return PairClassification(head_id, text_a, text_b, model.labels, p, model.labels[int(p.argmax())])
