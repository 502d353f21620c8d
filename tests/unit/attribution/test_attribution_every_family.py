"""Why this guess for every family of the mini zoo: typed text with [MASK] through the tab's
handler (``components.attribution.tab.explain``), as its button sends it.

The reference is the model that makes the guess, loaded again by transformers' Auto classes
(``helpers.zoo_reference(key, "mlm")``; ELECTRA's generator): p(target) at the mask by hand,
occlusion by the mask token, gradient × input on its word embeddings by autograd, rollout of its
own ``output_attentions``, and the deletion curve along the reference's own ranking.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from components.attribution import plots, tab
from helpers import parity_atol, plotly_array, zoo_reference
from models import ZOO_KEYS

TEXT = "She opened the [MASK] and walked into the garden."
METHODS = ["gradient_x_input", "attention_rollout", "leave_one_out"]
ATOL = 10 * parity_atol()


def _reference(key: str) -> dict:
    """Per method, the scores of every candidate token (not special, not the mask), from the
    reference model; and p(target), the candidates, the target."""
    tok, model = zoo_reference(key, "mlm")
    enc = tok(TEXT.replace("[MASK]", tok.mask_token), return_tensors="pt", return_special_tokens_mask=True)
    special = enc.pop("special_tokens_mask")[0].bool()
    ids = enc["input_ids"][0]
    extra = {k: v for k, v in enc.items() if k in tok.model_input_names and k != "input_ids"}
    position = ids.tolist().index(tok.mask_token_id)

    def p(batch_ids=None, embeds=None):
        inputs = {"input_ids": batch_ids} if embeds is None else {"inputs_embeds": embeds}
        rows = (batch_ids if embeds is None else embeds).shape[0]
        logits = model(**inputs, **{k: v.expand(rows, -1) for k, v in extra.items()}).logits
        return logits[:, position].softmax(-1)

    with torch.no_grad():
        full = p(ids[None])[0]
        target = int(full.argmax())
        out = model(**enc, output_attentions=True)
    candidates = [i for i in range(len(ids)) if not special[i] and i != position]
    occluded = ids.repeat(len(candidates), 1)
    occluded[range(len(candidates)), candidates] = tok.mask_token_id
    with torch.no_grad():
        loo = float(full[target]) - p(occluded)[:, target].numpy()
    embeds = model.get_input_embeddings()(ids[None]).detach().requires_grad_()
    (grad,) = torch.autograd.grad(p(embeds=embeds)[0, target], embeds)
    gxi = (grad * embeds).sum(-1)[0].detach().numpy()[candidates]
    weights = torch.stack([a[0] for a in out.attentions]).mean(1).numpy()  # (L, T, T): head mean
    rollout = np.eye(len(ids))
    for layer in weights:  # Abnar & Zuidema: + identity, rows renormalised, layers multiplied
        a = layer + np.eye(len(ids))
        rollout = (a / a.sum(-1, keepdims=True)) @ rollout
    return {"p": float(full[target]), "target": tok.decode([target]), "candidates": candidates, "ids": ids,
            "position": position, "mask_id": tok.mask_token_id, "p_of": p,
            "scores": {"leave_one_out": loo, "gradient_x_input": gxi,
                       "attention_rollout": rollout[position, candidates]}}


@pytest.mark.parametrize("key", ZOO_KEYS)
def test_every_method_and_the_deletion_check_against_the_guessing_model(key):
    status, _, figure, frame = tab.explain(TEXT, key, 1, "", 8, METHODS)
    ref = _reference(key)
    candidates = ref["candidates"]
    assert frame["position"].tolist() == list(range(len(ref["ids"])))
    for method, expected in ref["scores"].items():
        column = frame[plots.label(method)]
        assert column.isna().tolist() == [i not in candidates for i in range(len(ref["ids"]))], method
        np.testing.assert_allclose(column.to_numpy(dtype=float)[candidates], expected, atol=ATOL, err_msg=method)
    # deletion: p(target) as the occlusion scores' tokens are replaced one by one, best first
    order = sorted(candidates, key=lambda i: (-ref["scores"]["leave_one_out"][candidates.index(i)], i))
    rows = ref["ids"].repeat(len(order) + 1, 1)
    for k, position in enumerate(order, start=1):
        rows[k:, position] = ref["mask_id"]
    with torch.no_grad():
        curve = ref["p_of"](rows)[:, int(ref["p_of"](ref["ids"][None])[0].argmax())].numpy()
    traces = json.loads(figure.to_json())["data"]
    shown = next(t for t in traces if t["name"].startswith(plots.label("leave_one_out")))
    np.testing.assert_allclose(plotly_array(shown["y"]), curve, atol=ATOL)
    assert plotly_array(shown["y"])[0] == pytest.approx(ref["p"], abs=ATOL)
    assert ref["target"].strip() in status
