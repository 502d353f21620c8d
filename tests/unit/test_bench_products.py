"""The benches' floor: ``bench_common.record_products`` notes a call's weight products (the
op, the weights it read, its activations' shapes) and ``Products`` replays them alone."""

from __future__ import annotations

import torch

from bench.bench_common import Products, record_products
from helpers import ENCODER_KEY, MLM_KEY
from models import get_spec


def _activations(call) -> list[tuple]:
    return [a for a in call[1] if isinstance(a, tuple) and a[:1] == ("activation",)]


def test_a_recorded_product_replayed_on_the_real_input_gives_the_layers_output():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4, bias=False))
    x = torch.randn(3, 8)
    with torch.inference_mode():
        out, products = record_products(lambda: model(x), model)
    assert len(products) == 2 and products.parts() == [range(0, 2)]
    assert [_activations(c)[0][1] for c in products.calls] == [(3, 8), (3, 16)]  # one activation each
    first = products.prepared([0])[0]
    op, args, kwargs = first
    # the weight is the layer's own (not copied), the activation a buffer of the input's shape
    weight = next(a for a in args if isinstance(a, torch.Tensor) and a.shape in ((16, 8), (8, 16)))
    assert weight.untyped_storage().data_ptr() == model[0].weight.untyped_storage().data_ptr()
    real = tuple(x if isinstance(a, torch.Tensor) and a.shape == (3, 8) else a for a in args)
    with torch.inference_mode():
        torch.testing.assert_close(op(*real, **kwargs), model[0](x))
        Products.run(products.prepared())  # the whole replay runs on its buffers
    assert out.shape == (3, 4)


def test_fill_mask_products_are_the_bodys_and_the_heads_with_the_last_layer_at_the_mask():
    from models import fill_mask, load_model

    loaded = load_model(get_spec(MLM_KEY), head="mlm")
    text = "The cat sat on the [MASK] by the door."
    fill_mask(MLM_KEY, text)  # the path's weights prepacked before recording
    n_tokens = len(loaded.tokenizer(text.replace("[MASK]", loaded.tokenizer.mask_token))["input_ids"])
    result, products = record_products(lambda: fill_mask(MLM_KEY, text), loaded.model)
    assert result.masks[0].predictions == fill_mask(MLM_KEY, text).masks[0].predictions
    config = loaded.model.config
    layers, d, vocab = config.num_hidden_layers, config.hidden_size, config.vocab_size
    assert len(products) == 6 * layers + 2  # q, k, v, output, intermediate, output a layer; the head's two
    rows = [_activations(c)[0][1][0] for c in products.calls]
    body_rows = rows[: 6 * (layers - 1)]
    assert set(body_rows) == {n_tokens}  # every layer but the last on every token
    assert sorted(rows[6 * (layers - 1): 6 * layers]) == [1, 1, 1, 1, n_tokens, n_tokens]  # keys, values: all
    assert rows[-2] == 1  # the head's transform at the one mask
    # the vocabulary product at the one mask: x @ W.T on a (1, d) row, except on AMD CPUs, where
    # it is W @ x.T with the row padded by a zero row to two columns (models/mlm/masked_head.py, project)
    from models.runtime.cpu import cpu_vendor

    shape = (d, 2) if cpu_vendor() == "AuthenticAMD" else (1, d)
    assert _activations(products.calls[-1])[0][1] == shape
    decoder = loaded.model.get_output_embeddings().weight
    assert any(isinstance(a, torch.Tensor) and a.untyped_storage().data_ptr() == decoder.untyped_storage().data_ptr()
               for a in products.calls[-1][1])
    assert decoder.shape == (vocab, d)


def test_embed_products_come_in_one_part_per_batch_on_the_real_tokens_only():
    from models import embed, load_model
    from models.embeddings.pooling import encode_unpadded

    loaded = load_model(get_spec(ENCODER_KEY))
    sentences = ["A short one.", "The whale dived under the ship and the sailors cried out in fear.",
                 "Two words", "An encoder reads the whole sentence, left and right, before it decides."] * 8
    lengths = [len(ids) for ids in encode_unpadded(loaded, sentences)["input_ids"]]
    embed(ENCODER_KEY, sentences)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # every batch on this thread, as the bench records
    try:
        vectors, products = record_products(lambda: embed(ENCODER_KEY, sentences), loaded.model)
    finally:
        torch.set_num_threads(threads)
    torch.testing.assert_close(torch.from_numpy(vectors), torch.from_numpy(embed(ENCODER_KEY, sentences)))
    layers = loaded.model.config.num_hidden_layers
    parts = products.parts()
    assert len(parts) >= 2 and all(len(part) == 6 * layers for part in parts)
    # each batch's first product (a query) reads its real tokens only: together, every token once
    assert sum(_activations(products.calls[part.start])[0][1][0] for part in parts) == sum(lengths)
