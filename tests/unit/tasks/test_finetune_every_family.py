"""Fine-tuning & search for every family of the mini zoo, from plain text through the tab's
handlers (``components.finetune``) or the core function its button calls: a probe, its answer
and why (a sentence task and a word task), a pair head, a span head, search, a sentence
encoder, distillation with the family as the teacher.

References: the model loaded again by transformers' Auto classes (``helpers.zoo_reference``),
run on each text alone, pooled by hand; the trained head's own weights applied to those
features; cosines by hand; the tokenizer's own offsets for a word's first piece and an answer's
characters.
"""

from __future__ import annotations

import re

import gradio as gr
import numpy as np
import pytest
import torch

from components.finetune import sentence, tab
from helpers import parity_atol, zoo_encode, zoo_reference
from models import (
    ZOO_KEYS,
    answer_span,
    attribute_classification,
    classify,
    classify_pair,
    distill,
    train_pair_classifier,
)
from models.tasks.classifier import classifier_forward

ATOL = 10 * parity_atol()
SENTENCE = "The President asked Congress to pass the budget before the end of the year."


def _hidden(key: str, text: str, layer: int | None = None):
    """(encoding, (T, d) states of ``layer``, the last when None) of the reference model."""
    tok, model = zoo_reference(key)
    with torch.no_grad():
        out = model(**zoo_encode(key, text), output_hidden_states=True)
    return tok(text), (out.last_hidden_state if layer is None else out.hidden_states[layer])[0]


@pytest.mark.parametrize("key", ZOO_KEYS)
def test_a_sentence_probe_answers_with_its_head_on_the_models_own_features(key):
    curves, summary, head_id = tab.run_train(key, "fiction-speech", "mean", 2, True, 3, 60, 0)
    assert head_id.startswith(f"{key}/fiction-speech/") and "Validation accuracy" in summary
    head = classifier_forward(head_id).head
    _, states = _hidden(key, SENTENCE, 2)
    with torch.no_grad():
        expected = head(states.mean(0).to(head.weight.dtype)).softmax(-1).numpy()
    np.testing.assert_allclose(classify(head_id, SENTENCE).probabilities, expected, atol=ATOL)
    shown = tab.run_classify(head_id, SENTENCE)
    assert all(f"{p:.1%}" in shown for p in expected)
    # why this class (the core the tab's button calls, without its slow integrated gradients): occlusion
    # by the mask token and gradient x input, on the reference model + the head
    why = {m: attribute_classification(head_id, SENTENCE, m) for m in ("gradient_x_input", "leave_one_out")}
    tok, model = zoo_reference(key)
    ids = tok(SENTENCE, return_tensors="pt")["input_ids"]
    label = int(expected.argmax())

    def p(embeds):  # p(label) of the head on layer 2's mean state
        hidden = model(inputs_embeds=embeds, output_hidden_states=True).hidden_states[2]
        return head(hidden.mean(1).to(head.weight.dtype)).softmax(-1)[:, label]

    embeds = model.get_input_embeddings()(ids).detach().requires_grad_()
    (grad,) = torch.autograd.grad(p(embeds)[0], embeds)
    inner = list(range(1, ids.shape[1] - 1))  # [CLS]/<s> and [SEP]/</s> are not scored
    occluded = ids.repeat(len(inner), 1)
    occluded[range(len(inner)), inner] = tok.mask_token_id
    with torch.no_grad():
        loo = float(p(model.get_input_embeddings()(ids))[0]) - p(model.get_input_embeddings()(occluded)).numpy()
    assert [i for i, c in enumerate(why["leave_one_out"].candidates) if c] == inner
    np.testing.assert_allclose(np.array(why["gradient_x_input"].scores)[inner],
                               (grad * embeds).sum(-1)[0, inner].detach().numpy(), atol=ATOL)
    np.testing.assert_allclose(np.array(why["leave_one_out"].scores)[inner], loo, atol=ATOL)


@pytest.mark.parametrize("key", ZOO_KEYS)
def test_a_word_probe_reads_each_words_first_piece(key):
    """truecase: one label per word, read at the word's first token (the tokenizer's own
    char_to_token of its first letter); a tokenizer that keeps capitals is refused."""
    text = "Yesterday the Mayor of Paris met the Queen near the river."
    tok = zoo_reference(key)[0]
    if tok("Paris London")["input_ids"] != tok("paris london")["input_ids"]:
        with pytest.raises(gr.Error, match="keeps capital letters"):
            tab.run_train(key, "truecase", "cls", -1, True, 1, 40, 0)
        return
    *_, head_id = tab.run_train(key, "truecase", "cls", -1, True, 2, 60, 0)
    head = classifier_forward(head_id).head
    enc, states = _hidden(key, text)
    words = [m.span() for m in re.finditer(r"[A-Za-z]+", text)][1:]  # every word but the first
    first = [enc.char_to_token(0, start) for start, _ in words]
    with torch.no_grad():
        expected = head(states[first].to(head.weight.dtype)).softmax(-1).numpy()
    result = classify(head_id, text)
    assert result.spans == tuple(words)
    np.testing.assert_allclose(result.probabilities, expected, atol=ATOL)


@pytest.mark.parametrize("key", ZOO_KEYS)
def test_a_pair_head_answers_on_the_pairs_cls_state(key):
    a, b = "volcano", "a mountain that throws out hot rock and ash"
    head_id = train_pair_classifier(key, "definition-match", freeze=True, epochs=2, train_size=24).head_id
    from models.tasks.pair_heads import _HEADS

    head = _HEADS.get(head_id)[0].head  # the trained weights; the features are the reference's
    model = zoo_reference(key)[1]
    with torch.no_grad():  # [CLS] A [SEP] B [SEP], segments 0 / 1 where the model has them
        expected = head(model(**zoo_encode(key, a, b)).last_hidden_state[0, 0]).softmax(-1).numpy()
    np.testing.assert_allclose(classify_pair(head_id, a, b).probabilities, expected, atol=ATOL)
    assert all(f"{p:.1%}" in sentence.run_classify_pair(head_id, a, b) for p in expected)


@pytest.fixture
def few_questions(monkeypatch):
    """The span task cut to its first 64 training and 16 validation questions: the same code
    path, a few seconds of encoding instead of all of them."""
    from models.tasks import span_heads

    data = span_heads.load_spans()
    monkeypatch.setattr(span_heads, "load_spans", lambda: span_heads.SpanData(data.train[:64], data.validation[:16]))


@pytest.mark.parametrize("key", ZOO_KEYS)
def test_a_span_answer_is_the_text_of_its_tokens(key, few_questions):
    """The answer of a span head (two training steps: any span will do) is the context's text
    from its first token's first character to its last token's last, without the space some
    tokenizers count into a word's first piece (Unigram's ▁, byte-level BPE's Ġ)."""
    question, context = "What is the capital of Peru?", "The capital and largest city of Peru is Lima."
    summary, head_id = sentence.run_span(key, 2, 0)
    assert "exact match" in summary.lower()
    answer = answer_span(head_id, question, context)
    tok = zoo_reference(key)[0]
    enc = tok(question, context)
    chars = [enc.token_to_chars(0, t) for t, s in enumerate(enc.sequence_ids()) if s == 1]
    starts = {c.start + len(context[c.start:c.end]) - len(context[c.start:c.end].lstrip()) for c in chars}
    assert answer.answer and answer.answer == context[answer.start:answer.end] == answer.answer.strip()
    assert answer.start in starts and answer.end in {c.end for c in chars}
    # the probabilities: the family's own *ForQuestionAnswering (encoder + qa_outputs) holding the
    # trained copy's weights, on the tokenizer's pair; ModernBERT's QA class is another design (a
    # prediction head before its classifier), not the span head's one Linear
    from transformers import AutoModelForQuestionAnswering

    from models.tasks.span_heads import _HEADS

    trained = _HEADS.get(head_id)[0]
    reference = AutoModelForQuestionAnswering.from_config(trained.body.config).eval()
    if not hasattr(reference, "qa_outputs"):
        assert key == "mini-modernbert"
        return
    missing, _ = reference.base_model.load_state_dict(trained.body.state_dict(), strict=False)
    reference.qa_outputs.load_state_dict(trained.qa_outputs.state_dict())
    assert not missing
    inside = [t for t, s in enumerate(enc.sequence_ids()) if s == 1]
    with torch.no_grad():
        out = reference(**zoo_encode(key, question, context))
    np.testing.assert_allclose(answer.start_probabilities, out.start_logits[0, inside].softmax(-1).numpy(), atol=ATOL)
    np.testing.assert_allclose(answer.end_probabilities, out.end_logits[0, inside].softmax(-1).numpy(), atol=ATOL)


@pytest.fixture
def small_corpus(monkeypatch, tmp_path):
    """The search corpus cut to its first 300 sentences (one of them longer than 128 tokens for
    the byte-level BPE and DeBERTa vocabularies), its indexes built in a folder of the test's."""
    from models.embeddings import retrieval

    sentences = retrieval.CORPUS_FILE.read_text(encoding="utf-8").splitlines()[:300]
    (tmp_path / "corpus.txt").write_text("\n".join(sentences) + "\n", encoding="utf-8")
    monkeypatch.setattr(retrieval, "CORPUS_FILE", tmp_path / "corpus.txt")
    monkeypatch.setattr(retrieval, "CACHE_DIR", tmp_path / "indexes")
    return sentences


def _mean_vectors(tok, model, texts, normalize=True):
    """Mean over each text's real tokens (its first tokens when longer than the model reads),
    unit length when ``normalize``; padded batches of 50."""
    limit = min(tok.model_max_length, model.config.max_position_embeddings)
    out = []
    for i in range(0, len(texts), 50):
        enc = tok(texts[i:i + 50], truncation=True, max_length=limit, padding=True, return_tensors="pt")
        with torch.no_grad():
            hidden = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).last_hidden_state
        keep = enc["attention_mask"][..., None].float()
        out.append(((hidden * keep).sum(1) / keep.sum(1)).numpy())
    v = np.concatenate(out)
    return v / np.linalg.norm(v, axis=-1, keepdims=True) if normalize else v


@pytest.mark.parametrize("key", ZOO_KEYS)
def test_search_hits_are_the_nearest_by_cosine_of_mean_pooled_states(key, small_corpus):
    """Every corpus sentence is searchable, one longer than the model reads too (its first
    tokens, as sentence-transformers reads it); hits in order of the cosine done here."""
    tok, model = zoo_reference(key)

    def vectors(texts):
        return _mean_vectors(tok, model, texts)

    every = vectors(small_corpus)
    longest = max(small_corpus, key=lambda s: len(tok(s)["input_ids"]))
    for query in (small_corpus[100], longest[:200]):
        frame, note = tab.run_search(query, key, "mean", "exact", 5)
        cosine = every @ vectors([query])[0]
        expected = np.sort(cosine)[::-1][:5]
        np.testing.assert_allclose(frame["score"], expected, atol=1e-3)  # shown to 4 decimals
        assert [cosine[small_corpus.index(s)] for s in frame["sentence"]] == pytest.approx(list(expected), abs=1e-3)
        assert f"among {len(small_corpus):,} sentences" in note
    assert frame["sentence"].iloc[0] == longest  # its own first 200 characters find it first


@pytest.mark.parametrize("key", ["mini-roberta", "mini-deberta", "mini-modernbert"])
def test_retrieval_report_reads_a_query_longer_than_the_model_reads(key, small_corpus, monkeypatch, tmp_path):
    """The report's queries are sentences nobody can shorten: one beyond the model's context is
    read by its first tokens; the dot-product overlap is the one done here on those vectors."""
    from models.embeddings import retrieval

    tok, model = zoo_reference(key)
    longest = max(small_corpus, key=lambda s: len(tok(s)["input_ids"]))
    queries = [small_corpus[10], f"{longest} {longest}", "A letter from my sister."]
    assert len(tok(queries[1])["input_ids"]) > min(tok.model_max_length, model.config.max_position_embeddings)
    (tmp_path / "queries.txt").write_text("\n".join(queries) + "\n", encoding="utf-8")
    monkeypatch.setattr(retrieval, "QUERIES_FILE", tmp_path / "queries.txt")
    report = tab.run_report(key, "mean", 5)
    assert f"(3 queries, {len(small_corpus):,} sentences)" in report
    raw, raw_q = _mean_vectors(tok, model, small_corpus, False), _mean_vectors(tok, model, queries, False)
    unit = raw / np.linalg.norm(raw, axis=-1, keepdims=True)
    dot = np.argsort(-(raw_q @ raw.T), axis=1)[:, :5]
    cosine = np.argsort(-(raw_q @ unit.T), axis=1)[:, :5]
    overlap = np.mean([len(set(a) & set(b)) / 5 for a, b in zip(cosine, dot)])
    assert f"keeps {overlap:.1%} of the cosine top-5" in report


@pytest.fixture
def few_synsets(monkeypatch):
    """The held-out synsets cut to their first 160 sentences: the same code path, a quarter of
    the scoring."""
    from models.embeddings import sentence_encoder as se

    whole = se.synset_groups

    def cut(split):
        data = whole(split)
        return data if split != "validation" else se._Groups(data.sentences[:160], data.group[:160])

    monkeypatch.setattr(se, "synset_groups", cut)
    return cut("validation")


@pytest.mark.parametrize("key", ZOO_KEYS)
def test_a_sentence_encoder_starts_from_the_shared_models_separation(key, few_synsets):
    """One training step: the "before" ROC AUC is the shared model's, scored here with sklearn
    on the reference model's mean-pooled vectors of the held-out synsets."""
    from sklearn.metrics import roc_auc_score

    _, _, summary, picker = sentence.run_sentence_encoder(key, "triplet", 0.5, 1, 7)
    held = few_synsets
    tok, model = zoo_reference(key)
    vectors = []
    for i in range(0, len(held.sentences), 64):
        enc = tok(list(held.sentences[i:i + 64]), padding=True, return_tensors="pt")
        with torch.no_grad():
            hidden = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).last_hidden_state
        keep = enc["attention_mask"][..., None].float()
        vectors.append(((hidden * keep).sum(1) / keep.sum(1)).numpy())
    v = np.concatenate(vectors)
    v /= np.linalg.norm(v, axis=-1, keepdims=True)
    i, j = np.triu_indices(len(v), k=1)
    same = np.asarray(held.group)[i] == np.asarray(held.group)[j]
    before = roc_auc_score(same, (v @ v.T)[i, j])
    assert f"Held-out separation ROC AUC {before:.3f} → " in summary
    assert picker["value"].startswith(f"sbert:{key}-")


@pytest.mark.parametrize("key", ZOO_KEYS)
def test_distillation_from_every_family_as_the_teacher(key):
    """Two 1x64 students of the family's own vocabulary, two steps each (the core the tab's
    button calls): the teacher is the family's MLM model (its parameters counted on the reference
    copy), and both students start from the same weights, batch and masks (one first MLM loss)."""
    result = distill(key, "1x64", steps=2, alpha=0.5, temperature=2.0, seed=0)
    assert result.teacher_parameters == sum(p.numel() for p in zoo_reference(key, "mlm")[1].parameters())
    assert result.steps_done == 2 and result.teacher_key == key
    assert result.distilled.train_mlm_loss[0] == pytest.approx(result.mlm_only.train_mlm_loss[0], rel=1e-5)
