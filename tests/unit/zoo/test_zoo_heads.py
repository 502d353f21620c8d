"""`python -m scripts.zoo heads`: the probes of ALBERT's sentence order and ELECTRA's detection."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from models.registry.zoo_entries import zoo_folder
from models.zoo import data as zd
from models.zoo import families as zm
from models.zoo import scores as zs
from scripts.zoo import heads as H
from scripts.zoo.__main__ import main as run_zoo


def _tokenizer(family: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(zoo_folder(family))


def test_segments_are_the_pairs_two_sides_in_the_order_the_label_says():
    tok = _tokenizer("mini-albert")
    lines = ["The ship left the harbour at dawn.", "By noon the coast was gone.", "Then the wind rose."]
    ids = tok(lines, add_special_tokens=False)["input_ids"]
    examples = zd.Examples(tok, zd.make_chunks(["austen"] * 3, ids, 125), 128, 0)
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(40):
        pair, types, label = examples.pair(0, rng, "sop")
        a, b = H.segments(pair, types)
        whole = list(np.concatenate(ids))
        first, second = (a, b) if label == 0 else (b, a)  # label 1: swapped
        assert list(first) + list(second) == whole
        seen.add(label)
    assert seen == {0, 1}


def test_the_bag_of_words_model_is_antisymmetric_and_learns_a_planted_order():
    rng = np.random.default_rng(0)
    model = H.BagOfWordsOrder(50)
    with torch.no_grad():
        model.w.normal_()
        model.b.fill_(0.3)
    a, b = [rng.integers(0, 50, 7), rng.integers(0, 50, 4)], [rng.integers(0, 50, 5), rng.integers(0, 50, 9)]
    forward, swapped = model(a, b), model(b, a)
    assert torch.allclose(forward - 0.3, -(swapped - 0.3), atol=1e-6)

    def pairs(n, planted, seed):
        r = np.random.default_rng(seed)
        out = []
        for _ in range(n):
            first, second = r.integers(10, 50, 6), r.integers(10, 50, 6)
            if planted:  # the first segment holds token 3, the second token 4
                first[r.integers(6)], second[r.integers(6)] = 3, 4
            label = int(r.random() < 0.5)
            out.append((second, first, label) if label else (first, second, label))
        return out

    learnt, chosen = H.fit_bag_of_words(pairs(600, True, 1), 50)
    assert H.accuracy(learnt, pairs(400, True, 2)) > 0.95
    assert set(chosen["validation"]) == {1e-6, 1e-5, 1e-4, 1e-3}
    noise, _ = H.fit_bag_of_words(pairs(600, False, 1), 50)
    assert 0.4 < H.accuracy(noise, pairs(400, False, 2)) < 0.6  # nothing planted, nothing to find


def test_the_bag_of_words_fit_is_scikit_learns_logistic_regression():
    """The same L2-penalised objective as scikit-learn's LogisticRegression (C = 1 / (penalty *
    n): its C * sum(log-loss) + |w|^2 / 2 is n * C times ours), fitted to the same optimum."""
    from sklearn.linear_model import LogisticRegression

    r = np.random.default_rng(3)
    rows = []
    for _ in range(300):
        a, b = r.integers(0, 30, r.integers(3, 9)), r.integers(0, 30, r.integers(3, 9))
        label = int(r.random() < 0.5)
        if label:
            b = np.concatenate([b, [5]])  # a weak planted cue, and noise besides
        rows.append((a, b, label))
    penalty = 1e-2
    ours = H.logistic_fit(rows, 30, penalty, iterations=500)
    x = ours.features([q[0] for q in rows], [q[1] for q in rows]).to_dense().numpy()
    ref = LogisticRegression(C=1.0 / (penalty * len(rows)), tol=1e-10, max_iter=10_000).fit(x, [q[2] for q in rows])
    assert np.allclose(ours.w.detach().numpy(), ref.coef_[0], atol=2e-3)
    assert float(ours.b.detach()) == pytest.approx(float(ref.intercept_[0]), abs=2e-3)


def test_pair_accuracy_reads_the_chunks_it_is_given():
    tok = _tokenizer("mini-albert")
    lines = [f"Sentence number {i} of the story goes here." for i in range(400)]
    chunks = zd.make_chunks(["austen"] * 400, tok(lines, add_special_tokens=False)["input_ids"], 40)
    examples = zd.Examples(tok, chunks, 48, 0)
    examples.eval_idx = list(range(12))  # a held-out set of this size
    objective = zm.Objective("mini-albert", zm.build_models("mini-albert", tok, zm.Shape(layers=1, max_len=48)))
    whole = zs.pair_accuracy(objective, examples, "sop")
    assert zs.pair_accuracy(objective, examples, "sop", chunks=examples.eval_idx) == whole
    assert zs.pair_accuracy(objective, examples, "sop", chunks=[0, 5, 7])["pairs"] == 3


def test_fine_tuning_on_sop_alone_trains_the_head_and_reports_held_out_accuracy():
    tok = _tokenizer("mini-albert")
    lines = [f"Line {i} tells what happened next in the tale." for i in range(200)]
    chunks = zd.make_chunks(["austen"] * 200, tok(lines, add_special_tokens=False)["input_ids"], 40)
    examples = zd.Examples(tok, chunks, 48, 0)
    torch.manual_seed(0)
    objective = zm.Objective("mini-albert", zm.build_models("mini-albert", tok, zm.Shape(layers=1, max_len=48)))
    before = objective.model.sop_classifier.classifier.weight.clone()
    reports = []
    out = H.fine_tune_sop(objective, examples, list(range(len(chunks))), [0, 1, 2, 3], steps=3, lr=1e-3,
                          report=lambda *r: reports.append(r), every=2, batch=4)
    assert [r[0] for r in out] == [2, 3] and reports == out
    assert all(0.0 <= r[2] <= 1.0 and r[1] > 0 for r in out)
    assert not torch.equal(before, objective.model.sop_classifier.classifier.weight)


def test_uniform_replacements_flatten_only_electras_generator_and_are_undone():
    tok = _tokenizer("mini-electra")
    shape = zm.Shape(layers=2)
    models = H.electra_models(tok, shape, generator_layers=1)
    gen, disc = models["generator"], models["model"]
    assert len(gen.electra.encoder.layer) == 1 == gen.config.num_hidden_layers
    assert len(disc.electra.encoder.layer) == 2
    assert gen.electra.embeddings is disc.electra.embeddings  # still ELECTRA's shared embeddings
    hidden = torch.randn(3, gen.config.hidden_size)
    stock = zm.mlm_logits("mini-electra", gen, hidden)
    with H.uniform_replacements():
        flat = zm.mlm_logits("mini-electra", gen, hidden)
        assert torch.count_nonzero(flat) == 0 and zs.mlm_logits is zm.mlm_logits
        bert = zm.build_models("mini-bert", _tokenizer("mini-bert"), shape)["model"]
        h = torch.randn(2, bert.config.hidden_size)
        assert torch.count_nonzero(zm.mlm_logits("mini-bert", bert, h)) > 0  # other families untouched
    assert torch.equal(zm.mlm_logits("mini-electra", gen, hidden), stock)
    assert zs.mlm_logits is zm.mlm_logits and zm.mlm_logits.__name__ == "mlm_logits"


@pytest.mark.parametrize("uniform", [False, True])
def test_the_rtd_probe_trains_and_scores_a_changed_electra(tmp_path, uniform, capsys):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    lines = [f"austen\tThe {w} walked to the {v} and sat down by the window." for w in
             ("man", "girl", "dog", "cat", "king") for v in ("door", "sea", "house", "road")] * 30
    (corpus / "train_ordered.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    code = run_zoo(["heads", "rtd", "--corpus", str(corpus), "--work", str(tmp_path / "work"), "--tokens", "6000",
                    "--stop", "3000", "--generator-hidden", "64", "--generator-layers", "2"]
                    + (["--uniform"] if uniform else []))
    out = capsys.readouterr().out
    assert code == 0
    assert ("g64-l2-uniform" if uniform else "g64-l2:") in out and "roc_auc" in out
    assert (tmp_path / "work" / ("g64-l2-uniform.ckpt" if uniform else "g64-l2.ckpt")).is_file()


def test_write_reference_adds_the_order_models_accuracy_and_keeps_the_record(tmp_path):
    import json

    from models.registry.zoo_entries import recipe_of
    from models.zoo.cards import card

    record_path = tmp_path / "record.json"
    shipped = json.loads((zoo_folder("mini-albert") / "record.json").read_text(encoding="utf-8"))
    shipped.pop("pair_reference", None)
    record_path.write_text(json.dumps(shipped), encoding="utf-8")
    found = {"all": {"accuracy": 0.61, "pairs": 1090, "penalty": 1e-5},
             "running text": {"accuracy": 0.63, "pairs": 760, "penalty": 1e-5}}
    H.write_reference(record_path, found, 80_000)
    written = json.loads(record_path.read_text(encoding="utf-8"))
    assert {k: v for k, v in written.items() if k != "pair_reference"} == shipped
    ref = written["pair_reference"]
    assert (ref["accuracy"], ref["pairs"], ref["running_text_accuracy"], ref["running_text_pairs"]) == (0.61, 1090, 0.63, 760)
    assert "80,000 training pairs" in ref["model"] and ref["script"] == "scripts.zoo heads sop"
    text = card("mini-albert", written, recipe_of("mini-albert"))
    assert "on the same held-out pairs: 61.0% (63.0% of the 760 cut from running text)" in text
