"""models/zoo/pairs.py: NSP / SOP pairs with negatives of the same source, and a student's
single-sentence pairs; the heads' accuracy on them against transformers' own logits."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from models.registry.zoo_entries import zoo_folder
from models.zoo import data as zd
from models.zoo import families as zm
from models.zoo import pairs as zp


@pytest.fixture(scope="module")
def corpus():
    """Three sources of numbered sentences, each sentence one chunk's worth with its source in
    its words, so any piece of B names the source and chunk it came from."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(zoo_folder("mini-bert"))
    chunks, names = [], []
    for src in ("austen", "sotu", "gcide"):
        ids = tok([f"{src} line {i} end" for i in range(600)], add_special_tokens=False)["input_ids"]
        for start in range(0, 600, 3):  # three sentences a chunk
            chunks.append([np.asarray(x, dtype=np.int64) for x in ids[start : start + 3]])
            names.append(src)
    examples = zd.Examples(tok, chunks, 64, 0)
    return tok, examples, zp.pair_split(examples, names), names


def _b_chunk(tok, examples, ids, types) -> tuple[str, int]:
    """(source, line number) of B's first sentence, read back from its text."""
    first_b = int(np.argmax(types))
    words = tok.decode(ids[first_b:-1]).split()
    return words[0], int(words[2])


def _chunk_of(examples, names, source: str, line: int) -> int:
    """Each source's chunks are consecutive, three of its lines each."""
    return names.index(source) + line // 3


@pytest.mark.parametrize("single", [False, True])
@pytest.mark.parametrize("negatives", zp.NEGATIVES)
@pytest.mark.parametrize("pool", ["train", "heldout"])
def test_a_negative_b_comes_from_the_source_and_split_asked_for(corpus, single, negatives, pool):
    tok, examples, split, names = corpus
    rng = np.random.default_rng(0)
    held = set(examples.eval_idx)
    for i in split.narrative("heldout") + split.narrative("train")[:20]:
        if pool == "heldout" and negatives == "same-source" and len(split.heldout[names[i]]) < 2:
            continue
        ids, types, label = zp.make_pair(examples, split, i, rng, "nsp", negatives=negatives, single=single,
                                         pool=pool, label=1)
        source, line = _b_chunk(tok, examples, ids, types)
        assert (source == names[i]) == (negatives == "same-source")
        assert (_chunk_of(examples, names, source, line) in held) == (pool == "heldout")
        assert _chunk_of(examples, names, source, line) != i


def test_the_held_out_chunks_are_examples_own_and_disjoint_from_training(corpus):
    _, examples, split, _ = corpus
    train, held = set(split.everything("train")), set(split.everything("heldout"))
    assert held and train and not train & held
    assert held <= set(examples.eval_idx) and train <= set(examples.train_idx)
    assert set(split.narrative("heldout")) == {i for i in held if split.names[i] in zp.NARRATIVE}


def test_a_students_positive_pair_is_two_neighbouring_sentences_of_its_chunk(corpus):
    tok, examples, split, names = corpus
    rng = np.random.default_rng(1)
    for i in split.narrative("train")[:30]:
        ids, types, label = zp.make_pair(examples, split, i, rng, "nsp", single=True, label=0)
        first_b = int(np.argmax(types))
        a, b = tok.decode(ids[1 : first_b - 1]).split(), tok.decode(ids[first_b:-1]).split()
        assert a[0] == b[0] == names[i] and int(b[2]) == int(a[2]) + 1 and len(a) == len(b) == 4
        ids, types, label = zp.make_pair(examples, split, i, rng, "sop", single=True, label=1)
        first_b = int(np.argmax(types))
        swapped_a, swapped_b = tok.decode(ids[1 : first_b - 1]).split(), tok.decode(ids[first_b:-1]).split()
        assert int(swapped_a[2]) == int(swapped_b[2]) + 1  # SOP's label 1: the later sentence first


def test_head_accuracy_is_bert_for_pretrainings_own_verdict(corpus):
    """The share of pairs whose argmax of transformers' ``seq_relationship_logits`` is the label."""
    tok, examples, split, _ = corpus
    torch.manual_seed(0)
    models = zm.build_models("mini-bert", tok, zm.Shape(layers=1, max_len=64))
    objective = zm.Objective("mini-bert", models)
    with torch.no_grad():  # a head with a verdict that varies from pair to pair
        models["model"].cls.seq_relationship.weight.normal_(0, 2.0)
    out = zp.head_accuracy(objective, examples, split, single=True)
    rng = np.random.default_rng(1234)
    right = 0
    chunks = [i for i in split.narrative("heldout") if len(split.heldout[split.names[i]]) > 1]
    for i in chunks:
        ids, types, label = zp.make_pair(examples, split, i, rng, "nsp", single=True, pool="heldout")
        with torch.no_grad():
            pred = models["model"](input_ids=torch.tensor([ids]), token_type_ids=torch.tensor([types]))
        logits = pred.seq_relationship_logits
        right += int(int(logits.argmax(-1)) == label)
    assert out["pairs"] == len(chunks) > 0
    assert out["accuracy"] == pytest.approx(right / out["pairs"])


def test_sentence_end_shares_count_the_bs_whose_text_ends_a_sentence(corpus):
    tok, examples, split, _ = corpus
    end = tok.convert_tokens_to_ids("end")

    def by_text(seed):
        rng = np.random.default_rng(seed)
        found = {0: [], 1: []}
        for i in split.narrative("heldout"):
            if len(split.heldout[split.names[i]]) > 1:
                ids, types, label = zp.make_pair(examples, split, i, rng, "nsp", negatives="another-source",
                                                 pool="heldout")
                found[label].append(tok.decode(ids[int(np.argmax(types)):-1]).split()[-1] == "end")
        return found

    seed = next(s for s in range(50) if all(by_text(s).values()))  # a draw with pairs of both labels
    found = by_text(seed)
    got = zp.sentence_end_shares(examples, split, {end}, seed=seed)
    assert got == {"positives": pytest.approx(np.mean(found[0])), "negatives": pytest.approx(np.mean(found[1]))}
    assert got["positives"] == 1.0  # a positive B is the rest of its chunk: whole sentences


def test_a_same_source_negative_b_is_as_many_whole_sentences_as_the_positive_b(corpus):
    """Cut as in training, a same-source negative's B is consecutive whole sentences of another
    chunk, as many as the positive B would have had: both end a sentence."""
    tok, examples, split, names = corpus
    for i in split.narrative("heldout"):
        if len(split.heldout[names[i]]) < 2:
            continue
        for seed in range(5):
            pos = zp.make_pair(examples, split, i, np.random.default_rng(seed), "nsp", pool="heldout", label=0)
            neg = zp.make_pair(examples, split, i, np.random.default_rng(seed), "nsp", pool="heldout", label=1)
            assert pos[0][: int(np.argmax(pos[1]))].tolist() == neg[0][: int(np.argmax(neg[1]))].tolist()  # one A
            sentences = [tok.decode(x[int(np.argmax(x_types)) : -1]).split() for x, x_types in (pos[:2], neg[:2])]
            for words in sentences:  # "<source> line <n> end" repeated: whole sentences only
                assert len(words) % 4 == 0 and words[3::4] == ["end"] * (len(words) // 4)
            lines = [int(w) for w in sentences[1][2::4]]
            assert lines == list(range(lines[0], lines[0] + len(lines)))  # consecutive
            assert len(sentences[1]) == len(sentences[0])  # as many as the positive's (three a chunk)
