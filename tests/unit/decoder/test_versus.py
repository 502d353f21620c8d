"""encoder_vs_decoder: its rows recomputed here from the two models, apart from the core.

References: transformers' AutoModelForCausalLM (its own shifted loss) and AutoModelForMaskedLM
run one sentence (or one prefix) at a time on the shipped folders, scikit-learn's ROC AUC, the
task files' labels, and the two training records.
"""

from __future__ import annotations

import json
import re
from collections import Counter

import numpy as np
import pytest
import torch
from sklearn.metrics import roc_auc_score
from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer

from models import InputError, encoder_vs_decoder
from models.embeddings.sentence_encoder import synset_groups
from models.registry.zoo_entries import zoo_folder
from models.tasks.task_data import load_task
from models.zoo.data import heldout_splits
from models.zoo.scores import chosen_words

N = 50


@pytest.fixture(scope="module")
def table():
    return encoder_vs_decoder("mini-modernbert", "mini-decoder", sentences=N)


@pytest.fixture(scope="module")
def pair():
    tok = AutoTokenizer.from_pretrained(zoo_folder("mini-modernbert"))
    enc = AutoModelForMaskedLM.from_pretrained(zoo_folder("mini-modernbert"), dtype=torch.float32).eval()
    dec = AutoModelForCausalLM.from_pretrained(zoo_folder("mini-decoder"), dtype=torch.float32).eval()
    return tok, enc, dec


def test_the_table_has_at_least_five_measured_rows(table):
    measured = [r for r in table.rows if r.baseline is not None]
    assert len(measured) >= 5 and table.sentences == N
    assert {r.task for r in table.rows} >= {"next piece", "blank filling", "similarity", "training speed",
                                            "training FLOPs"}
    assert sum(r.task.startswith("probe: ") for r in table.rows) >= 2


@torch.no_grad()
def test_next_piece_rows_recomputed(table, pair):
    tok, enc, dec = pair
    texts = heldout_splits()[1][:N]
    d_sum = e_sum = 0.0
    pieces = 0
    for text in texts:
        ids = tok(text, return_tensors="pt", truncation=True, max_length=128)["input_ids"]
        labels = ids.clone()
        labels[0, 0] = labels[0, -1] = -100  # [CLS] is never predicted, [SEP] is not a piece of the text
        n = int((labels != -100).sum())
        d_sum += float(dec(input_ids=ids, labels=labels).loss) * n  # transformers shifts the labels itself
        for t in range(1, ids.shape[1] - 1):  # the encoder: [CLS] left [MASK] [SEP], one prefix at a time
            x = torch.cat([ids[0, :t], torch.tensor([tok.mask_token_id, tok.sep_token_id])])[None]
            e_sum += float(torch.nn.functional.cross_entropy(enc(input_ids=x).logits[0, t], ids[0, t]))
        pieces += n
    row = table.row("next piece")
    assert row.decoder == pytest.approx(d_sum / pieces, abs=2e-4)
    assert row.encoder == pytest.approx(e_sum / pieces, abs=2e-4)


@torch.no_grad()
def test_blank_filling_row_recomputed(table, pair):
    tok, enc, dec = pair
    texts = heldout_splits()[1][:N]
    e_right = d_right = total = 0
    for text, spans in zip(texts, chosen_words(texts)):
        enc_in = tok(text, return_tensors="pt", return_offsets_mapping=True, truncation=True, max_length=128)
        ids, offsets = enc_in["input_ids"], enc_in["offset_mapping"][0]
        d_logits = dec(input_ids=ids).logits[0]
        words = [[t for t in range(1, ids.shape[1] - 1) if offsets[t, 0] < e and offsets[t, 1] > s] for s, e in spans]
        masked = ids.clone()  # the sentence's chosen words all masked at once, as the zoo's score does
        masked[0, [t for w in words for t in w]] = tok.mask_token_id
        e_guess = enc(input_ids=masked).logits[0].argmax(-1)
        for where in filter(None, words):
            e_right += all(int(e_guess[t]) == int(ids[0, t]) for t in where)
            d_right += all(int(d_logits[t - 1].argmax()) == int(ids[0, t]) for t in where)
            total += 1
    row = table.row("blank filling")
    assert row.encoder == pytest.approx(e_right / total) and row.decoder == pytest.approx(d_right / total)


def test_word_frequency_baselines_come_from_the_decoders_training_counts(table, pair):
    """The decoder's folder ships how often each piece occurred in its training chunks; both
    baselines are recomputed here from that file, one sentence at a time."""
    tok = pair[0]
    counts = np.load(zoo_folder("mini-decoder") / "piece_counts.npy").astype(np.float64)
    assert counts.shape == (len(tok),) and counts.sum() > 0
    logp = np.log((counts + 1.0) / (counts.sum() + len(counts)))  # add-one smoothed frequencies
    best = int(np.argmax(counts))
    texts = heldout_splits()[1][:N]
    pieces, right, words = [], 0, 0
    for text, spans in zip(texts, chosen_words(texts)):
        enc_in = tok(text, return_offsets_mapping=True, truncation=True, max_length=128)
        ids, offsets = enc_in["input_ids"], enc_in["offset_mapping"]
        pieces += ids[1:-1]  # every piece of the sentence, [CLS] and [SEP] aside
        for s, e in spans:
            where = [t for t in range(1, len(ids) - 1) if offsets[t][0] < e and offsets[t][1] > s]
            if where:
                right += all(ids[t] == best for t in where)
                words += 1
    assert table.row("next piece").baseline == pytest.approx(float(-logp[pieces].mean()), abs=1e-9)
    assert table.row("blank filling").baseline == pytest.approx(right / words)


def test_probe_baselines_are_the_majority_class(table):
    for task in ("source", "supersense"):
        data = load_task(task)
        label = Counter(data.train_labels).most_common(1)[0][0]
        row = table.row(f"probe: {task}")
        assert row.baseline == pytest.approx(float(np.mean(np.asarray(data.validation_labels) == label)))
        assert 0.0 <= row.decoder <= 1.0 and 0.0 <= row.encoder <= 1.0


def test_similarity_baseline_is_bag_of_words(table):
    data = synset_groups("validation")
    bags = [Counter(re.findall(r"[a-z]+", t.lower())) for t in data.sentences]
    words = sorted({w for b in bags for w in b})
    m = np.array([[b[w] for w in words] for b in bags], dtype=float)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    i, j = np.triu_indices(len(bags), 1)
    same = np.asarray(data.group)[i] == np.asarray(data.group)[j]
    # the core's cosines are float32, these float64: a few near-equal pairs may rank the other way
    assert table.row("similarity").baseline == pytest.approx(roc_auc_score(same, (m @ m.T)[i, j]), abs=1e-4)


def test_cost_rows_are_the_records(table):
    for key, side in (("mini-modernbert", "encoder"), ("mini-decoder", "decoder")):
        record = json.loads((zoo_folder(key) / "record.json").read_text(encoding="utf-8"))
        assert getattr(table.row("training speed"), side) == pytest.approx(record["tokens_per_s"])
        assert getattr(table.row("training FLOPs"), side) == pytest.approx(record["flops_per_token"])
        precision = "bfloat16 autocast" if record["config"]["autocast"] == "bf16" else "float32"
        assert f"{key} in {precision}" in table.row("training speed").how
    autocasts = {json.loads((zoo_folder(k) / "record.json").read_text(encoding="utf-8"))["config"]["autocast"]
                 for k in ("mini-modernbert", "mini-decoder")}
    assert ("not a like-for-like comparison" in table.row("training speed").how) == (len(autocasts) > 1)


def test_an_unmatched_pair_is_refused():
    with pytest.raises(InputError, match="different vocabularies"):
        encoder_vs_decoder("mini-bert", "mini-decoder")
    with pytest.raises(InputError, match="sentences"):
        encoder_vs_decoder(sentences=3)


def test_a_shipped_table_is_read_back_only_for_its_weights_and_size(table, tmp_path):
    """``write_shipped_table`` keeps the table with both models' weight digests; Lesson 1's
    ``measure=False`` reads it back only for those weights and that many sentences."""
    from dataclasses import replace

    from models import get_spec
    from models.decoder.versus import SHIPPED_TABLE, shipped_table, write_shipped_table

    enc, dec = get_spec("mini-modernbert"), replace(get_spec("mini-decoder"), source=str(tmp_path))
    path = write_shipped_table(table, enc, dec)
    assert path == tmp_path / SHIPPED_TABLE
    assert shipped_table(enc, dec, N) == table
    assert shipped_table(enc, dec, N + 1) is None
    data = json.loads(path.read_text(encoding="utf-8"))
    data["weights"][1] = "0" * 64  # other decoder weights
    path.write_text(json.dumps(data), encoding="utf-8")
    assert shipped_table(enc, dec, N) is None


def test_the_shipped_table_is_what_measuring_gives(monkeypatch):
    """The table shipped beside the decoder (when there is one) is the one measured now."""
    from models.decoder.versus import SHIPPED_TABLE

    path = zoo_folder("mini-decoder") / SHIPPED_TABLE
    if not path.is_file():
        pytest.skip("no table shipped beside this decoder (the test zoo's)")
    monkeypatch.setenv("ENCODER_LAB_KEEP_RUNS", "0")
    shipped = json.loads(path.read_text(encoding="utf-8"))["table"]
    lesson = encoder_vs_decoder(sentences=shipped["sentences"], measure=False)
    measured = encoder_vs_decoder(sentences=shipped["sentences"], measure=True)
    assert lesson is not None and [r.task for r in lesson.rows] == [r.task for r in measured.rows]
    for shown, now in zip(lesson.rows, measured.rows):  # another CPU's kernels may move the last digits
        for side in ("encoder", "decoder", "baseline"):
            if getattr(now, side) is None:  # a row without a baseline (the training rows)
                assert getattr(shown, side) is None, (now.task, side)
                continue
            assert getattr(shown, side) == pytest.approx(getattr(now, side), rel=1e-3, abs=5e-3), (now.task, side)
