"""fill-mask's body as CUDA graphs (models/runtime/cuda_graphs.py): padded shapes, the states
at the masks against transformers' own forward, fill-mask from text against the pipeline.

On the CPU the same buffers and shapes run eagerly (no capture); on a GPU (the GPU check runs
this file) each shape is a captured graph and the last test checks the replays themselves.
"""

from __future__ import annotations

import pytest
import torch

import models.mlm.fill_mask as fm
from models import fill_mask
from models.runtime import use_cuda_graphs
from models.runtime import cuda_graphs
from models.runtime.cuda_graphs import BATCHES, GraphedBody, bucket, lengths_for

TEXTS = ["The cat sat on the [MASK].",
         "She opened the [MASK], walked into the [MASK] and sat down at the table by the window.",
         "[MASK] is the capital of France."]


def _tolerance(loaded) -> float:
    return 1e-5 if loaded.dtype == torch.float32 else 2e-2


def _encoded(loaded, texts):
    return [fm.encode_masks(loaded, t, fm.mask_spans(t)) for t in texts]


@pytest.fixture
def graphed(mlm_loaded, monkeypatch):
    """A fresh GraphedBody for the session's model, the one fill-mask's path then uses."""
    body = mlm_loaded.model.base_model
    fresh = GraphedBody(body)
    monkeypatch.setitem(cuda_graphs._bodies, body, fresh)
    return fresh


def test_the_graphs_stay_off_the_model_and_go_with_it():
    """Views and tests deep-copy models (a CUDA graph cannot be copied), and a model the cache
    lets go takes its graphs with it."""
    import copy
    import gc
    import weakref

    from transformers import BertConfig, BertModel

    body = BertModel(BertConfig(vocab_size=50, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                intermediate_size=16, max_position_embeddings=64)).eval()
    graphed = cuda_graphs.graphed_body(body)
    assert cuda_graphs.graphed_body(body) is graphed
    ids = torch.tensor([[2, 5, 7]])
    assert graphed.states_at({"input_ids": ids, "attention_mask": torch.ones_like(ids)},
                             torch.tensor([0]), torch.tensor([1]), 0).shape == (1, 8)
    assert not any(isinstance(v, GraphedBody) for m in copy.deepcopy(body).modules() for v in vars(m).values())
    alive, count = weakref.ref(body), len(cuda_graphs._bodies)
    del body, graphed
    gc.collect()
    assert alive() is None and len(cuda_graphs._bodies) == count - 1


def test_lengths_are_powers_of_two_up_to_the_models_positions(mlm_loaded):
    body = mlm_loaded.model.base_model
    assert body.config.max_position_embeddings == 512
    assert lengths_for(body) == (16, 32, 64, 128, 256, 512)
    assert [bucket(n, (16, 32, 64)) for n in (1, 16, 17, 64, 65)] == [16, 16, 32, 64, None]


def test_states_at_the_masks_are_transformers_own_for_a_padded_batch(mlm_loaded, graphed):
    """Three texts of unequal lengths, padded to 4 rows x 32 tokens: each text's masked states
    are those of transformers' forward of that text alone, unpadded."""
    encoded = _encoded(mlm_loaded, TEXTS)
    inputs = {name: fm._pad_right(mlm_loaded, encoded, name) for name in encoded[0].inputs}
    assert inputs["input_ids"].shape[1] <= 32
    rows = torch.tensor([b for b, enc in enumerate(encoded) for _ in enc.positions])
    cols = torch.tensor([p for enc in encoded for p in enc.positions])
    got = graphed.states_at(inputs, rows, cols, mlm_loaded.tokenizer.pad_token_id)
    assert list(graphed.shapes) == [(4, 32)]
    want = []
    with torch.inference_mode():
        for enc in encoded:
            states = mlm_loaded.model.base_model(**{k: v.to(mlm_loaded.device) for k, v in enc.inputs.items()})
            want.append(states.last_hidden_state[0, enc.positions])
    torch.testing.assert_close(got.float(), torch.cat(want).float(), atol=_tolerance(mlm_loaded), rtol=0)


def test_each_shape_is_made_once_and_what_no_shape_holds_is_refused(mlm_loaded, graphed, monkeypatch):
    pad = mlm_loaded.tokenizer.pad_token_id

    def call(batch, tokens):
        ids = torch.full((batch, tokens), 1000)
        inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
        return graphed.states_at(inputs, torch.tensor([0]), torch.tensor([1]), pad)

    assert call(1, 10) is not None and call(1, 16) is not None  # both in (1, 16)
    assert call(3, 40) is not None  # (4, 64)
    assert sorted(graphed.shapes) == [(1, 16), (4, 64)]
    assert call(BATCHES[-1] + 1, 10) is None  # more texts than any shape
    assert call(1, 513) is None  # more tokens than the positions
    monkeypatch.setattr(cuda_graphs, "MAX_GRAPHS", 2)
    assert call(2, 10) is None  # a new shape past the limit: transformers' forward
    assert sorted(graphed.shapes) == [(1, 16), (4, 64)]


def test_fill_mask_from_text_through_the_graphed_body_gives_the_pipelines_answers(mlm_key, mlm_loaded, graphed,
                                                                                   monkeypatch):
    """The user's path: typed text with [MASK]s through ``fill_mask``; its body is the
    GraphedBody's (a replay on a GPU, its buffers run eagerly on the CPU)."""
    from transformers import pipeline

    if mlm_loaded.device.type != "cuda":  # the CPU's own path (packed) aside, this one as on a GPU
        monkeypatch.setattr(fm, "packs", lambda loaded: False)
        monkeypatch.setattr(fm, "uses_cuda_graphs", lambda loaded: fm._bert_mlm(loaded.model))
    pipe = pipeline("fill-mask", model=mlm_loaded.model, tokenizer=mlm_loaded.tokenizer, device=mlm_loaded.device)
    for text in TEXTS:
        ours = fill_mask(mlm_key, text, top_k=5)
        ref = pipe(text.replace("[MASK]", mlm_loaded.tokenizer.mask_token), top_k=5)
        ref = [ref] if isinstance(ref[0], dict) else ref
        for mask, expected in zip(ours.masks, ref, strict=True):
            if mlm_loaded.dtype == torch.float32:
                assert [p.token_id for p in mask.predictions] == [e["token"] for e in expected]
                assert [p.score for p in mask.predictions] == pytest.approx([e["score"] for e in expected], abs=1e-5)
            else:
                assert mask.predictions[0].score == pytest.approx(expected[0]["score"], abs=2e-3)
    assert graphed.served == len(TEXTS) and graphed.shapes  # every answer came through it


def test_switched_off_or_hooked_the_model_takes_transformers_forward(mlm_loaded, graphed, monkeypatch):
    if mlm_loaded.device.type != "cuda":
        pytest.skip("graphs are for a CUDA device: on the CPU fill-mask packs the body")
    assert fm.uses_cuda_graphs(mlm_loaded) and "CUDA graphs" in fm.forward_path(mlm_loaded)
    previous = use_cuda_graphs(False)
    try:
        assert not fm.uses_cuda_graphs(mlm_loaded)
    finally:
        use_cuda_graphs(previous)
    handle = mlm_loaded.model.cls.register_forward_hook(lambda *a: None)
    try:
        assert not fm.uses_cuda_graphs(mlm_loaded)
    finally:
        handle.remove()


def test_on_a_gpu_each_shape_is_a_captured_graph_and_its_replays_track_new_input(mlm_key, mlm_loaded, graphed):
    """Real capture: each batch's logits at the masks, replayed with that batch's tokens (not
    the captured ones), are transformers' forward's (graphs off) within half precision."""
    if mlm_loaded.device.type != "cuda":
        pytest.skip("CUDA graphs need a CUDA device")
    batches = [_encoded(mlm_loaded, texts) for texts in (TEXTS[:1], TEXTS[2:], TEXTS, TEXTS[::-1])]
    replayed = [fm._forward_batch([(mlm_loaded, enc) for enc in batch]) for batch in batches]
    assert graphed.failed is None and graphed.served == len(batches)
    assert sorted(graphed.shapes) == [(1, 16), (4, 32)]  # two texts' shapes met twice each
    assert all(shape.graph is not None for shape in graphed.shapes.values())
    previous = use_cuda_graphs(False)
    try:
        plain = [fm._forward_batch([(mlm_loaded, enc) for enc in batch]) for batch in batches]
    finally:
        use_cuda_graphs(previous)
    assert graphed.served == len(batches)
    for got, want in zip(replayed, plain, strict=True):
        for a, b in zip(got, want, strict=True):
            torch.testing.assert_close(a, b, atol=2e-2, rtol=0)
