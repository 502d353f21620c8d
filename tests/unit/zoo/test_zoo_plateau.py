"""`python -m scripts.zoo plateau`: each named change does what it says to the real transformers model,
and a short run trains through the zoo's trainer and returns its held-out curve."""

from __future__ import annotations

import pytest
import torch

from models.zoo import families as zm
from models.zoo import train as Z
from scripts.zoo import plateau as P

from models.registry.zoo_entries import zoo_folder


def _tokenizer(family: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(zoo_folder(family))


def _shape(tok) -> zm.Shape:
    return zm.Shape(layers=2, hidden=32, heads=2, ffn=64, vocab=len(tok), max_len=64, albert_embedding=16,
                    electra_embedding=16, electra_generator_hidden=8, modernbert_window=8)


def _attentions(model, tok, text: str):
    enc = tok(text, return_tensors="pt")
    model.eval()
    model.set_attn_implementation("eager")
    with torch.no_grad():
        return model(**enc, output_attentions=True).attentions, enc["input_ids"].shape[1]


def test_nope_leaves_a_position_blind_bert():
    tok = _tokenizer("mini-bert")
    model = P.build("mini-bert", "nope", tok, _shape(tok), dropout=0.0)["model"]
    table = model.bert.embeddings.position_embeddings.weight
    assert not table.requires_grad and float(table.abs().max()) == 0.0
    # position-blind: a word's output does not depend on where the others stand
    a = tok("cat dog bird fish", return_tensors="pt")["input_ids"]
    b = a[:, [0, 2, 1, 4, 3, 5]]  # [CLS] dog cat fish bird [SEP]
    model.eval()
    with torch.no_grad():
        ha = model.bert(input_ids=a).last_hidden_state[0]
        hb = model.bert(input_ids=b).last_hidden_state[0]
    assert torch.allclose(ha[1], hb[2], atol=1e-5) and torch.allclose(ha[3], hb[4], atol=1e-5)


def test_mimetic_ties_keys_to_queries_and_each_token_attends_to_itself_first():
    tok = _tokenizer("mini-bert")
    model = P.build("mini-bert", "sinusoidal-mimetic", tok, zm.Shape(), dropout=0.0)["model"]  # the zoo's shape
    for layer in model.bert.encoder.layer:
        assert torch.equal(layer.attention.self.key.weight, layer.attention.self.query.weight)
    attentions, n = _attentions(model, tok, "the river bank was muddy after the long rain")
    first = attentions[0][0]  # (heads, T, T)
    diagonal = torch.diagonal(first, dim1=-2, dim2=-1)
    assert float(diagonal.mean()) > 2.0 / n  # well above a uniform row's 1/T
    base = P.build("mini-bert", "base", tok, zm.Shape(), dropout=0.0)["model"]
    base_first = _attentions(base, tok, "the river bank was muddy after the long rain")[0][0][0]
    assert float(diagonal.mean()) > float(torch.diagonal(base_first, dim1=-2, dim2=-1).mean())


def test_absolute_deberta_has_a_position_table_and_no_relative_attention():
    tok = _tokenizer("mini-deberta")
    relative = P.build("mini-deberta", "base", tok, _shape(tok), dropout=0.0)["model"]
    absolute = P.build("mini-deberta", "absolute", tok, _shape(tok), dropout=0.0)["model"]
    names = {n for n, _ in absolute.named_parameters()}
    assert "deberta.embeddings.position_embeddings.weight" in names
    assert not any("rel_embeddings" in n for n in names)
    assert any("rel_embeddings" in n for n, _ in relative.named_parameters())
    # the input now depends on where a token stands: the same word at two places differs at layer 0
    enc = tok("bank bank", return_tensors="pt")
    absolute.eval()
    with torch.no_grad():
        emb = absolute.deberta.embeddings(input_ids=enc["input_ids"], mask=enc["attention_mask"])
    assert not torch.allclose(emb[0, 1], emb[0, 2], atol=1e-4)


def test_unknown_variant_and_absolute_outside_deberta_are_refused():
    tok = _tokenizer("mini-bert")
    with pytest.raises(SystemExit, match="unknown variant"):
        P.build("mini-bert", "relative", tok, _shape(tok), dropout=0.0)
    with pytest.raises(SystemExit, match="DeBERTa"):
        P.build("mini-bert", "absolute", tok, _shape(tok), dropout=0.0)


def test_a_short_run_returns_its_curve_and_puts_the_masking_back(tmp_path):
    corpus = tmp_path / "train_ordered.tsv"
    lines = [f"src{k % 3}\tThe {w} sat on the mat near the river bank, and the boats went by slowly."
             for k, w in enumerate(["cat", "dog", "bird", "man", "child", "teacher"] * 6)]
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tok = _tokenizer("mini-bert")
    seen = []
    original = Z.masking_policy
    curve = P.train_variant("mini-bert", "mask40", tokens=1500, batch_size=4, lr=1e-3, dropout=0.0, layers=2,
                            max_len=64, evals=2, eval_sentences=8, corpus=corpus, shape=_shape(tok), log=seen.append)
    assert Z.masking_policy is original
    assert len(curve) == 2 and len(seen) == 2
    assert curve[0]["tokens"] < curve[1]["tokens"]
    assert all(0.0 <= point["word_top1"] <= 1.0 and point["piece_loss"] > 0 for point in curve)


def _offset_weight(attentions, n: int, head: int, k: int) -> float:
    a = attentions[0][0][head]
    i = torch.arange(n)
    idx = i[(i + k >= 0) & (i + k < n)]
    return float(a[idx, idx + k].mean())


def test_sinusoidal_local_sets_heads_zero_and_one_to_look_back_and_ahead():
    """The hand-set version of the locality start (the zoo's own is tested in test_locality)."""
    tok = _tokenizer("mini-bert")
    text = "the river bank was muddy after the long rain and the boats stayed on the shore"
    model = P.build("mini-bert", "sinusoidal-local", tok, zm.Shape(), dropout=0.0)["model"]
    attentions, n = _attentions(model, tok, text)
    assert _offset_weight(attentions, n, 0, -1) > 5 / n and _offset_weight(attentions, n, 1, 1) > 5 / n
    control = P.build("mini-bert", "sinusoidal-x2", tok, zm.Shape(), dropout=0.0)["model"]
    attentions, n = _attentions(control, tok, text)
    assert _offset_weight(attentions, n, 0, -1) < 2 / n  # the same table without the heads: no offset


def test_the_albert_and_electra_diagnostics_change_what_they_name():
    tok = _tokenizer("mini-albert")
    unshared = P.build("mini-albert", "local-unshared", tok, zm.Shape(), dropout=0.0)["model"]
    assert unshared.config.num_hidden_groups == unshared.config.num_hidden_layers == 4
    assert len(unshared.albert.encoder.albert_layer_groups) == 4
    wide = P.build("mini-albert", "local-wide-embedding", tok, zm.Shape(), dropout=0.0)["model"]
    assert wide.albert.embeddings.word_embeddings.weight.shape[1] == 128
    path = P.build("mini-albert", "local-bert-embedding-path", tok, zm.Shape(), dropout=0.0)["model"]
    mapping = path.albert.encoder.embedding_hidden_mapping_in
    assert torch.equal(mapping.weight, torch.eye(128)) and float(mapping.bias.abs().max()) == 0.0
    stacked = P.build("mini-albert", "local-stacked-identity", tok, zm.Shape(), dropout=0.0)["model"]
    weight = stacked.albert.encoder.embedding_hidden_mapping_in.weight  # (128, 64): [I; I]
    assert torch.equal(weight[:64], torch.eye(64)) and torch.equal(weight[64:], torch.eye(64))
    one = P.build("mini-albert", "local-start-one", tok, zm.Shape(), dropout=0.0)["model"]
    attentions, n = _attentions(one, tok, "the river bank was muddy after the long rain")
    assert _offset_weight(attentions, n, 0, -1) > 4 / n and _offset_weight(attentions, n, 1, 1) < 2 / n
    for family in ("mini-albert", "mini-electra"):
        tok = _tokenizer(family)
        models = P.build(family, "local-unit-projection", tok, zm.Shape(), dropout=0.0)
        seen = []
        model = models["model"]
        first = next(m for m in model.modules() if isinstance(getattr(m, "query", None), torch.nn.Linear))
        hook = first.query.register_forward_pre_hook(lambda mod, args: seen.append(args[0]))
        model.eval()
        with torch.no_grad():
            model(**tok(["the river bank was muddy after the long rain"], return_tensors="pt"))
        hook.remove()
        assert 0.8 < float(seen[0].std()) < 1.25  # unit-scale input to the first layer (N(0, 0.02): ~0.16)
