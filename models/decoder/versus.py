"""The detective and the storyteller measured side by side: an encoder and its decoder twin on
the same tasks, each row with both models' figure and the baseline to beat.

Rows (``encoder_vs_decoder``), on text neither model trained on:

- **next piece**: the mean loss per piece of held-out sentences, each piece predicted from the
  pieces before it. The decoder's own task; the encoder reads the same left context in its own
  format, ``[CLS] left [MASK] [SEP]`` (nothing to the right of the blank). Baseline: the
  word-frequency predictor (each piece from its count in the training corpus).
- **blank filling**: whole-word top-1 on the zoo's held-out words (15 % of the words of each
  sentence, chosen the same way whatever the tokenizer), as the zoo's cards score them: the
  encoder with every piece of those words masked at once and both sides in view; the decoder
  from the left only (the text before each word, unmasked), every piece its top-1 in turn
  (what greedy continuation writes). Baseline: the most frequent piece.
- **probes**: a linear probe on frozen last-layer features, each model's best pooling
  (``models.tasks``' features and probe); baseline: the majority class.
- **similarity**: ROC AUC of same-synset against other-synset cosines on the held-out WordNet
  synsets (the sentence-encoder lesson's validation split), each model's best pooling;
  baseline: the cosine of bag-of-words counts.
- **cost**: training tokens per second and FLOPs per token, as the two runs recorded them.

Expensive (minutes on a CPU): kept on disk like the lessons' runs (``models.runtime.run_store``:
the same code, data and weights of both models give the table back without recomputing it).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from ..embeddings.pooling import _pooled, cosine_matrix
from ..embeddings.sentence_encoder import synset_groups
from ..embeddings.separation import separation_score
from ..errors import InputError
from ..registry import catalogue
from ..registry.zoo_entries import zoo_folder
from ..registry.spec import ModelSpec
from ..runtime.loading import load_model, require_head
from ..runtime.run_store import _weights_digest, kept_result, kept_run, register_kind
from ..tasks.classifier import _fit_probe, _majority
from ..tasks.features import task_features
from ..tasks.task_data import load_task
from ..validation import check_bool, check_int
from ..zoo.data import heldout_splits
from ..zoo.scores import PIECE_COUNTS, _words_right, chosen_words, masked_word_batches, next_piece_batches

PROBE_TASKS = ("source", "supersense")
POOLINGS = ("cls", "mean")
CORPUS = catalogue.REPO_ROOT / ".cache" / "corpus" / "train_ordered.tsv"
COUNTS_DIR = catalogue.REPO_ROOT / ".cache" / "piece-counts"
SHIPPED_TABLE = "versus.json"  # the table measured when the decoder was shipped, in its folder


@dataclass(frozen=True)
class VersusRow:
    """One task: both models' figure, and the baseline either must beat."""

    task: str  # e.g. "next piece"
    measure: str  # what the figures are, with their unit
    better: str  # "lower" or "higher"
    encoder: float
    decoder: float
    baseline: float | None  # None where a row has none (costs)
    baseline_name: str
    how: str  # how each model read the task

    @property
    def winner(self) -> str:
        """"encoder", "decoder" or "tie" (equal to the reported digits)."""
        a, b = round(self.encoder, 4), round(self.decoder, 4)
        if a == b:
            return "tie"
        return "encoder" if (a < b) == (self.better == "lower") else "decoder"


@dataclass(frozen=True)
class EncoderVsDecoder:
    """``encoder_vs_decoder``'s table."""

    encoder_key: str
    decoder_key: str
    sentences: int  # held-out sentences of the next-piece and blank rows
    rows: tuple[VersusRow, ...]
    note: str = field(default="")

    def row(self, task: str) -> VersusRow:
        for r in self.rows:
            if r.task == task:
                return r
        raise InputError(f"No row {task!r}; the rows are: {', '.join(r.task for r in self.rows)}.")


def encoder_vs_decoder(encoder_key: str = "mini-modernbert", decoder_key: str = "mini-decoder",
                       sentences: int = 800, measure: bool = True) -> EncoderVsDecoder | None:
    """The measured table of an encoder and a decoder that share a vocabulary (a matched pair:
    the mini zoo's, or Ettin's). ``sentences``: held-out sentences of the next-piece and blank
    rows (the first of the zoo's score split; 50 to its size). Kept on disk once computed
    (minutes on two cores); ``measure=False``: the kept table, else the one shipped beside the
    decoder (``versus.json``, when of these weights and this many sentences), else None."""
    enc, dec = catalogue.get_spec(encoder_key), catalogue.get_spec(decoder_key)
    require_head(enc, "mlm")
    require_head(dec, "clm")
    sentences = check_int(sentences, "sentences", 50, len(heldout_splits()[1]))
    if load_model(enc, head="mlm").tokenizer.get_vocab() != load_model(dec, head="clm").tokenizer.get_vocab():
        raise InputError(f"{encoder_key} and {decoder_key} read different vocabularies: the table compares "
                         "a matched pair (the same tokenizer), such as mini-modernbert and mini-decoder.")
    if not check_bool(measure, "measure"):
        return (kept_result(measure_table, enc, enc, dec, _weights_digest(dec), sentences)
                or shipped_table(enc, dec, sentences))
    return kept_run(measure_table, enc.key, enc, dec, _weights_digest(dec), sentences)


def _shipped_path(dec_spec: ModelSpec) -> Path | None:
    return Path(dec_spec.source) / SHIPPED_TABLE if dec_spec.source_kind == "local" else None


def shipped_table(enc_spec: ModelSpec, dec_spec: ModelSpec, sentences: int) -> EncoderVsDecoder | None:
    """The table measured when the decoder was shipped (``versus.json`` in its folder, written by
    ``python -m scripts.decoder_check --table --write``), when it is of these weights (both
    models' digests) and this many sentences; else None."""
    path = _shipped_path(dec_spec)
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path is not None else None
    except (OSError, ValueError):
        return None
    if not data or data.get("weights") != [_weights_digest(enc_spec), _weights_digest(dec_spec)]:
        return None
    table = data["table"]
    if (table["encoder_key"], table["decoder_key"], table["sentences"]) != (enc_spec.key, dec_spec.key, sentences):
        return None
    return EncoderVsDecoder(**{**table, "rows": tuple(VersusRow(**r) for r in table["rows"])})


def write_shipped_table(table: EncoderVsDecoder, enc_spec: ModelSpec, dec_spec: ModelSpec) -> Path:
    """Keep ``table`` (of these two models) in the decoder's folder with both models' weight
    digests: the table shipped with it."""
    path = _shipped_path(dec_spec)
    if path is None:
        raise InputError(f"{table.decoder_key} is not a local folder: its table is kept, not shipped.")
    data = {"weights": [_weights_digest(enc_spec), _weights_digest(dec_spec)], "table": asdict(table)}
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return path


def measure_table(_encoder_key: str, enc_spec: ModelSpec, dec_spec: ModelSpec, _decoder_weights: str,
                  sentences: int) -> EncoderVsDecoder:
    """Every row computed now (``encoder_vs_decoder`` keeps it, by the encoder's key; the weights
    digest is the decoder's, part of what the kept table is looked up by)."""
    enc, dec = load_model(enc_spec, head="mlm"), load_model(dec_spec, head="clm")
    texts = heldout_splits()[1][:sentences]
    counts = corpus_counts(enc.tokenizer, Path(dec_spec.source) if dec_spec.source_kind == "local" else None)
    rows = [next_piece_row(enc, dec, texts, counts), blank_row(enc, dec, texts, counts)]
    rows += [probe_row(enc_spec, dec_spec, task) for task in PROBE_TASKS]
    rows.append(similarity_row(enc_spec, dec_spec))
    rows += cost_rows(enc_spec.key, dec_spec.key)
    return EncoderVsDecoder(enc_spec.key, dec_spec.key, len(texts), tuple(rows),
                            note=f"Measured on {len(texts)} held-out sentences (data/heldout.txt's score split).")


register_kind(EncoderVsDecoder, lambda result: None, lambda result, payload: result)


# --- next piece ----------------------------------------------------------------------------


@torch.no_grad()
def decoder_next_piece(dec, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(loss, right) of every next piece of ``texts`` (the decoder's training format)."""
    losses, right = [], []
    for ids, attention, targets in next_piece_batches(dec.tokenizer, texts):
        logits = dec.model(input_ids=ids.to(dec.device), attention_mask=attention.to(dec.device)).logits
        sel = targets != -100
        picked = logits[:, :-1][sel.to(dec.device)].float().cpu()
        losses.append(torch.nn.functional.cross_entropy(picked, targets[sel], reduction="none"))
        right.append(picked.argmax(-1) == targets[sel])
    return torch.cat(losses).numpy(), torch.cat(right).numpy()


@torch.no_grad()
def encoder_left_only(enc, texts: list[str], batch: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """(loss, right) of the same pieces, the encoder reading ``[CLS] left [MASK] [SEP]``."""
    tok = enc.tokenizer
    rows, targets = [], []
    for ids, attention, target in next_piece_batches(tok, texts):
        for r in range(len(ids)):
            for t in torch.nonzero(target[r] != -100).flatten().tolist():  # predicts ids[r, t + 1]
                rows.append(ids[r, : t + 1].tolist() + [tok.mask_token_id, tok.sep_token_id])
                targets.append(int(target[r, t]))
    losses, right = [], []
    for start in range(0, len(rows), batch):
        part = rows[start : start + batch]
        width = max(len(r) for r in part)
        x = torch.full((len(part), width), tok.pad_token_id)
        mask = torch.zeros_like(x)
        for i, r in enumerate(part):
            x[i, : len(r)], mask[i, : len(r)] = torch.tensor(r), 1
        at = torch.tensor([len(r) - 2 for r in part])
        logits = enc.model(input_ids=x.to(enc.device), attention_mask=mask.to(enc.device)).logits
        picked = logits[torch.arange(len(part)), at.to(enc.device)].float().cpu()
        y = torch.tensor(targets[start : start + batch])
        losses.append(torch.nn.functional.cross_entropy(picked, y, reduction="none"))
        right.append(picked.argmax(-1) == y)
    return torch.cat(losses).numpy(), torch.cat(right).numpy()


def next_piece_row(enc, dec, texts: list[str], counts: np.ndarray | None) -> VersusRow:
    d_loss, _ = decoder_next_piece(dec, texts)
    e_loss, _ = encoder_left_only(enc, texts)
    base = None
    if counts is not None:
        logp = np.log((counts + 1.0) / (counts.sum() + len(counts)))
        pieces = torch.cat([t[t != -100] for _, _, t in next_piece_batches(dec.tokenizer, texts)]).numpy()
        base = float(-logp[pieces].mean())
    return VersusRow("next piece", "held-out loss per piece, nats", "lower", float(e_loss.mean()),
                     float(d_loss.mean()), base, "word frequency (each piece from its corpus count)",
                     f"{len(d_loss):,} pieces, each from the pieces before it; the encoder reads "
                     "[CLS] left [MASK] [SEP] (no right context), the decoder its own left-to-right pass")


# --- blank filling ---------------------------------------------------------------------------


@torch.no_grad()
def blank_words(enc, dec, texts: list[str]) -> tuple[int, int, int]:
    """(encoder's whole words right, decoder's, words): the zoo's held-out words."""
    words = chosen_words(texts)
    e_right = d_right = total = 0
    for ids, attention, sel, word_of in masked_word_batches(enc.tokenizer, texts, words):
        inputs = ids.masked_fill(sel, enc.tokenizer.mask_token_id)
        e_logits = enc.model(input_ids=inputs.to(enc.device), attention_mask=attention.to(enc.device)).logits
        e_ok = (e_logits[sel.to(enc.device)].argmax(-1).cpu() == ids[sel])
        d_logits = dec.model(input_ids=ids.to(dec.device), attention_mask=attention.to(dec.device)).logits
        d_ok = (d_logits[:, :-1][sel[:, 1:].to(dec.device)].argmax(-1).cpu() == ids[:, 1:][sel[:, 1:]])
        r, n = _words_right(e_ok, ids, sel, word_of)
        e_right, total = e_right + r, total + n
        d_right += _words_right(d_ok, ids, sel, word_of)[0]
    return e_right, d_right, total


def blank_row(enc, dec, texts: list[str], counts: np.ndarray | None) -> VersusRow:
    e_right, d_right, total = blank_words(enc, dec, texts)
    base = None
    if counts is not None:
        best = int(np.argmax(counts))
        base = sum(_words_right(ids[sel] == best, ids, sel, w)[0]
                   for ids, _, sel, w in masked_word_batches(enc.tokenizer, texts, chosen_words(texts))) / max(total, 1)
    return VersusRow("blank filling", "held-out whole-word top-1", "higher", e_right / max(total, 1),
                     d_right / max(total, 1), base, "the most frequent piece, everywhere",
                     f"{total:,} words mid-sentence (15 % of each sentence's words): the encoder sees both "
                     "sides, every piece of those words masked at once; the decoder only the words before each")


# --- frozen features ---------------------------------------------------------------------------


def probe_accuracy(spec: ModelSpec, task: str, pooling: str) -> tuple[float, float]:
    """(validation accuracy, majority baseline) of a linear probe on the last layer's features."""
    loaded = load_model(spec, head="base")
    data = load_task(task)
    feats = task_features(loaded, data, pooling)
    last = int(loaded.model.config.num_hidden_layers)
    y_train, y_val = feats.labels["train"], feats.labels["validation"]
    _, curves = _fit_probe(feats.states["train"][last], y_train, feats.states["validation"][last], y_val,
                           len(data.info.labels), 30, 0, 1e-2)
    return curves[3][-1], _majority(y_train, y_val, len(data.info.labels))[1]


def probe_row(enc_spec: ModelSpec, dec_spec: ModelSpec, task: str) -> VersusRow:
    encoder_key, decoder_key = enc_spec.key, dec_spec.key
    scores = {s.key: {p: probe_accuracy(s, task, p) for p in POOLINGS} for s in (enc_spec, dec_spec)}
    best = {key: max(s, key=lambda p: s[p][0]) for key, s in scores.items()}
    e, d = scores[encoder_key][best[encoder_key]], scores[decoder_key][best[decoder_key]]
    return VersusRow(f"probe: {task}", "validation accuracy of a linear probe on frozen features", "higher",
                     e[0], d[0], e[1], "the majority class",
                     f"last layer, each model's best pooling (encoder {best[encoder_key]}, decoder "
                     f"{best[decoder_key]}); AdamW lr 0.01, 30 epochs, seed 0")


def _similarity_auc(spec: ModelSpec, texts, groups) -> tuple[float, str]:
    loaded = load_model(spec, head="base")
    vectors = _pooled(loaded, texts, POOLINGS, int(loaded.model.config.num_hidden_layers), normalize=False)
    aucs = {p: separation_score(cosine_matrix(v), groups).auc for p, v in vectors.items()}
    best = max(aucs, key=aucs.get)
    return aucs[best], best


def bag_of_words_auc(texts, groups) -> float:
    vocab: dict[str, int] = {}
    bags = [Counter(re.findall(r"[a-z]+", t.lower())) for t in texts]
    for bag in bags:
        for w in bag:
            vocab.setdefault(w, len(vocab))
    m = np.zeros((len(texts), len(vocab)), dtype=np.float32)
    for i, bag in enumerate(bags):
        for w, c in bag.items():
            m[i, vocab[w]] = c
    return separation_score(cosine_matrix(m), groups).auc


def similarity_row(enc_spec: ModelSpec, dec_spec: ModelSpec) -> VersusRow:
    data = synset_groups("validation")
    texts, groups = list(data.sentences), list(data.group)
    (e, ep), (d, dp) = _similarity_auc(enc_spec, texts, groups), _similarity_auc(dec_spec, texts, groups)
    return VersusRow("similarity", "ROC AUC, same synset against another, by cosine", "higher", e, d,
                     bag_of_words_auc(texts, groups), "bag-of-words cosine",
                     f"{len(texts)} held-out WordNet usage examples in {len(set(groups))} synsets; last layer, "
                     f"each model's best pooling (encoder {ep}, decoder {dp})")


# --- costs and the word-frequency counts -----------------------------------------------------------


def _record(key: str) -> dict | None:
    try:
        return json.loads((zoo_folder(key) / "record.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def cost_rows(encoder_key: str, decoder_key: str) -> list[VersusRow]:
    """Training tokens/s and FLOPs per token, from the two runs' records (none for Hub models)."""
    e, d = _record(encoder_key), _record(decoder_key)
    if e is None or d is None:
        return []
    precision = {key: "bfloat16 autocast" if r.get("config", {}).get("autocast") == "bf16" else "float32"
                 for key, r in ((encoder_key, e), (decoder_key, d))}
    how = (f"as recorded by the trainer: {encoder_key} in {precision[encoder_key]}, "
           f"{e.get('concurrency', 'on this machine')}; {decoder_key} in {precision[decoder_key]}, "
           f"{d.get('concurrency', 'on this machine')}")
    if len(set(precision.values())) > 1:
        how += ("; the two runs differ in precision (and may differ in CPU), so their speeds are not a "
                "like-for-like comparison of the architectures: the FLOPs row is")
    return [VersusRow("training speed", "training tokens per second (wall clock)", "higher",
                      float(e["tokens_per_s"]), float(d["tokens_per_s"]), None, "", how),
            VersusRow("training FLOPs", "FLOPs per training token (forward and backward)", "lower",
                      float(e["flops_per_token"]), float(d["flops_per_token"]), None, "",
                      "torch's FlopCounterMode on one real training step of each run")]


def corpus_counts(tokenizer, folder: Path | None = None) -> np.ndarray | None:
    """How often each piece occurs in the zoo's training corpus (as the trainer counts them):
    the counts shipped in ``folder`` (a zoo decoder's, written by its training run) where they
    match the tokenizer, else counted from the corpus where it is built here, else None (the
    baselines of two rows are then left out). Corpus counts are kept in ``.cache/piece-counts``
    per vocabulary and corpus file (tokenizing the corpus is most of the table's time)."""
    shipped = folder / PIECE_COUNTS if folder is not None else None
    if shipped is not None and shipped.is_file():
        counts = np.load(shipped)
        if len(counts) == len(tokenizer):
            return counts.astype(np.float64)
    if not CORPUS.is_file():
        return None
    stat = CORPUS.stat()
    vocab = json.dumps(sorted(tokenizer.get_vocab().items())).encode()
    key = hashlib.sha1(vocab + f"{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:16]
    path = COUNTS_DIR / f"{key}.npy"
    if path.is_file():
        return np.load(path)
    from ..zoo.data import corpus_chunks
    from ..zoo.scores import piece_counts

    counts = piece_counts(corpus_chunks(CORPUS, tokenizer, 128), len(tokenizer)).astype(np.float64)
    try:
        COUNTS_DIR.mkdir(parents=True, exist_ok=True)
        np.save(path.with_suffix(f".{os.getpid()}.npy"), counts)
        os.replace(path.with_suffix(f".{os.getpid()}.npy"), path)
    except OSError:  # a read-only disk: counted again next time
        pass
    return counts
