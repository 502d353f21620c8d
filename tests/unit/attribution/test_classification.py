"""Why this class: attribution on a trained head, against torch.autograd and the head itself."""

from __future__ import annotations

import pytest
import torch

from models import (
    CLASS_ATTRIBUTION_METHODS,
    CapabilityError,
    InputError,
    attribute_classification,
    train_classifier,
)
from models.tasks.classifier import classifier_forward

TEXT = "The President asked Congress to approve the budget for the coming year."


@pytest.fixture(scope="module")
def head(encoder_key):
    return train_classifier(encoder_key, "fiction-speech", epochs=3, train_size=60, seed=0)


def _p_class(model, ids, label):
    with torch.no_grad():
        return float(model(input_ids=ids[None]).softmax(-1)[0, model.labels.index(label)])


def test_gradient_x_input_is_the_autograd_product(head):
    result = attribute_classification(head.head_id, TEXT, "gradient_x_input")
    model = classifier_forward(head.head_id)
    ids = model.tokenizer(TEXT, return_tensors="pt")["input_ids"][0]
    embeds = model.get_input_embeddings()(ids[None]).detach().requires_grad_()
    p = model(inputs_embeds=embeds).softmax(-1)[0, model.labels.index(result.label)]
    (grad,) = torch.autograd.grad(p, embeds)
    expected = (grad * embeds)[0].sum(-1).detach()
    assert torch.allclose(torch.tensor(result.scores, dtype=torch.float64), expected.double(), atol=1e-6)
    assert result.label == model.labels[int(model(input_ids=ids[None]).argmax())]  # the prediction


def test_integrated_gradients_complete_and_deletion_starts_at_p(head):
    result = attribute_classification(head.head_id, TEXT, "integrated_gradients", n_steps=64)
    model = classifier_forward(head.head_id)
    ids = model.tokenizer(TEXT, return_tensors="pt")["input_ids"][0]
    p = _p_class(model, ids, result.label)
    assert result.probability == pytest.approx(p, abs=1e-6)
    assert result.deleted[0] == pytest.approx(p, abs=1e-6) and result.random[0] == pytest.approx(p, abs=1e-6)
    baseline = ids.clone()
    baseline[torch.tensor(result.candidates)] = model.tokenizer.mask_token_id
    gap = sum(result.scores) - (p - _p_class(model, baseline, result.label))
    assert abs(gap) < 0.02 and result.completeness_delta == pytest.approx(gap, abs=1e-4)


def test_integrated_gradients_equals_captum_layer_integrated_gradients(head):
    """The head's IG from the text is Captum's LayerIntegratedGradients on the word-embedding
    layer of the same classifier, from the same baseline (every candidate token masked)."""
    from captum.attr import LayerIntegratedGradients

    result = attribute_classification(head.head_id, TEXT, "integrated_gradients", n_steps=16)
    model = classifier_forward(head.head_id)
    ids = model.tokenizer(TEXT, return_tensors="pt")["input_ids"]
    baseline = ids.clone()
    baseline[0, torch.tensor(result.candidates)] = model.tokenizer.mask_token_id
    label = model.labels.index(result.label)

    def p_class(input_ids):
        return model(input_ids=input_ids, attention_mask=torch.ones_like(input_ids)).softmax(-1)[:, label]

    lig = LayerIntegratedGradients(p_class, model.get_input_embeddings())
    attributions, delta = lig.attribute(ids, baselines=baseline, n_steps=16, return_convergence_delta=True)
    expected = attributions[0].sum(-1).detach().double()
    assert torch.allclose(torch.tensor(result.scores, dtype=torch.float64), expected, atol=1e-6)
    assert result.completeness_delta == pytest.approx(float(delta[0]), abs=1e-6)


def test_leave_one_out_is_the_heads_own_difference(head):
    result = attribute_classification(head.head_id, TEXT, "leave_one_out", target=head.labels[0])
    model = classifier_forward(head.head_id)
    ids = model.tokenizer(TEXT, return_tensors="pt")["input_ids"][0]
    k = next(i for i, c in enumerate(result.candidates) if c)
    removed = ids.clone()
    removed[k] = model.tokenizer.mask_token_id
    assert result.label == head.labels[0]
    assert result.scores[k] == pytest.approx(_p_class(model, ids, result.label) - _p_class(model, removed, result.label),
                                             abs=1e-6)
    assert len(result.deleted) == sum(result.candidates) + 1


def test_bad_requests_are_refused(head, encoder_key):
    assert "attention_rollout" not in CLASS_ATTRIBUTION_METHODS
    with pytest.raises(InputError, match="Unknown method"):
        attribute_classification(head.head_id, TEXT, "attention_rollout")
    with pytest.raises(InputError, match="not a label"):
        attribute_classification(head.head_id, TEXT, "leave_one_out", target="poetry")
    with pytest.raises(InputError, match="No trained head"):
        attribute_classification("nope/none/0", TEXT, "leave_one_out")
    tagger = train_classifier(encoder_key, "truecase", epochs=1, train_size=10)
    with pytest.raises(CapabilityError, match="sequence"):
        attribute_classification(tagger.head_id, TEXT, "leave_one_out")
