"""From encoder to sentence encoder: Sentence-BERT's siamese training, live, on a copy.

Mean-pooled MLM vectors are not a metric space: nothing in pre-training asked two
sentences of the same meaning to land close. Sentence-BERT (Reimers & Gurevych 2019) fixes
that by running the *same* encoder on two or three sentences and pulling same-meaning ones
together:

* triplet:     max(0, ||a - p||^2 - ||a - n||^2 + margin)
* contrastive: y * d^2 + (1 - y) * max(0, margin - d)^2, halved, d = ||u - v|| (Hadsell et al. 2006)

on L2-normalised mean-pooled vectors (so ||u - v||^2 = 2 - 2 cos, margins in 0..4 / 0..2).

The pairs come from WordNet 3.0 (``data/tasks/synsets.tsv``, ``scripts/build_pairs.py``): two
usage examples quoted in one synset's gloss are a positive (the same sense); an example of
another synset is the negative, another sense *of the same word* when WordNet has one (a
hard negative), else a random one; with the triplet loss every other-synset sentence of the
batch is a negative of each anchor too (batch-all, the default ``mining``). Held-out: the synsets of the words in the validation
split (never trained on) and the Embeddings tab's own sentence sets (never trained on).

The trained copy is registered for this process under ``sbert:<model>-<n>-<tag>``: every
function taking a model key (``embed``, ``similarity``, ``search``, ...) reads it until the
process ends or the server's memory budget needs the room (``models/runtime/memory.py``: each
visitor's newest stays longest).
"""

from __future__ import annotations

import atexit
import itertools
import secrets
import shutil
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from ..errors import InputError
from ..registry import catalogue
from ..registry.spec import ModelSpec
from ..runtime.loading import load_model
from ..runtime.memory import KeptRuns
from ..runtime.run_store import register_kind
from ..tasks.finetuning import _padded
from ..tasks.live_training import (Budget, check_rate, check_seconds, exclusive_run, parameter_count, train_how,
                                   trainable_copy)
from ..tasks.task_data import TASKS_DIR
from ..validation import as_real, check_int
from .pooling import encode_unpadded, pool_hidden
from .sentence_sets import sentence_groups
from .separation import SeparationScore, separation_score

SENTENCE_LOSSES = ("triplet", "contrastive")
# triplet negatives: every other-synset sentence of the batch ("all", the default), the batch's
# closest one ("hardest"), or only the one drawn with each anchor ("drawn")
SENTENCE_MINING = ("all", "drawn", "hardest")
MAX_SENTENCE_STEPS = 1000
SENTENCE_BATCH = 16  # triplets (or pairs) per step
HARD_SHARE = 0.5  # share of the negatives drawn from another sense of the anchor's word (when it has one)
MATRIX_GROUPS = 8  # held-out synsets shown in the similarity matrix
SBERT_PREFIX = "sbert:"
_MINING_NOTE = {"all": "every other-synset sentence of the batch a negative", "drawn": "the drawn negatives",
                "hardest": "each anchor's hardest negative in the batch"}


@dataclass(frozen=True)
class SentenceEncoderResult:
    """A sentence encoder trained here: its loss curve and held-out separation before/after."""

    encoder_key: str  # "sbert:...": usable as a model key (embed, similarity, search) in this process
    model_key: str  # the encoder it was copied from (never changed)
    loss: str  # "triplet" or "contrastive"
    margin: float
    steps: int  # steps asked for
    steps_done: int  # steps run (fewer when stopped or out of time)
    seed: int
    learning_rate: float
    batch_size: int
    train_loss: tuple[float, ...]  # one per step
    train_groups: int  # WordNet synsets trained on
    train_sentences: int
    heldout_groups: int  # validation synsets (words never trained on)
    before: SeparationScore  # held-out synsets, the copy before training (= the shared model)
    after: SeparationScore
    tab_before: SeparationScore  # the Embeddings tab's sentence sets, never trained on
    tab_after: SeparationScore
    matrix_sentences: tuple[str, ...]  # a few held-out synsets, for the similarity matrix
    matrix_groups: tuple[str, ...]  # each sentence's synset
    matrix_before: np.ndarray  # (M, M) cosine
    matrix_after: np.ndarray
    parameters: int
    seconds: float  # the whole call: scoring before and after included
    training_seconds: float  # the training steps alone (what max_seconds bounds)
    stopped: str  # "" or why training ended before its steps
    note: str  # what was trained, on what, for how long

    @property
    def auc_gain(self) -> float:
        return self.after.auc - self.before.auc


# --- the losses --------------------------------------------------------------------------


def triplet_loss(anchor: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor,
                 margin: float) -> torch.Tensor:
    """mean over the batch of max(0, ||a - p||^2 - ||a - n||^2 + margin); vectors (B, d)."""
    d_pos = (anchor - positive).pow(2).sum(-1)  # (B,)
    d_neg = (anchor - negative).pow(2).sum(-1)  # (B,)
    return F.relu(d_pos - d_neg + margin).mean()


def contrastive_loss(u: torch.Tensor, v: torch.Tensor, same: torch.Tensor, margin: float) -> torch.Tensor:
    """mean of (y d^2 + (1 - y) max(0, margin - d)^2) / 2, d = ||u - v||; same: (B,) 1 or 0."""
    d = (u - v).pow(2).sum(-1).clamp(min=1e-12).sqrt()  # (B,)
    same = same.to(d.dtype)
    return (0.5 * (same * d.pow(2) + (1 - same) * F.relu(margin - d).pow(2))).mean()


def batch_all_triplet_loss(anchor: torch.Tensor, positive: torch.Tensor, batch: torch.Tensor,
                           groups: list[str], margin: float) -> torch.Tensor:
    """The triplet loss over every triplet the batch forms (batch-all, Hermans et al. 2017): mean of
    max(0, ||a_i - p_i||^2 - ||a_i - x_j||^2 + margin) over each anchor i and each sentence x_j of
    the batch from another synset. anchor, positive: (B, d); batch: (N, d), the anchors first;
    groups: the N sentences' synsets."""
    b = anchor.shape[0]
    other = torch.tensor([[groups[i] != groups[j] for j in range(len(groups))] for i in range(b)],
                         device=anchor.device)  # (B, N)
    d_pos = (anchor - positive).pow(2).sum(-1, keepdim=True)  # (B, 1)
    d_neg = (anchor[:, None, :] - batch[None, :, :]).pow(2).sum(-1)  # (B, N)
    return (F.relu(d_pos - d_neg + margin) * other).sum() / other.sum()


def _hardest_negatives(anchors: torch.Tensor, batch: torch.Tensor, groups: list[str]) -> torch.Tensor:
    """For each anchor (B, d), the batch's closest vector of another synset (batch-hard mining,
    Hermans et al. 2017): batch (3B, d) holds the anchors, positives and drawn negatives."""
    b = anchors.shape[0]
    other = torch.tensor([[groups[i] != groups[j] for j in range(len(groups))] for i in range(b)])  # (B, 3B)
    cos = (anchors @ batch.T).detach().masked_fill(~other.to(anchors.device), -2.0)  # (B, 3B)
    return batch[cos.argmax(dim=1)]  # (B, d): with gradients


# --- the data ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Groups:
    sentences: tuple[str, ...]
    group: tuple[str, ...]  # synset of each sentence: "<word>.<n|v>.<offset>"


@lru_cache(maxsize=None)
def synset_groups(split: str) -> _Groups:
    """WordNet usage examples grouped by synset (``data/tasks/synsets.tsv``), one split."""
    sentences, groups = [], []
    with open(TASKS_DIR / "synsets.tsv", encoding="utf-8") as f:
        for line in f:
            row_split, group, sentence = line.rstrip("\n").split("\t", 2)
            if row_split == split:
                sentences.append(sentence)
                groups.append(group)
    return _Groups(tuple(sentences), tuple(groups))


def _word(group: str) -> str:
    return group.rsplit(".", 2)[0]


def _draws(data: _Groups, loss: str, steps: int, batch: int, seed: int, hard_share: float = HARD_SHARE):
    """Per step, (anchor, positive, negative) sentence indexes or (u, v, same) pairs."""
    members = defaultdict(list)
    for i, g in enumerate(data.group):
        members[g].append(i)
    names = sorted(members)
    senses = defaultdict(list)  # word -> its synsets: the hard negatives
    for g in names:
        senses[_word(g)].append(g)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        rows = []
        for _ in range(batch):
            g = names[rng.integers(len(names))]
            a, p = rng.choice(members[g], 2, replace=False)
            others = [s for s in senses[_word(g)] if s != g] if rng.random() < hard_share else []
            other = others[rng.integers(len(others))] if others else g
            while other == g:
                other = names[rng.integers(len(names))]
            n = members[other][rng.integers(len(members[other]))]
            rows.append((int(a), int(p), int(n)))
        if loss == "contrastive":  # half the pairs positive (a, p), half negative (a, n)
            rows = [(a, p, 1) if k % 2 == 0 else (a, n, 0) for k, (a, p, n) in enumerate(rows)]
        yield rows


def _check_loss(loss) -> str:
    if loss not in SENTENCE_LOSSES:
        raise InputError(f"Unknown loss {loss!r}; choose one of: {', '.join(SENTENCE_LOSSES)}.")
    return loss


def _check_margin(loss: str, margin) -> float:
    high = 4.0 if loss == "triplet" else 2.0  # squared vs plain distance between unit vectors
    value = as_real(margin)
    if not 0 < value <= high:
        raise InputError(f"The {loss} margin must be above 0 and at most {high:g} (unit vectors); got {margin!r}.")
    return value


# --- encoding with the copy --------------------------------------------------------------


def _vectors(body, ids: list[list[int]], pad_id: int, device) -> torch.Tensor:
    """(N, d) unit mean-pooled vectors (gradients flow when enabled)."""
    input_ids, mask = _padded(ids, pad_id, device)
    hidden = body(input_ids=input_ids, attention_mask=mask).last_hidden_state  # (N, T, d)
    return F.normalize(pool_hidden(hidden, mask, "mean"), dim=-1)


def _cosines(body, ids: list[list[int]], pad_id: int, device, chunk: int = 64) -> np.ndarray:
    was_training = body.training
    body.eval()
    with torch.inference_mode():
        parts = [_vectors(body, ids[i:i + chunk], pad_id, device) for i in range(0, len(ids), chunk)]
    body.train(was_training)
    v = torch.cat(parts)  # (N, d)
    return (v @ v.T).cpu().numpy()


def _tab_sets() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Every sentence of the Embeddings tab's sets, with a group label unique across sets."""
    sentences, groups = [], []
    for name, spec in sentence_groups().items():
        for number, group in enumerate(spec["groups"]):
            for s in group["sentences"]:
                sentences.append(s)
                groups.append(f"{name}/{number}")
    return tuple(sentences), tuple(groups)


def _matrix_subset(data: _Groups) -> list[int]:
    """The sentences of the first MATRIX_GROUPS held-out synsets (file order)."""
    chosen = list(dict.fromkeys(data.group))[:MATRIX_GROUPS]
    return [i for i, g in enumerate(data.group) if g in chosen]


# --- the trained copies, loadable by key in this process ----------------------------------

_NUMBERS = itertools.count(1)
_ROOT = Path(tempfile.mkdtemp(prefix="encoder-lab-sbert-"))
atexit.register(shutil.rmtree, _ROOT, True)


def _forget(key: str, folder: Path) -> None:
    catalogue.forget_transient(key)
    shutil.rmtree(folder, ignore_errors=True)


# Each kept as a folder (its size counted) within the server's memory budget.
_ENCODERS = KeptRuns("sentence encoders", "sentence encoder",
                     train_how("it again", "Train a sentence encoder", "train_sentence_encoder"), on_drop=_forget)


def _register(body, loaded, model_key: str, note: str) -> str:
    def write(folder: Path) -> None:
        body.save_pretrained(folder)
        loaded.tokenizer.save_pretrained(folder)

    return _register_folder(write, loaded.spec, note)


def _register_folder(write, base: ModelSpec, note: str) -> str:
    """A new ``sbert:`` key whose folder ``write(folder)`` fills, registered as a model."""
    model_key = base.key
    key = f"{SBERT_PREFIX}{model_key}-{next(_NUMBERS)}-{secrets.token_hex(2)}"
    folder = _ROOT / key.replace(":", "_")
    write(folder)
    spec = replace(
        base, key=key, display_name=f"{key} (sentence encoder trained here from {model_key})",
        source=str(folder), source_kind="local", has_mlm_head=False, has_nsp_head=False,
        has_sop_head=False, has_rtd_head=False, sentence_embeddings=True, miniature=False,
        embedded=False, mlm_subfolder="", provenance=note,
    )
    catalogue.register_transient(spec)
    return _ENCODERS.keep(key, folder, sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()))


def _export_run(result: SentenceEncoderResult) -> dict[str, bytes]:
    """A kept run's trained copy: its folder's files (``models/runtime/run_store.py``)."""
    folder = _ENCODERS.get(result.encoder_key)
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def _adopt_run(result: SentenceEncoderResult, files: dict[str, bytes], spec: ModelSpec) -> SentenceEncoderResult:
    def write(folder: Path) -> None:
        folder.mkdir(parents=True)
        for name, data in files.items():
            (folder / Path(name).name).write_bytes(data)

    return replace(result, encoder_key=_register_folder(write, spec, result.note))


register_kind(SentenceEncoderResult, _export_run, _adopt_run)


def _why_gone(key: str) -> str:
    """Why an ``sbert:`` key does not load: dropped to stay within the memory budget, or not
    trained in this process."""
    return _ENCODERS.gone(key, _ENCODERS.was_dropped(key))


catalogue.explain_gone_transient(SBERT_PREFIX, _why_gone)


def sentence_encoders() -> tuple[str, ...]:
    """The keys of the sentence encoders trained in this process and still loadable."""
    return tuple(k for k, _ in _ENCODERS.items())


# --- training ----------------------------------------------------------------------------


def train_sentence_encoder(model_key: str, loss: str = "triplet", margin: float | None = None,
                           steps: int = 300, seed: int = 0, learning_rate: float | None = None,
                           max_seconds: float = 60, batch_size: int = SENTENCE_BATCH,
                           mining: str = "all") -> SentenceEncoderResult:
    """Fine-tune a copy of a small encoder into a sentence encoder (Sentence-BERT), live.

    loss: "triplet" (margin default 0.5, on squared distances of unit vectors) or
    "contrastive" (margin default 1.0). steps: batches of ``batch_size`` triplets / pairs (at
    most 1000), stopping early after ``max_seconds`` of training or on ``stop_live_training()``.
    learning_rate: default 1e-4 below 10 M parameters, 3e-5 above. mining (triplet): "all" (every
    other-synset sentence of the batch is a negative of each anchor: 3B - 2 or so per anchor for
    the cost of one), "drawn" (the negative drawn with it) or "hardest" (the batch's closest
    other-synset sentence). The defaults (batch-all, lr 1e-4 for the mini zoo) were chosen on a
    fifth of the training words held apart, never on the held-out synsets: on mini-bert, 300 steps,
    that split's ROC AUC rose +0.061 / +0.060 (seeds 0 / 1) against +0.025 / +0.029 with the
    drawn negatives at lr 3e-4. Returns the loss curve,
    the held-out similarity matrix and separation ROC AUC before and after, and the copy's
    key for ``embed`` / ``similarity`` / ``search``. The shared model never changes.
    """
    spec = catalogue.get_spec(model_key)
    loss = _check_loss(loss)
    margin = _check_margin(loss, (0.5 if loss == "triplet" else 1.0) if margin is None else margin)
    steps = check_int(steps, "steps", 1, MAX_SENTENCE_STEPS)
    seed = check_int(seed, "seed", 0, 2**31 - 1)
    batch_size = check_int(batch_size, "batch_size", 2, 64)
    seconds = check_seconds(max_seconds)
    if mining not in SENTENCE_MINING:
        raise InputError(f"Unknown mining {mining!r}; choose one of: {', '.join(SENTENCE_MINING)}.")
    if model_key.startswith(SBERT_PREFIX):
        raise InputError(f"{model_key} is already a sentence encoder trained here: train from its base model.")
    loaded = load_model(spec, head="base")
    with exclusive_run(f"training a sentence encoder on {model_key}"):
        return _train(loaded, model_key, loss, margin, steps, seed, learning_rate, seconds, batch_size, mining)


def _train(loaded, model_key, loss, margin, steps, seed, learning_rate, seconds, batch_size, mining):
    train, held = synset_groups("train"), synset_groups("validation")
    tab_sentences, tab_groups = _tab_sets()
    tokenizer, device = loaded.tokenizer, loaded.device
    pad_id = tokenizer.pad_token_id or 0
    train_ids = encode_unpadded(loaded, train.sentences)["input_ids"]
    held_ids = encode_unpadded(loaded, held.sentences)["input_ids"]
    tab_ids = encode_unpadded(loaded, tab_sentences)["input_ids"]
    subset = _matrix_subset(held)
    started = time.perf_counter()
    with torch.random.fork_rng(devices=[] if device.type == "cpu" else [device]):
        body = trainable_copy(loaded, seed).to(device)
        n_params = parameter_count(body)
        lr = check_rate(learning_rate if learning_rate is not None else (1e-4 if n_params < 10_000_000 else 3e-5))
        before, tab_before = _cosines(body, held_ids, pad_id, device), _cosines(body, tab_ids, pad_id, device)
        optimiser = torch.optim.AdamW(body.parameters(), lr=lr, weight_decay=0.01)
        budget = Budget(seconds)  # the training steps' time limit (the scoring before and after aside)
        curve = []
        for rows in _draws(train, loss, steps, batch_size, seed):
            if budget.over():
                break
            first, second, third = zip(*rows)
            if loss == "triplet":
                v = _vectors(body, [train_ids[i] for i in first + second + third], pad_id, device)
                a, p, n = v.split(len(rows))  # (B, d) each
                groups = [train.group[i] for i in first + second + third]
                if mining == "all":
                    value = batch_all_triplet_loss(a, p, v, groups, margin)
                else:
                    n = _hardest_negatives(a, v, groups) if mining == "hardest" else n
                    value = triplet_loss(a, p, n, margin)
            else:
                v = _vectors(body, [train_ids[i] for i in first + second], pad_id, device)
                u, w = v.split(len(rows))
                value = contrastive_loss(u, w, torch.tensor(third, device=device), margin)
            optimiser.zero_grad()
            value.backward()
            optimiser.step()
            curve.append(float(value.detach()))
        body.eval()
        after, tab_after = _cosines(body, held_ids, pad_id, device), _cosines(body, tab_ids, pad_id, device)
    training, elapsed = budget.elapsed(), time.perf_counter() - started
    note = (f"A copy of {model_key} (the shared model is not changed) trained here as a sentence encoder "
            f"with the {loss} loss (margin {margin:g}) on unit mean-pooled vectors, AdamW lr {lr:g}, "
            f"{len(curve)} step(s) of {batch_size} {'triplets' if loss == 'triplet' else 'pairs'}"
            f"{f' ({_MINING_NOTE[mining]})' if loss == 'triplet' else ''}, seed {seed}, "
            f"float32 on {device}, {training:.0f} s of training ({elapsed:.0f} s with the scoring). Pairs: WordNet 3.0 usage examples of the same synset "
            "(positive) vs an example of another sense of the same word, else of a random synset "
            f"(negative), from {len(set(train.group))} synsets; scored on {len(set(held.group))} synsets "
            "of words never trained on and on the Embeddings tab's sentence sets.")
    key = _register(body, loaded, model_key, note)
    group_of = np.asarray(held.group)
    return SentenceEncoderResult(
        encoder_key=key, model_key=model_key, loss=loss, margin=margin, steps=steps, steps_done=len(curve),
        seed=seed, learning_rate=lr, batch_size=batch_size, train_loss=tuple(curve),
        train_groups=len(set(train.group)), train_sentences=len(train.sentences),
        heldout_groups=len(set(held.group)),
        before=separation_score(before, held.group), after=separation_score(after, held.group),
        tab_before=separation_score(tab_before, tab_groups), tab_after=separation_score(tab_after, tab_groups),
        matrix_sentences=tuple(held.sentences[i] for i in subset), matrix_groups=tuple(group_of[subset]),
        matrix_before=before[np.ix_(subset, subset)], matrix_after=after[np.ix_(subset, subset)],
        parameters=n_params, seconds=elapsed, training_seconds=training, stopped=budget.why, note=note,
    )
