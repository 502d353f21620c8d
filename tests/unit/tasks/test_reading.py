"""retrieve_then_read: its search against numpy brute force over every passage of the index, its
reader against transformers' BertForQuestionAnswering carrying the shipped head, held-out
countries asked in a student's words, the passage index made of corpus lines, and bad input.

The student questions are written for this test by the project's developers, in words a student
would use, none in the templates' wording (``data/tasks/spans.tsv``, ``scripts/build_corpus.py``);
every country is held out of the reader's training."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from transformers import AutoTokenizer, BertForQuestionAnswering

from helpers import ENCODER_KEY, REPO, passage_slice
from models import CapabilityError, InputError, embed, get_spec, retrieve_then_read
from models.embeddings import retrieval
from models.registry import catalogue
from models.tasks import reading
from models.tasks.span_heads import load_spans, normalise_answer

STUDENT_QUESTIONS = (  # (question, country, capital)
    ("Which city does Kenya's government work from?", "Kenya", "Nairobi"),
    ("What is Iceland's capital called?", "Iceland", "Reykjavik"),
    ("In which city is the government of Ecuador based?", "Ecuador", "Quito"),
    ("If I flew to the capital of Tunisia, which city would I land in?", "Tunisia", "Tunis"),
    ("What's the main city where Honduras is governed from?", "Honduras", "Tegucigalpa"),
)
PASSAGES = REPO / "data" / "passages.txt"


@pytest.fixture(scope="module")
def small_index(tmp_path_factory):
    """A slice of the passage index: its first 300 lines, every line about a capital or a seat
    of government (every country's: the hardest distractors) and every line naming one of the
    asked countries; the search pointed at it."""
    names = [c for _, c, _ in STUDENT_QUESTIONS]
    texts, sources, patch = passage_slice(tmp_path_factory.mktemp("passages"), lambda i, s: (
        i < 300 or "capital" in s or "government" in s or any(n in s for n in names)))
    yield texts, sources, embed(ENCODER_KEY, texts, pooling="mean", truncate=True)
    patch.undo()


@pytest.fixture(scope="module")
def answers(small_index):
    return [retrieve_then_read(q) for q, _, _ in STUDENT_QUESTIONS]  # k=3, as the reader's card


def test_the_search_is_brute_force_cosine_over_every_passage(small_index, answers):
    texts, sources, vectors = small_index
    wide = retrieve_then_read(STUDENT_QUESTIONS[0][0], k=10)
    for (question, _, _), result in zip((*STUDENT_QUESTIONS, STUDENT_QUESTIONS[0]), (*answers, wide)):
        scores = vectors @ embed(ENCODER_KEY, [question], pooling="mean")[0]  # numpy, every passage
        best = np.argsort(-scores)[:result.k]
        assert [p.corpus_index for p in result.passages] == best.tolist(), question
        np.testing.assert_allclose([p.similarity for p in result.passages], scores[best], atol=1e-5)
        assert [p.text for p in result.passages] == [texts[i] for i in best]
        assert [p.source for p in result.passages] == [sources[i] for i in best]
        assert result.corpus_size == len(texts) and len(result.passages) == result.k


def test_held_out_countries_asked_in_a_students_words_are_answered(answers):
    spans = load_spans()
    trained = {ex.entity for ex in spans.train}
    assert not trained & {c for _, c, _ in STUDENT_QUESTIONS}  # held out of the reader's training
    right = [normalise_answer(r.answer) == normalise_answer(capital)
             for r, (_, _, capital) in zip(answers, STUDENT_QUESTIONS)]
    assert sum(right) >= 4, [(r.question, r.answer) for r in answers]
    for r in answers:  # the answer is a span of the passage it names
        passage = r.passages[r.answer_passage - 1]
        assert passage.text[passage.start:passage.end] == r.answer == passage.answer
        assert r.score == max(p.score for p in r.passages) and 0 < r.score <= 1
        assert r.encode_ms > 0 and r.search_ms > 0 and r.read_ms > 0


def test_the_shipped_readers_card_quotes_the_questions_answered_here(answers):
    record = json.loads((reading.READER_DIR / "record.json").read_text(encoding="utf-8"))
    card = (reading.READER_DIR / "MODEL_CARD.md").read_text(encoding="utf-8")
    assert [q["question"] for q in record["student_questions"]] == [q for q, _, _ in STUDENT_QUESTIONS]
    right = sum(normalise_answer(r.answer) == normalise_answer(c) for r, (_, _, c) in zip(answers, STUDENT_QUESTIONS))
    assert f"{right} of 5 answered with the capital" in card  # the slice holds every line these questions find in the whole index
    assert f"exact match {record['validation']['exact_match']:.1%}" in card


def test_the_passage_index_is_made_of_corpus_lines():
    lines = PASSAGES.read_text(encoding="utf-8").splitlines()
    sources = (REPO / "data" / "passages_sources.txt").read_text(encoding="utf-8").splitlines()
    heldout = (REPO / "data" / "heldout.txt").read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(sources)
    from components.finetune import reading_copy
    from components.lessons import copy as lessons_copy

    texts = (reading_copy.READING_HELP, next(s.text for s in lessons_copy.STEPS if s.slug == "retrieve-then-read"),
             retrieval.__doc__, (REPO / "docs" / "fine-tuning.md").read_text(encoding="utf-8"))
    assert all(f"{len(lines):,} " in text for text in texts)  # the size each text quotes
    assert lines[:len(heldout)] == heldout  # the held-out split first, its line numbers kept
    assert set(sources[len(heldout):]) == {"wordnet-def", "elements", "facts-templated", "facts-written"}
    corpus = REPO / ".cache" / "corpus"
    if not (corpus / "train.txt").exists():
        pytest.skip("the corpus is not built here (python -m scripts.build_corpus)")
    norm = lambda s: " ".join(s.lower().split())  # noqa: E731 (the corpus builder's dedup key)
    built = {norm(s) for part in ("train.txt", "heldout.txt") for s in (corpus / part).read_text(encoding="utf-8").splitlines()}
    assert all(norm(s) in built for s in lines)


def test_the_reader_is_transformers_question_answering_model_with_the_shipped_head():
    spec = get_spec(ENCODER_KEY)
    folder = catalogue.local_path(spec)
    reference = BertForQuestionAnswering.from_pretrained(folder).eval()
    head = reading._shipped_head()
    with torch.no_grad():
        reference.qa_outputs.weight.copy_(torch.from_numpy(head[0]))
        reference.qa_outputs.bias.copy_(torch.from_numpy(head[1]))
    tokenizer = AutoTokenizer.from_pretrained(folder)
    question = STUDENT_QUESTIONS[0][0]
    passages = ["The city of Nairobi is the capital of Kenya.", "Kenya is a country of Africa."]
    enc = tokenizer([question] * 2, passages, padding=True, return_tensors="pt")
    with torch.no_grad():
        out = reference(**enc)
    context = torch.tensor([[s == 1 for s in enc.sequence_ids(i)] for i in range(2)])
    start = out.start_logits.masked_fill(~context, float("-inf"))
    end = out.end_logits.masked_fill(~context, float("-inf"))
    p_start, p_end = (torch.softmax(x.flatten(), 0).view_as(x) for x in (start, end))  # one softmax, both passages
    from models.runtime.loading import load_model

    read = reading.read_passages(reading.shipped_reader(spec), load_model(spec, head="base"), question, passages)
    for i, (answer, first, last, score) in enumerate(read):
        total = start[i][:, None] + end[i][None, :]
        allowed = torch.ones_like(total, dtype=torch.bool).triu() & ~torch.ones_like(total, dtype=torch.bool).triu(30)
        best = int(total.masked_fill(~allowed, float("-inf")).argmax())
        a, b = divmod(best, total.shape[1])
        offsets = tokenizer(question, passages[i], return_offsets_mapping=True)["offset_mapping"]
        assert (first, last) == (offsets[a][0], offsets[b][1])
        assert answer == passages[i][first:last]
        assert score == pytest.approx(float(p_start[i, a] * p_end[i, b]), rel=1e-4)
    assert read[0][0] == "Nairobi"


@pytest.mark.parametrize("kwargs, match", [
    ({"question": "  "}, "question"), ({"question": None}, "question"), ({"k": 0}, "^k must"),
    ({"k": 11}, "^k must"), ({"k": True}, "^k must"), ({"k": 2.5}, "^k must"), ({"k": "3"}, "^k must"),
    ({"question": 123}, "question"), ({"encoder_key": "no-such-model"}, "^encoder_key: Unknown model"),
    ({"reader": "no-such-reader"}, "^reader must"), ({"reader": "span-404"}, "^reader: No trained span head")])
def test_bad_input_names_the_argument(kwargs, match):
    with pytest.raises(InputError, match=match):
        retrieve_then_read(**({"question": "What is the capital of Peru?"} | kwargs))


def test_a_decoder_cannot_search():
    with pytest.raises(CapabilityError):
        retrieve_then_read("What is the capital of Peru?", encoder_key="mini-decoder")
