"""Retrieve, then read: a bi-encoder finds passages, a span reader answers from them.

``retrieve_then_read(question)`` embeds the question with a sentence encoder (mean pooling,
L2-normalised), finds the k nearest passages of the search's passage index
(``data/passages.txt``, exact inner-product search: ``models/embeddings/retrieval.py``) and
reads each one as ``[CLS] question [SEP] passage [SEP]`` with a span head (a start and an end
logit per token, ``models/tasks/span_heads.py``). The k passages are read in one batch; the
start and end probabilities are normalised over the tokens of all k passages together (one
shared softmax), so one passage's answer score compares with another's, and the answer is
the best-scoring span.

The default reader ships with the project (``weights/span-reader/``): a start/end head of
770 parameters over the frozen embedded ``minilm-l6``, trained by ``scripts/train_reader.py``
(its MODEL_CARD.md says on what and how long). A span head trained in this process
(``train_span_head``'s ``head_id``) reads as well. Each part's cost is timed per query:
encoding the question, searching the index, reading the passages.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch
import torch.nn.functional as F

from ..embeddings.pooling import POOLING, pooled_vectors
from ..embeddings.retrieval import corpus, nearest_passages
from ..errors import InputError, UnknownModelError
from ..registry import catalogue
from ..registry.spec import ModelSpec
from ..runtime.loading import BUILD_LOCK, load_model, refuse_decoder
from ..validation import check_int, check_text
from .span_heads import SpanModel, best_span, encode_questions, span_batch, span_model, span_text

READER_DIR = catalogue.REPO_ROOT / "weights" / "span-reader"
SHIPPED_READER = "span-reader"  # the name the result gives the shipped reader
DEFAULT_ENCODER = "minilm-l6"
MAX_PASSAGES = 10


@dataclass(frozen=True)
class ReadPassage:
    rank: int  # 1 = nearest the question
    text: str  # a line of data/passages.txt
    source: str  # the corpus source it comes from
    corpus_index: int  # its line (0-based) in data/passages.txt
    similarity: float  # cosine between the question and the passage
    answer: str  # the reader's best span in this passage
    start: int  # characters in the passage
    end: int
    score: float  # P(start) x P(end), normalised over the tokens of all k passages


@dataclass(frozen=True)
class RetrieveReadResult:
    question: str
    encoder_key: str  # the bi-encoder that searched
    reader: str  # "span-reader" (shipped) or a span head's id
    reader_model_key: str  # the encoder the reader reads with
    k: int
    corpus_size: int  # passages in the index
    passages: tuple[ReadPassage, ...]  # in search order
    answer: str  # the best span over all passages
    answer_passage: int  # its passage's rank
    score: float
    encode_ms: float  # the question's embedding
    search_ms: float  # the index's search
    read_ms: float  # the reader's pass over the k passages (tokenising included)
    note: str


def reader_record() -> dict:
    """The shipped reader's training record (``weights/span-reader/record.json``)."""
    return json.loads((READER_DIR / "record.json").read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _shipped_head() -> tuple[np.ndarray, np.ndarray]:
    from safetensors.numpy import load_file

    tensors = load_file(str(READER_DIR / "head.safetensors"))
    return tensors["weight"].astype(np.float32), tensors["bias"].astype(np.float32)


def shipped_reader(spec: ModelSpec) -> SpanModel:
    """The shipped head over the shared, frozen ``spec`` encoder (never changed by reading)."""
    loaded = load_model(spec, head="base")
    weight, bias = _shipped_head()
    with BUILD_LOCK:  # a load elsewhere may set torch's default dtype meanwhile
        head = torch.nn.Linear(weight.shape[1], weight.shape[0])
    with torch.no_grad():
        head.weight.copy_(torch.from_numpy(weight))
        head.bias.copy_(torch.from_numpy(bias))
    return SpanModel(loaded.model, head.to(loaded.device)).eval()


def read_passages(model: SpanModel, loaded, question: str, passages: list[str]) -> list[tuple[str, int, int, float]]:
    """(answer, start, end, score) per passage; scores share one softmax over all passages' tokens."""
    enc = encode_questions(loaded, [question] * len(passages), passages)
    batch, context = span_batch(enc, list(range(len(passages))), loaded.tokenizer.pad_token_id or 0,
                                model.qa_outputs.weight.device)
    with torch.inference_mode():
        s, e = model(**batch)  # (k, T) each
    s, e = s.float().masked_fill(~context, float("-inf")), e.float().masked_fill(~context, float("-inf"))
    p_start = F.softmax(s.flatten(), 0).view_as(s)  # over every passage's context tokens together
    p_end = F.softmax(e.flatten(), 0).view_as(e)
    out = []
    for i, passage in enumerate(passages):
        a, b = best_span(s[i], e[i])
        text, first, last = span_text(enc, i, a, b, passage)
        out.append((text, first, last, float(p_start[i, a] * p_end[i, b])))
    return out


def _check_reader(reader) -> str | None:
    if reader is None or (isinstance(reader, str) and reader == SHIPPED_READER):
        return None
    if not isinstance(reader, str) or not reader.startswith("span"):
        raise InputError(f"reader must be None (the shipped {SHIPPED_READER}) or a span head's id from "
                         f"train_span_head, not {reader!r}.")
    return reader


def _live_reader(head_id: str):
    try:
        return span_model(head_id)
    except InputError as error:
        raise InputError(f"reader: {error}") from None


def retrieve_then_read(question: str, k: int = 3, encoder_key: str | None = None,
                       reader: str | None = None) -> RetrieveReadResult:
    """Search the passage index for the question, read the k nearest passages, answer with a span.

    question: plain text. k: 1 to 10 passages read. encoder_key: a sentence encoder for the
    search (default ``minilm-l6``; its first search embeds the index, cached after). reader:
    None (the shipped span reader) or a ``train_span_head`` head id. An empty question, k out
    of range, an unknown encoder_key or an unknown reader is an ``InputError`` naming the
    argument; a decoder as encoder_key a ``CapabilityError``."""
    question = check_text("" if question is None else question, "question",
                          "type a question, such as which city is the capital of Peru").strip()
    k = check_int(k, "k", 1, MAX_PASSAGES)
    head_id = _check_reader(reader)
    try:
        spec = catalogue.get_spec(DEFAULT_ENCODER if encoder_key is None else encoder_key)
    except UnknownModelError as error:  # said as the argument it came in
        raise InputError(f"encoder_key: {error}") from None
    refuse_decoder(spec, POOLING)
    if head_id is None:
        reader_spec = catalogue.get_spec(DEFAULT_ENCODER)
        model = shipped_reader(reader_spec)
    else:
        model, reader_key = _live_reader(head_id)
        reader_spec = catalogue.get_spec(reader_key)
    return _run(question, k, spec, reader_spec, model, head_id or SHIPPED_READER)


def _run(question, k, spec, reader_spec, model, reader_name) -> RetrieveReadResult:
    started = time.perf_counter()
    vector = pooled_vectors(spec, [question], ("mean",))["mean"]  # (1, d)
    unit = F.normalize(torch.from_numpy(vector), dim=1).numpy()
    encode_ms = (time.perf_counter() - started) * 1000
    hits, search_ms = nearest_passages(spec, unit, k, "mean")
    started = time.perf_counter()
    reads = read_passages(model, load_model(reader_spec, head="base"), question, [h.text for h in hits])
    read_ms = (time.perf_counter() - started) * 1000
    passages = tuple(ReadPassage(h.rank, h.text, h.source, h.corpus_index, h.score, *r) for h, r in zip(hits, reads))
    best, size = max(passages, key=lambda p: p.score), len(corpus()[0])
    note = (f"{spec.key} (mean pooling) searched {size:,} passages exactly; {reader_name} "
            f"(over {reader_spec.key}) read the {len(passages)} nearest, its span scores normalised over "
            "all of them together.")
    return RetrieveReadResult(question, spec.key, reader_name, reader_spec.key, k, size, passages,
                              best.answer, best.rank, best.score, encode_ms, search_ms, read_ms, note)
