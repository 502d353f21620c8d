"""Issue 26: the sentence encoder (siamese triplet / contrastive training), the pair and span
heads: losses against torch and a hand computation, head sizes against transformers' own
heads, the shared model untouched, the held-out splits, busy / stop / bad input."""

from __future__ import annotations

import threading
import time
from collections import Counter

import numpy as np
import pytest
import torch
from transformers import BertConfig, BertForQuestionAnswering, BertForSequenceClassification

from helpers import REPO, parity_atol
from models import (
    InputError,
    answer_span,
    distill,
    classify_pair,
    embed,
    load_model,
    search,
    similarity,
    stop_live_training,
    train_pair_classifier,
    train_sentence_encoder,
    train_span_head,
)
from models.embeddings import retrieval
from models.embeddings.sentence_encoder import batch_all_triplet_loss, contrastive_loss, synset_groups, triplet_loss
from models.registry import catalogue
from models.tasks import live_training
from models.tasks.span_heads import first_noun_phrase, load_spans, longest_word, token_f1
from models import get_spec

SMALL = "mini-bert"  # the mini zoo's BERT: 4 layers, 128 wide, seconds per run


def _state(model) -> dict:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _same_state(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


# --- the losses ----------------------------------------------------------------------------


def test_triplet_loss_matches_torch_and_a_hand_computation():
    a = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    p = torch.tensor([[0.6, 0.8], [0.0, 1.0]])
    n = torch.tensor([[0.0, 1.0], [1.0, 0.0]])
    # By hand: row 1 ||a-p||^2 = 0.16 + 0.64 = 0.8, ||a-n||^2 = 2 -> max(0, 0.8 - 2 + 1.5) = 0.3;
    # row 2: 0 - 2 + 1.5 < 0 -> 0. Mean 0.15.
    assert float(triplet_loss(a, p, n, 1.5)) == pytest.approx(0.15)
    reference = torch.nn.TripletMarginWithDistanceLoss(
        distance_function=lambda x, y: (x - y).pow(2).sum(-1), margin=0.7)
    g = torch.Generator().manual_seed(0)
    x, y, z = (torch.nn.functional.normalize(torch.randn(8, 5, generator=g), dim=-1) for _ in range(3))
    assert float(triplet_loss(x, y, z, 0.7)) == pytest.approx(float(reference(x, y, z)), rel=1e-6)


def test_batch_all_triplet_loss_is_the_mean_over_every_triplet_of_the_batch():
    g = torch.Generator().manual_seed(1)
    batch = torch.nn.functional.normalize(torch.randn(9, 4, generator=g), dim=-1)  # anchors, positives, negatives
    groups = ["a", "b", "c", "a", "b", "c", "d", "a", "e"]  # 7 is another sentence of anchor 0's synset
    anchor, positive = batch[:3], batch[3:6]
    triplets = [(i, j) for i in range(3) for j in range(9) if groups[j] != groups[i]]
    expected = sum(float(triplet_loss(anchor[i:i + 1], positive[i:i + 1], batch[j:j + 1], 0.5))
                   for i, j in triplets) / len(triplets)
    assert len(triplets) == 3 * 9 - 3 - 3 - 1  # not itself, its positive, nor anchor 0's synset-mate
    assert float(batch_all_triplet_loss(anchor, positive, batch, groups, 0.5)) == pytest.approx(expected, rel=1e-6)


def test_contrastive_loss_matches_a_hand_computation():
    u = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
    v = torch.tensor([[0.0, 1.0], [0.6, 0.8]])
    # d = sqrt(2) and sqrt(0.8). Pair 1 same: d^2 / 2 = 1. Pair 2 different, margin 1.5:
    # max(0, 1.5 - 0.894...)^2 / 2.
    d2 = 0.8 ** 0.5
    expected = (1.0 + (1.5 - d2) ** 2 / 2) / 2
    assert float(contrastive_loss(u, v, torch.tensor([1, 0]), 1.5)) == pytest.approx(expected, rel=1e-6)


# --- the sentence encoder ------------------------------------------------------------------


@pytest.fixture(scope="module")
def encoder():
    shared = load_model(get_spec(SMALL)).model
    before = _state(shared)
    result = train_sentence_encoder(SMALL, loss="triplet", steps=4, seed=0, max_seconds=60)
    return result, before, _state(shared)


def test_sentence_encoder_leaves_the_shared_model_unchanged(encoder):
    result, before, after = encoder
    assert _same_state(before, after)
    assert result.steps_done == 4 and len(result.train_loss) == 4 and not result.stopped
    assert result.model_key == SMALL and "not changed" in result.note and "WordNet" in result.note


def test_before_is_the_shared_model_and_the_copy_is_loadable_by_key(encoder):
    result, _, _ = encoder
    sentences = list(result.matrix_sentences)
    shared = embed(SMALL, sentences, pooling="mean")
    np.testing.assert_allclose(result.matrix_before, shared @ shared.T, atol=1e-5)
    trained = similarity(result.encoder_key, sentences, pooling="mean").matrix
    np.testing.assert_allclose(result.matrix_after, trained, atol=1e-5)
    assert not np.allclose(result.matrix_after, result.matrix_before, atol=1e-4)  # it did train
    assert catalogue.get_spec(result.encoder_key).sentence_embeddings


def test_held_out_synsets_are_never_trained_on(encoder):
    result, _, _ = encoder
    train, held = synset_groups("train"), synset_groups("validation")
    words = lambda g: {x.rsplit(".", 2)[0] for x in g.group}  # noqa: E731
    assert not set(train.group) & set(held.group) and not words(train) & words(held)
    assert not set(train.sentences) & set(held.sentences)
    assert result.heldout_groups == len(set(held.group)) and result.train_groups == len(set(train.group))
    assert 0 <= result.before.auc <= 1 and result.before.same_pairs > 0


def test_search_with_the_trained_copy_writes_no_index_to_disk(encoder, tmp_path, monkeypatch):
    result, _, _ = encoder
    monkeypatch.setattr(retrieval, "CACHE_DIR", tmp_path)
    small = tuple(synset_groups("validation").sentences[:40])  # a small corpus: seconds, not minutes
    monkeypatch.setattr(retrieval, "corpus", lambda: (small, ("wordnet",) * len(small), "test-40"))
    found = search(result.encoder_key, "The whale dived under the ship.", k=3)
    assert len(found.hits) == 3 and found.model_key == result.encoder_key
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("kwargs, message", [
    ({"loss": "cosine"}, "triplet, contrastive"),
    ({"margin": 0}, "margin"),
    ({"margin": 4.5}, "at most 4"),
    ({"steps": 0}, "steps"),
    ({"mining": "random"}, "drawn, hardest"),
])
def test_sentence_encoder_bad_input(kwargs, message):
    with pytest.raises(InputError, match=message):
        train_sentence_encoder(SMALL, **kwargs)


def test_one_run_at_a_time_and_stoppable():
    with live_training.exclusive_run("a test run"):
        with pytest.raises(InputError, match="Busy: a test run is running"):
            train_sentence_encoder(SMALL, steps=1)
        with pytest.raises(InputError, match="Busy"):
            train_span_head(SMALL, steps=1)
    assert stop_live_training() == "No live training run is running."
    out = {}
    worker = threading.Thread(target=lambda: out.setdefault("r", train_sentence_encoder(
        SMALL, loss="contrastive", steps=1000, max_seconds=120)))
    worker.start()
    deadline = time.time() + 60
    while not live_training.live_training_busy() and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    assert stop_live_training().startswith("Stop requested")
    worker.join(120)
    assert out["r"].stopped == "stopped on request" and out["r"].steps_done < 1000


# --- the pair head ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pair():
    return train_pair_classifier(SMALL, "definition-match", freeze=True, epochs=3, train_size=300)


def test_pair_head_size_matches_transformers(pair):
    config = BertConfig(**load_model(get_spec(SMALL)).model.config.to_dict())
    config.num_labels = 2
    reference = BertForSequenceClassification(config).classifier
    assert pair.head_parameters == sum(p.numel() for p in reference.parameters()) == 2 * 128 + 2
    assert pair.reference_parameters == pair.head_parameters
    assert pair.reference_head == "BertForSequenceClassification.classifier"


def test_pair_majority_baseline_from_the_file(pair):
    rows = [line.split("\t") for line in (REPO / "data/tasks/definition-match.tsv").read_text().splitlines()]
    subset = set(np.random.default_rng(0).permutation(sum(r[0] == "train" for r in rows))[:300])
    train = Counter(r[1] for i, r in enumerate(r for r in rows if r[0] == "train") if i in subset)
    assert pair.train_examples == 300
    validation = [r[1] for r in rows if r[0] == "validation"]
    majority = train.most_common(1)[0][0]
    assert pair.majority_label == majority
    assert pair.majority_baseline == pytest.approx(validation.count(majority) / len(validation))
    assert not {r[2] for r in rows if r[0] == "train"} & {r[2] for r in rows if r[0] == "validation"}


def test_pair_reads_segment_ids_as_the_tokenizer_marks_them(pair):
    from models.tasks.pair_heads import _encode_pairs

    loaded = load_model(get_spec(SMALL))
    (row,) = _encode_pairs(loaded, [("dog", "a domesticated mammal")])
    reference = loaded.tokenizer("dog", "a domesticated mammal")
    assert row["input_ids"] == reference["input_ids"] and row["token_type_ids"] == reference["token_type_ids"]
    assert row["token_type_ids"][0] == 0 and row["token_type_ids"][-1] == 1 and pair.segment_ids
    answer = classify_pair(pair.head_id, "dog", "a domesticated mammal")
    assert answer.predicted in pair.labels and answer.probabilities.sum() == pytest.approx(1, abs=1e-5)


def test_pair_bad_input(pair):
    with pytest.raises(InputError, match="definition-match, same-source"):
        train_pair_classifier(SMALL, "paraphrase")
    with pytest.raises(InputError, match="No trained pair head"):
        classify_pair("pair:nothing/1", "a", "b")


def test_same_source_pairs_longer_than_the_model_reads_are_cut_not_refused():
    # the task's own pairs (some over 128 tokens) train every 128-token model here; typed pairs
    # that long are still refused
    from models.tasks.pair_heads import _encode_pairs, load_pair_task

    loaded = load_model(get_spec(SMALL))
    limit = loaded.model.config.max_position_embeddings
    task = load_pair_task("same-source")
    pairs = task.train_pairs + task.validation_pairs
    full = [loaded.tokenizer(a, b)["input_ids"] for a, b in pairs]
    too_long = [i for i, ids in enumerate(full) if len(ids) > limit]
    assert too_long  # else this test tests nothing
    result = train_pair_classifier(SMALL, "same-source", freeze=True, epochs=1)
    assert f"{len(too_long)} of the {len(pairs):,} pairs are longer than the {limit} tokens" in result.note
    rows = _encode_pairs(loaded, [pairs[i] for i in too_long], truncate=True)
    reference = loaded.tokenizer([pairs[i][0] for i in too_long], [pairs[i][1] for i in too_long],
                                 truncation="longest_first", max_length=limit)
    assert [r["input_ids"] for r in rows] == reference["input_ids"]
    assert all(len(r["input_ids"]) == limit and r["token_type_ids"][-1] == 1 for r in rows)
    with pytest.raises(InputError, match=f"reads at most {limit} tokens"):
        classify_pair(result.head_id, *pairs[too_long[0]])


# --- the span head ---------------------------------------------------------------------------


def test_span_split_has_no_entity_or_answer_overlap():
    data = load_spans()
    assert not {e.entity.lower() for e in data.train} & {e.entity.lower() for e in data.validation}
    assert not {e.answer.lower() for e in data.train} & {e.answer.lower() for e in data.validation}
    for e in data.train + data.validation:
        assert e.context[e.start:e.start + len(e.answer)] == e.answer


def test_span_scores_and_baselines_by_hand():
    assert token_f1("the capital Oslo", "Oslo") == pytest.approx(2 * 0.5 * 1 / 1.5)  # "the" dropped
    assert token_f1("Bergen", "Oslo") == 0.0
    assert first_noun_phrase("The element oxygen, atomic number 8, is written O.") == "element oxygen"
    assert first_noun_phrase("Norway lies in Northern Europe.") == "Norway"
    assert longest_word("Terbium has the chemical symbol Tb.") == "chemical"


@pytest.fixture(scope="module")
def span():
    shared = load_model(get_spec(SMALL)).model
    before = _state(shared)
    result = train_span_head(SMALL, steps=2, max_seconds=60)
    return result, before, _state(shared)


def test_span_head_size_matches_transformers_and_shared_model_unchanged(span):
    result, before, after = span
    reference = BertForQuestionAnswering(BertConfig(**load_model(get_spec(SMALL)).model.config.to_dict())).qa_outputs
    assert result.head_parameters == sum(p.numel() for p in reference.parameters()) == 2 * 128 + 2
    assert result.reference_parameters == result.head_parameters
    assert _same_state(before, after) and result.steps_done == 2


def test_answer_span_is_a_span_with_probabilities(span):
    result, _, _ = span
    context = "Norway lies in Northern Europe, and its capital is Oslo."
    answer = answer_span(result.head_id, "What is the capital of Norway?", context)
    assert context[answer.start:answer.end] == answer.answer and answer.answer
    assert answer.start_probabilities.sum() == pytest.approx(1, abs=1e-5)
    assert len(answer.tokens) == len(answer.end_probabilities)
    assert answer.tokens == tuple(load_model(get_spec(SMALL)).tokenizer.tokenize(context))


def test_answer_span_is_transformers_question_answering_model_with_the_trained_weights(span):
    """The answer and its probabilities from typed text are BertForQuestionAnswering's: the
    trained copy's body and qa_outputs loaded into it, run on the tokenizer's question / context
    pair; its start and end logits softmaxed over the context's tokens, the span with the
    highest start + end logit (start <= end, at most MAX_ANSWER_TOKENS tokens) chosen here."""
    from models.tasks.span_heads import _HEADS, MAX_ANSWER_TOKENS

    result, _, _ = span
    question, context = "What is the capital of Norway?", "Norway lies in Northern Europe, and its capital is Oslo."
    answer = answer_span(result.head_id, question, context)
    trained = _HEADS.get(result.head_id)[0]
    reference = BertForQuestionAnswering(BertConfig(**trained.body.config.to_dict())).eval()
    missing, _ = reference.bert.load_state_dict(trained.body.state_dict(), strict=False)
    reference.qa_outputs.load_state_dict(trained.qa_outputs.state_dict())
    assert not missing
    tok = load_model(get_spec(SMALL)).tokenizer
    enc = tok(question, context, return_tensors="pt", return_offsets_mapping=True)
    offsets = enc.pop("offset_mapping")[0]
    with torch.no_grad():
        out = reference(**enc)
    inside = [t for t, s in enumerate(enc.sequence_ids(0)) if s == 1]
    start, end = out.start_logits[0, inside], out.end_logits[0, inside]
    atol = parity_atol()
    np.testing.assert_allclose(answer.start_probabilities, start.softmax(-1).numpy(), atol=atol)
    np.testing.assert_allclose(answer.end_probabilities, end.softmax(-1).numpy(), atol=atol)
    a, b = max(((i, j) for i in range(len(inside)) for j in range(i, min(i + MAX_ANSWER_TOKENS, len(inside)))),
               key=lambda ij: float(start[ij[0]] + end[ij[1]]))
    first, last = int(offsets[inside[a]][0]), int(offsets[inside[b]][1])
    assert (answer.answer, answer.start, answer.end) == (context[first:last], first, last)
    assert answer.score == pytest.approx(float(start.softmax(-1)[a] * end.softmax(-1)[b]), abs=atol)


def test_answer_span_bad_input(span):
    result, _, _ = span
    with pytest.raises(InputError, match="needs a context"):
        answer_span(result.head_id, "What is the capital of Norway?", "  ")
    with pytest.raises(InputError, match="reads at most"):
        answer_span(result.head_id, "Why?", "word " * 600)
    with pytest.raises(InputError, match="No trained span head"):
        answer_span("span:none/1", "Why?", "Because.")


# --- distillation ----------------------------------------------------------------------------


def test_distillation_runs_share_init_batches_and_masks():
    teacher = load_model(get_spec(SMALL), head="mlm").model
    before = _state(teacher)
    r = distill(SMALL, "1x64", steps=3, alpha=0.5, temperature=2.0, seed=0)
    assert _same_state(before, _state(teacher))
    assert r.steps_done == 3 and len(r.distilled.train_loss) == len(r.mlm_only.train_loss) == 3
    # Same initial weights, batch and masks: the first step's MLM loss is the same number in both runs.
    assert r.distilled.train_mlm_loss[0] == pytest.approx(r.mlm_only.train_mlm_loss[0], rel=1e-5)
    assert r.mlm_only.train_loss == r.mlm_only.train_mlm_loss  # MLM alone minimises MLM only
    assert r.distilled.train_loss[0] != pytest.approx(r.distilled.train_mlm_loss[0])
    assert r.winner in ("soft targets + MLM", "MLM alone", "tie") and r.winner in r.note or r.winner == "tie"
    assert r.loss_gain == pytest.approx(r.mlm_only.final_loss - r.distilled.final_loss)


@pytest.mark.parametrize("kwargs, message", [
    ({"student_shape": "9x9"}, "1x64, 2x64"),
    ({"alpha": 0}, "alpha must be above 0"),
    ({"temperature": 0.1}, "temperature"),
])
def test_distillation_bad_input(kwargs, message):
    with pytest.raises(InputError, match=message):
        distill(SMALL, **{"student_shape": "1x64", **kwargs})
