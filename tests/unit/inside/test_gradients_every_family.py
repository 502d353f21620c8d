"""Inside one layer's "gradients under MLM" for every family of the mini zoo: plain text and
the positions typed in its box, through the tab's handler (``inside_gradients``).

Reference: the MLM model loaded again by transformers' Auto classes (``helpers.zoo_reference``),
its own ``labels`` loss on the masked input, differentiated here by autograd with respect to
its word embeddings and its logits.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from components.inside import tab
from helpers import parity_atol, plotly_array, zoo_reference
from models import ZOO_KEYS

TEXT = "The cat sat on the mat near the old house."


@pytest.mark.parametrize("key", ZOO_KEYS)
def test_gradient_norms_are_autograd_of_transformers_own_mlm_loss(key):
    figure, note = tab.inside_gradients(key, TEXT, "3, 6")
    tok, model = zoo_reference(key, "mlm")
    enc = tok(TEXT, return_tensors="pt")
    ids = enc["input_ids"].clone()
    labels = torch.full_like(ids, -100)
    labels[0, [3, 6]] = ids[0, [3, 6]]
    ids[0, [3, 6]] = tok.mask_token_id
    extra = {k: v for k, v in enc.items() if k in tok.model_input_names and k != "input_ids"}
    embeds = model.get_input_embeddings()(ids).detach().requires_grad_()
    out = model(inputs_embeds=embeds, labels=labels, **extra)
    e_grad, l_grad = torch.autograd.grad(out.loss, [embeds, out.logits])
    embedding_norms, logit_norms = (plotly_array(t["y"]) for t in json.loads(figure.to_json())["data"])
    n = len(embedding_norms)  # the chart's tokens: every one of this short text
    assert n == ids.shape[1]
    np.testing.assert_allclose(embedding_norms, e_grad[0].norm(dim=-1).numpy(), rtol=1e-3, atol=10 * parity_atol())
    np.testing.assert_allclose(logit_norms, l_grad[0].norm(dim=-1).numpy(), rtol=1e-3, atol=10 * parity_atol())
    assert (logit_norms[[i for i in range(n) if i not in (3, 6)]] == 0).all()
    assert f"**{float(out.loss):.4f}**" in note


def test_the_picker_marks_the_models_whose_gradients_are_refused():
    """minilm-l6 has no trained MLM head: the pass runs with it, "Follow the gradient" refuses it.
    The tab's picker offers it marked "(no MLM head)", as the Fill-mask picker does (before: no
    mark, then the refusal); every model left unmarked has the head the gradients need."""
    import gradio as gr

    from models import list_models

    with gr.Blocks() as demo, gr.Tabs():
        tab.build_inside_tab()
    (picker,) = [b for b in demo.blocks.values() if isinstance(b, gr.Dropdown) and b.label == "Model"]
    labels = {key: label for label, key in picker.choices}
    with pytest.raises(gr.Error, match="no trained masked-LM head"):
        tab.inside_gradients("minilm-l6", TEXT, "3")
    assert labels["minilm-l6"].endswith("(no MLM head)")
    assert "minilm-l6" in tab.inside_layer("minilm-l6", TEXT, 0, 0, "", "query")[0]  # the pass still runs
    assert {key for key, label in labels.items() if "(no MLM head)" in label} == {
        m.key for m in list_models() if not m.can("mlm")}
