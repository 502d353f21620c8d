"""Task heads and the tasks they learn: sizes against transformers' own heads, the fixed split,
the frozen features against the trained module, the shared model left untouched."""

from __future__ import annotations

import hashlib
import json
from collections import Counter

import numpy as np
import pytest
import torch
from transformers import BertConfig, BertForSequenceClassification, BertForTokenClassification

from helpers import ENCODER_KEY, MLM_KEY, REPO, parity_atol
from models import (
    CapabilityError,
    InputError,
    classify,
    list_tasks,
    load_model,
    probe_layers,
    train_classifier,
)
from models.tasks.classifier import classifier_forward
from models.tasks import finetuning
from models.tasks.task_data import casing_labels, load_task
from models import get_spec

TASK = "fiction-speech"  # the smallest sequence task: 400 + 200 sentences, two classes


@pytest.fixture(scope="module")
def probe():
    return train_classifier(ENCODER_KEY, TASK, pooling="mean", epochs=10, seed=0)


def test_head_parameters_match_transformers_classification_heads(probe):
    # BERT-base with two classes: its classifier is C x d + C = 2 x 768 + 2.
    config = BertConfig(**json.loads((REPO / "data/configs/bert-base-uncased.json").read_text()))
    config.num_labels = 2
    reference = BertForSequenceClassification(config).classifier
    assert sum(p.numel() for p in reference.parameters()) == 1538
    # Ours, on the embedded MiniLM: the same count as transformers' head for its config.
    loaded = load_model(get_spec(ENCODER_KEY))
    config = BertConfig(**loaded.model.config.to_dict())
    config.num_labels = len(probe.labels)
    reference = BertForSequenceClassification(config).classifier
    assert probe.head_parameters == sum(p.numel() for p in reference.parameters())
    assert probe.body_parameters == sum(p.numel() for p in loaded.model.parameters())


def test_token_head_parameters_match_transformers():
    result = train_classifier(ENCODER_KEY, "truecase", epochs=1, train_size=40)
    config = BertConfig(**load_model(get_spec(ENCODER_KEY)).model.config.to_dict())
    config.num_labels = len(result.labels)
    reference = BertForTokenClassification(config).classifier
    assert result.head_parameters == sum(p.numel() for p in reference.parameters())
    assert result.kind == "token" and result.train_examples == 40


def test_reported_validation_accuracy_is_what_the_trained_module_scores(probe):
    """The probe trains on cached features; its module re-reads the text through the encoder."""
    data = load_task(TASK)
    model = classifier_forward(probe.head_id)
    enc = model.tokenizer(list(data.validation_texts), padding=True, return_tensors="pt")
    with torch.inference_mode():
        logits = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"])
    accuracy = (logits.argmax(-1).numpy() == np.array(data.validation_labels)).mean()
    assert accuracy == pytest.approx(probe.final_validation_accuracy, abs=1e-9)
    assert len(probe.validation_accuracy) == probe.epochs == 10


def test_classifier_forward_is_differentiable_in_the_input_embeddings(probe):
    model = classifier_forward(probe.head_id)
    ids = model.tokenizer("The nation must balance its budget.", return_tensors="pt")["input_ids"]
    embeds = model.body.get_input_embeddings()(ids).detach().requires_grad_(True)
    logits = model(inputs_embeds=embeds)
    logits[0, 1].backward()
    assert embeds.grad is not None and embeds.grad.abs().sum() > 0
    with torch.no_grad():
        from_ids = model(input_ids=ids)
    torch.testing.assert_close(logits.detach(), from_ids, atol=1e-5, rtol=1e-5)


def test_majority_baseline_counts_the_validation_labels():
    data = load_task("source")
    result = train_classifier(ENCODER_KEY, "source", epochs=2)
    majority = Counter(data.train_labels).most_common(1)[0][0]
    share = sum(1 for y in data.validation_labels if y == majority) / len(data.validation_labels)
    assert result.majority_baseline == pytest.approx(share)
    # A probe reads the source of a sentence far better than guessing the commonest one.
    assert result.final_validation_accuracy > result.majority_baseline + 0.3


def test_few_examples_overfit(probe):
    few = train_classifier(ENCODER_KEY, TASK, pooling="mean", epochs=60, train_size=8, seed=1)
    assert few.train_examples == 8 and few.train_units == 8
    assert few.train_accuracy[-1] == 1.0
    assert few.final_validation_accuracy < few.train_accuracy[-1]
    assert few.final_validation_accuracy < probe.final_validation_accuracy


def test_probe_layers_agrees_with_single_layer_probes():
    layers = probe_layers(ENCODER_KEY, TASK, pooling="cls", epochs=3)
    n_layers = load_model(get_spec(ENCODER_KEY)).model.config.num_hidden_layers
    assert layers.layers == tuple(range(n_layers + 1))
    for layer in (0, n_layers):
        single = train_classifier(ENCODER_KEY, TASK, pooling="cls", layer=layer, epochs=3)
        assert single.final_validation_accuracy == pytest.approx(layers.validation_accuracy[layer])


def test_probe_features_are_transformers_hidden_states_pooled():
    """What a probe trains on, every layer: the mean over the real tokens of transformers' own
    ``hidden_states`` for each sentence (pooled on the forward's thread, batched and packed)."""
    from models.tasks.features import task_features

    loaded = load_model(get_spec(ENCODER_KEY), head="base")
    task = load_task(TASK)
    features = task_features(loaded, task, "mean").states["validation"]  # (L + 1, N, d)
    picked = [0, 7, len(task.validation_texts) - 1]
    for i in picked:
        enc = loaded.tokenizer(task.validation_texts[i], return_tensors="pt").to(loaded.device)
        with torch.inference_mode():
            hidden = loaded.model(**enc, output_hidden_states=True).hidden_states
        want = torch.stack([h[0].float().mean(0) for h in hidden]).cpu().numpy()  # (L + 1, d)
        np.testing.assert_allclose(features[:, i], want.astype(np.float32), atol=parity_atol(float32=1e-4), rtol=0)


def test_finetuning_trains_a_copy_and_leaves_the_shared_model_alone():
    shared = load_model(get_spec(MLM_KEY)).model
    before = {k: v.clone() for k, v in shared.state_dict().items()}
    result = train_classifier(MLM_KEY, TASK, pooling="cls", freeze=False, epochs=1, train_size=32)
    after = shared.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    tuned = classifier_forward(result.head_id).body
    assert tuned is not shared
    assert any(not torch.equal(before[k], v) for k, v in tuned.state_dict().items() if k in before)
    assert "copy" in result.note and not result.freeze


def test_big_models_are_refused_for_finetuning(monkeypatch):
    monkeypatch.setattr(finetuning, "MAX_FINETUNE_PARAMETERS", 1000)
    with pytest.raises(CapabilityError, match="freeze=True"):
        train_classifier(MLM_KEY, TASK, freeze=False, epochs=1, train_size=8)


@pytest.mark.parametrize("kwargs, match", [
    ({"task": "emotion"}, "Unknown task"),
    ({"pooling": "max"}, "pooling"),
    ({"epochs": 0}, "epochs"),
    ({"epochs": 6, "freeze": False}, "epochs"),
    ({"train_size": 1}, "train_size"),
    ({"layer": 99}, "layer"),
])
def test_bad_arguments_say_what_to_do(kwargs, match):
    args = {"model_key": ENCODER_KEY, "task": TASK, "epochs": 1} | kwargs
    with pytest.raises(InputError, match=match):
        train_classifier(**args)


def test_classify_a_sentence_and_each_word(probe):
    result = classify(probe.head_id, "I hereby submit to the Congress the budget of the United States.")
    assert result.kind == "sequence" and result.predicted[0] in probe.labels
    assert result.probabilities.sum() == pytest.approx(1.0, abs=1e-5)
    tagger = train_classifier(ENCODER_KEY, "truecase", epochs=2, train_size=60)
    text = "Yesterday Elizabeth walked to London with Mr. Darcy."
    words = classify(tagger.head_id, text)
    assert [text[a:b] for a, b in words.spans] == ["Elizabeth", "walked", "to", "London", "with", "Mr", "Darcy"]
    assert len(words.predicted) == len(words.spans) and words.probabilities.shape == (7, 2)
    with pytest.raises(InputError, match="train_classifier"):
        classify("no-such-head", "Hello there.")


def test_tasks_ship_with_a_fixed_hash_split():
    for info in list_tasks():
        rows = [line.split("\t", 2) for line in (REPO / f"data/tasks/{info.name}.tsv").read_text().splitlines()]
        # held out by entity and by template instead (tests/unit/tasks/test_entities_sentiment.py)
        for split, _, text in rows if info.name not in ("entities", "sentiment") else ():
            key = "task:" + " ".join(text.lower().split())
            bucket = int.from_bytes(hashlib.sha1(key.encode()).digest()[:8], "big") % 100
            assert split == ("validation" if bucket < 30 else "train")
        assert info.train_size == sum(r[0] == "train" for r in rows)
        assert info.validation_size == sum(r[0] == "validation" for r in rows)
        train = {r[2] for r in rows if r[0] == "train"}
        assert not train & {r[2] for r in rows if r[0] == "validation"}
        assert info.label_source and info.kind in ("sequence", "token")


def test_casing_labels_skip_the_first_word():
    spans, labels = casing_labels("The Bank of England opened; it was NASA's day.")
    words = ["Bank", "of", "England", "opened", "it", "was", "NASA's", "day"]
    assert [(a, b) for a, b in spans] == [(s, s + len(w)) for s, w in
                                          zip([4, 9, 12, 20, 28, 31, 35, 42], words)]
    assert labels == (1, 0, 1, 0, 0, 0, 1, 0)


def test_clear_cache_forgets_trained_heads(monkeypatch):
    from models.runtime import loading

    # the loaded models and tokenizers other tests share stay untouched: stand-ins are cleared
    monkeypatch.setattr(loading, "MODEL_CACHE", loading.ModelCache(1))
    monkeypatch.setattr(loading, "_tokenizers", {})
    head = train_classifier(ENCODER_KEY, TASK, pooling="mean", epochs=1, train_size=8, seed=2)
    assert classify(head.head_id, "She said, \"Come in.\"").predicted[0] in head.labels
    loading.clear_cache()  # e.g. after set_device: the head's encoder is on the old device
    with pytest.raises(InputError, match="No trained head"):
        classify(head.head_id, "She said, \"Come in.\"")


def test_lesson_probe_is_trained_again_only_when_its_head_is_gone(monkeypatch, tmp_path):
    """The Lessons step keeps its probe per process: a bad sentence is the user's error (no
    second training); a head pushed out of the core's store comes back from the run kept on
    disk, or is trained again when runs are not kept."""
    from components.lessons import views as lesson_views
    from models import EncoderLabError
    from models.tasks import classifier as heads

    calls = []

    def counted(*args, **kwargs):
        calls.append(args)
        return train_classifier(*args, **{**kwargs, "epochs": 1, "train_size": 8})

    monkeypatch.setattr(lesson_views, "train_classifier", counted)
    monkeypatch.setenv("ENCODER_LAB_RUNS_DIR", str(tmp_path))
    lesson_views._probe.cache_clear()
    lesson_views.fine_tuning(ENCODER_KEY, TASK, "She said, \"Come in.\"")
    assert len(calls) == 1
    with pytest.raises(EncoderLabError):
        lesson_views.fine_tuning(ENCODER_KEY, TASK, "   ")
    assert len(calls) == 1
    heads._TRAINED.drop(lesson_views._probe(ENCODER_KEY, TASK).head_id)  # dropped, as the memory budget would
    lesson_views.fine_tuning(ENCODER_KEY, TASK, "She said, \"Come in.\"")
    assert len(calls) == 1  # restored from the run kept on disk (models/runtime/run_store.py)
    assert lesson_views._probe(ENCODER_KEY, TASK).head_id in dict(heads._TRAINED.items())
    monkeypatch.setenv("ENCODER_LAB_KEEP_RUNS", "0")  # nothing kept: trained again
    heads._TRAINED.drop(lesson_views._probe(ENCODER_KEY, TASK).head_id)
    lesson_views.fine_tuning(ENCODER_KEY, TASK, "She said, \"Come in.\"")
    assert len(calls) == 2
    lesson_views._probe.cache_clear()


def test_a_probe_leaves_torchs_global_generator_to_the_runs_beside_it(monkeypatch):
    """A live run (a sentence encoder, a fine-tuned head) draws its dropout from torch's global
    generator; a probe trained meanwhile on another request's thread must not reseed it (before,
    its head was made inside ``fork_rng`` after ``torch.manual_seed``: the other run's draws in that
    window came from the probe's seed). Its head still starts as ``nn.Linear`` after
    ``torch.manual_seed(seed)``: the same probe, the same numbers."""
    from models.tasks import classifier

    reseeded = []
    real_seed = torch.manual_seed
    monkeypatch.setattr(torch, "manual_seed", lambda s: reseeded.append(s) or real_seed(s))
    monkeypatch.setattr(torch.random, "manual_seed", lambda s: reseeded.append(s) or real_seed(s))
    made = []
    real_fit = classifier._fit_probe
    monkeypatch.setattr(classifier, "_fit_probe", lambda *a: made.append(a) or real_fit(*a))
    result = train_classifier(ENCODER_KEY, TASK, pooling="mean", epochs=1, seed=3)
    assert len(result.validation_accuracy) == 1 and made
    assert reseeded == []
    monkeypatch.undo()
    x_train, n_classes, seed = made[0][0], made[0][4], made[0][6]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        reference = torch.nn.Linear(x_train.shape[1], n_classes)
    head = classifier._seeded_linear(x_train.shape[1], n_classes, seed)
    assert torch.equal(head.weight, reference.weight) and torch.equal(head.bias, reference.bias)


@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_a_probe_on_a_float16_model_classifies_as_transformers_float32_model(half_precision, pooling):
    # on a GPU the probe's head sits on the shared float16 encoder: classify and its attribution
    # failed there (pooling hands the head float32: "mat1 and mat2 must have the same dtype")
    from helpers import zoo_encode, zoo_reference

    from models import attribute_classification

    probe = train_classifier("mini-bert", "fiction-speech", pooling=pooling, epochs=3, seed=0)
    assert load_model(get_spec("mini-bert")).dtype == torch.float16
    text = "She said she would come back tomorrow."
    result = classify(probe.head_id, text)
    _, model = zoo_reference("mini-bert")  # transformers' own float32 model
    with torch.no_grad():
        hidden = model(**zoo_encode("mini-bert", text)).last_hidden_state[0]  # (T, d)
        pooled = hidden.mean(0) if pooling == "mean" else hidden[0]
        head = classifier_forward(probe.head_id).head
        expected = torch.softmax(pooled @ head.weight.float().T + head.bias.float(), -1).numpy()
    np.testing.assert_allclose(result.probabilities, expected, atol=2e-2)
    explained = attribute_classification(probe.head_id, text, "gradient_x_input")
    assert explained.label == result.predicted[0]
    assert explained.probability == pytest.approx(float(expected.max()), abs=2e-2)
