"""The mini zoo's training pieces (issue 24): BERT's batched static masking, the ROC AUC of
ELECTRA's detector, the word-frequency baseline, the GPU run's common budget and grid."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from models.pretraining.masking import MaskingPolicy
from models.zoo.data import static_masking
from models.zoo.scores import chosen_words, roc_auc, unigram_baseline

REPO = Path(__file__).resolve().parents[3]


def test_static_masking_follows_bert_rule_and_each_row_depends_on_its_key_alone():
    ids = torch.randint(5, 1000, (256, 100))
    special = torch.zeros_like(ids, dtype=torch.bool)
    special[:, 0] = special[:, -1] = True
    special[::3, 80:] = True  # padding
    policy = MaskingPolicy()
    keys = np.arange(1000, 1256, dtype=np.uint64)
    inputs, labels = static_masking(ids, special, policy, keys, mask_token_id=4, vocab_size=1000)
    sel = labels != -100
    assert not (sel & special).any()
    assert torch.equal(labels[sel], ids[sel]) and torch.equal(inputs[~sel], ids[~sel])
    n = int((~special).sum())
    rate = float(sel.sum()) / n
    assert abs(rate - 0.15) < 4 * math.sqrt(0.15 * 0.85 / n)
    masked = float((inputs[sel] == 4).float().mean())
    kept = float((inputs[sel] == ids[sel]).float().mean())
    assert abs(masked - 0.8) < 0.02 and abs(kept - 0.1) < 0.015
    # row 7 alone, in a batch of its own and padded wider: the same masks
    wide_ids = torch.cat([ids[7:8], torch.zeros(1, 20, dtype=torch.long)], 1)
    wide_special = torch.cat([special[7:8], torch.ones(1, 20, dtype=torch.bool)], 1)
    alone_in, alone_lab = static_masking(wide_ids, wide_special, policy, keys[7:8], mask_token_id=4, vocab_size=1000)
    assert torch.equal(alone_in[0, :100], inputs[7]) and torch.equal(alone_lab[0, :100], labels[7])
    # another key (BERT's next copy of the data): other masks
    other_in, _ = static_masking(ids[7:8], special[7:8], policy, keys[7:8] + np.uint64(7_777_777), mask_token_id=4,
                                 vocab_size=1000)
    assert not torch.equal(other_in[0], inputs[7])


def test_the_rtd_summary_reads_detection_apart_by_where_the_generator_wrote():
    """Six tokens worked by hand: two replaced (0.9, 0.8), one the generator wrote back as the
    original (0.1), three it never saw (0.85, 0.2, 0.3)."""
    from models.zoo.scores import rtd_summary

    prob = np.array([0.9, 0.8, 0.1, 0.85, 0.2, 0.3])
    replaced = np.array([1, 1, 0, 0, 0, 0])
    rewritten = np.array([1, 1, 1, 0, 0, 0])
    s = rtd_summary(prob, replaced, rewritten)
    assert s["roc_auc"] == pytest.approx(7 / 8)  # 0.9 beats all four originals, 0.8 all but 0.85
    assert s["rewritten_auc"] == pytest.approx(1.0)  # both above the correctly guessed 0.1
    assert s["untouched_auc"] == pytest.approx(5 / 6)
    assert s["where_auc"] == pytest.approx(5 / 9)  # written {0.9, 0.8, 0.1} against {0.85, 0.2, 0.3}
    assert s["replaced_recall"] == 1.0 and s["original_specificity"] == pytest.approx(3 / 4)
    assert (s["replaced"], s["original"], s["rewritten_original"]) == (2, 4, 1)


def test_roc_auc_matches_sklearn_with_ties():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    pos, neg = rng.random(300).round(2), (rng.random(500) * 0.7).round(2)
    expected = roc_auc_score(np.r_[np.ones(300), np.zeros(500)], np.r_[pos, neg])
    assert roc_auc(pos, neg) == pytest.approx(expected, abs=1e-12)


def test_unigram_baseline_is_the_cross_entropy_of_piece_frequencies():
    from transformers import AutoTokenizer

    from models.registry.zoo_entries import zoo_folder

    tok = AutoTokenizer.from_pretrained(zoo_folder("mini-bert"))
    sentences = ["The old man sat by the fire and told the children a story.",
                 "She opened the door and walked into the garden."]
    counts = np.zeros(len(tok), dtype=np.int64)
    for s in sentences * 3:
        np.add.at(counts, tok(s, add_special_tokens=False)["input_ids"], 1)
    got = unigram_baseline(tok, counts, sentences)
    # by hand: the chosen words' pieces, -log((count + 1) / (total + V))
    probs = (counts + 1.0) / (counts.sum() + len(counts))
    losses, right, words = [], 0, 0
    for sentence, spans in zip(sentences, chosen_words(sentences)):
        enc = tok(sentence, add_special_tokens=False, return_offsets_mapping=True)
        for s, e in spans:
            pieces = [i for i, (a, b) in zip(enc["input_ids"], enc["offset_mapping"]) if a < e and b > s]
            losses += [-math.log(probs[i]) for i in pieces]
            right += all(i == int(np.argmax(counts)) for i in pieces)
            words += 1
    assert got["piece_loss"] == pytest.approx(sum(losses) / len(losses))
    assert got["words"] == words and got["word_top1"] == pytest.approx(right / words)
    assert got["top_guess"] == "the"


def test_gpu_run_budget_is_one_figure_every_family_reaches_in_time():
    from scripts.zoo.gpu import common_budget
    from scripts.zoo.worker import parse_grid

    rates = {"mini-bert": 100_000.0, "mini-roberta": 200_000.0, "mini-distilbert": 150_000.0}
    b = common_budget(rates, left_s=300.0, cap=10**9, eval_s=20.0)
    usable = 280.0 * 0.85
    # DistilBERT runs after its teacher, alone (1.5 x its trial rate): 1 / (1/100k + 1/225k) tokens/s
    chain = 1 / (1 / 100_000 + 1 / (1.5 * 150_000))
    assert b["tokens"] == int(usable * chain) and b["limited_by"] == "mini-distilbert"
    assert b["tokens"] / rates["mini-bert"] + b["tokens"] / (1.5 * rates["mini-distilbert"]) <= usable + 1e-6
    capped = common_budget(rates, 300.0, cap=1_000_000, eval_s=20.0)
    assert capped["tokens"] == 1_000_000 and capped["limited_by"] == "the cap"
    # a prefix search of 3 points, each an eighth of its run, trains 1.25 budgets per family
    prefix = common_budget(rates, left_s=300.0, cap=10**9, eval_s=20.0, passes=1.25)
    assert prefix["tokens"] == int(usable / 1.25 * chain) and prefix["passes"] == 1.25
    assert prefix["distil_needs_s"] == pytest.approx(1.25 * prefix["tokens"] / (1.5 * rates["mini-distilbert"]))
    assert parse_grid("lr=1e-3,2e-3 dropout=0,0.1") == [
        {"lr": 1e-3, "dropout": 0.0}, {"lr": 1e-3, "dropout": 0.1},
        {"lr": 2e-3, "dropout": 0.0}, {"lr": 2e-3, "dropout": 0.1}]


def _tiny_run(family: str):
    """A family's tokenizer, 60 sample lines as chunks, a 2-layer 32-wide shape."""
    from transformers import AutoTokenizer

    from models.registry.zoo_entries import zoo_folder
    from models.zoo import data as zd
    from models.zoo.families import Shape

    tok = AutoTokenizer.from_pretrained(zoo_folder(family))
    lines = [s for s in open(REPO / "data" / "train_sample.txt", encoding="utf-8").read().splitlines() if s][:60]
    chunks = zd.make_chunks(["s"] * len(lines), tok(lines, add_special_tokens=False)["input_ids"], 61)
    shape = Shape(layers=2, hidden=32, heads=2, ffn=64, vocab=len(tok), max_len=64, albert_embedding=16,
                  electra_embedding=16, electra_generator_hidden=16)
    return tok, chunks, shape


@pytest.mark.parametrize(("family", "autocast"), [("mini-bert", ""), ("mini-electra", ""), ("mini-roberta", ""),
                                                ("mini-bert", "bf16"), ("mini-electra", "bf16")])
def test_a_run_resumed_from_its_checkpoint_ends_with_the_same_weights(family, autocast, tmp_path):
    """N steps straight == N/2 steps, stop, resume from the checkpoint in a new call, N/2 more:
    the data position, masks, pairs, dropout, the generator's samples and AdamW all continue.
    Also under bf16 autocast (the CPU zoo's recipe: its attention runs as explicit products)."""
    from models.zoo import data as zd
    from models.zoo import train as Z
    from models.zoo.families import TOKENIZER_OF

    tok, chunks, shape = _tiny_run(family)
    cfg = Z.ZooConfig(tokens=10**9, batch_size=4, evals=0, dropout=0.1, shape=shape, autocast=autocast)
    assert TOKENIZER_OF[family]
    torch.set_num_threads(1)

    def run(max_steps, checkpoint=None):
        return Z.train_family(family, tok, chunks, [], cfg, log=lambda _: None, max_steps=max_steps,
                              checkpoint=checkpoint)

    per_epoch = len(zd.Examples(tok, chunks, 64, 0).train_idx) // 4
    assert per_epoch < 7  # the second half starts a new epoch (a new order, BERT's next static copy)
    straight = run(12)
    ckpt = tmp_path / "run.ckpt"
    first = run(5, ckpt)
    assert first["record"]["steps"] == 5 and ckpt.is_file()
    resumed = run(12, ckpt)
    assert resumed["record"]["steps"] == 12
    assert resumed["record"]["tokens"] == straight["record"]["tokens"]
    assert Z.state_digest(resumed["objective"]) == Z.state_digest(straight["objective"])
    assert Z.state_digest(first["objective"]) != Z.state_digest(straight["objective"])


def test_each_worker_casts_its_own_weights_under_bf16(tmp_path, monkeypatch):
    """torch keeps one process-wide cache of the weights autocast has cast to bfloat16: a part
    run on one worker thread could take the other part's cast of a weight, with that thread's
    backward node, and the tied embeddings' gradient then be summed in another order from run
    to run. Staged here: part 1's generator head runs after part 0's, while part 0 is still
    inside its forward. Each part's graph must hold its own cast, and the weights must be those
    of the parts run one after the other."""
    import threading

    from models.zoo import train as Z
    from models.zoo.families import build_models

    family = "mini-electra"
    tok, chunks, shape = _tiny_run(family)
    cfg = Z.ZooConfig(tokens=10**9, batch_size=4, evals=0, dropout=0.0, shape=shape, autocast="bf16")
    torch.set_num_threads(2)
    local = threading.local()
    head_done, seen_by_1 = threading.Barrier(2, timeout=60), threading.Barrier(2, timeout=60)
    casts = []  # (step's part, the ids of the cast nodes under the generator head's output)

    class Serial:
        def __init__(self, *a, **k):
            pass

        def map(self, f, items):
            return [f(k) for k in items]

        def shutdown(self, *a, **k):
            pass

    class Staged(Serial):
        def map(self, f, items):
            out = {}

            def run(k):
                local.part = k
                out[k] = f(k)
            threads = [threading.Thread(target=run, args=(k,)) for k in items]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            return [out[k] for k in items]

    def cast_nodes(output) -> set:
        found, todo, seen = set(), [output.grad_fn], set()
        while todo:
            fn = todo.pop()
            if fn is None or id(fn) in seen:
                continue
            seen.add(id(fn))
            if type(fn).__name__.startswith("ToCopyBackward"):
                found.add(id(fn))
            elif len(seen) < 20:  # the head's own few nodes, not the whole graph
                todo += [g for g, _ in fn.next_functions]
        return found

    def before(*_):
        if getattr(local, "part", None) == 1:
            head_done.wait()

    def after(_, __, output):
        part = getattr(local, "part", None)
        if part is None:  # the first step counts FLOPs on the calling thread
            return
        casts.append((part, cast_nodes(output)))
        if part == 0:
            head_done.wait()
            seen_by_1.wait()  # still inside its forward (and its autocast) while part 1 casts
        else:
            seen_by_1.wait()

    def digest(pool, staged: bool) -> str:
        torch.manual_seed(cfg.seed)
        built = build_models(family, tok, shape, dropout=0.0, position_init=cfg.position_init)
        if staged:
            built["generator"].generator_lm_head.register_forward_pre_hook(before)
            built["generator"].generator_lm_head.register_forward_hook(after)
        monkeypatch.setattr(Z, "ThreadPoolExecutor", pool)  # the worker pool train_family starts
        done = Z.train_family(family, tok, chunks, [], cfg, models=built, log=lambda _: None,
                              max_steps=5)
        return Z.state_digest(done["objective"])

    serial = digest(Serial, False)
    assert digest(Staged, True) == serial
    assert len(casts) == 8  # 4 split steps, 2 parts each
    for step in range(0, len(casts), 2):
        (p0, c0), (p1, c1) = casts[step], casts[step + 1]
        assert (p0, p1) == (0, 1) and c0 and c1 and not c0 & c1


def test_corpus_chunks_keep_reading_order_within_one_source_and_leave_room_for_a_pairs_specials(tmp_path):
    from transformers import AutoTokenizer

    from models.registry.zoo_entries import zoo_folder
    from models.zoo.data import corpus_chunks

    tok = AutoTokenizer.from_pretrained(zoo_folder("mini-bert"))
    lines = [("wordnet", "A cup of coffee."), ("wordnet", "The kitchen table is old."),
             ("sotu", "The state of the union is strong."), ("sotu", "We meet again."),
             ("sotu", " ".join(["word"] * 30)), ("fortunes", "Never trust a cat.")]
    path = tmp_path / "train_ordered.tsv"
    path.write_text("".join(f"{s}\t{t}\n" for s, t in lines) + "empty\t\n", encoding="utf-8")
    chunks = corpus_chunks(path, tok, max_len=16)
    pieces = [tok(t, add_special_tokens=False)["input_ids"][:13] for _, t in lines]  # 16 - 3 specials
    assert [list(seq) for chunk in chunks for seq in chunk] == pieces  # every line once, in order, cut at 13
    names = []
    assert [[list(q) for q in c] for c in corpus_chunks(path, tok, max_len=16, names=names)] == \
        [[list(q) for q in c] for c in chunks]  # asking for the names changes nothing
    assert len(names) == len(chunks)
    owners = iter(s for s, _ in lines)
    for chunk, name in zip(chunks, names):
        sources = {next(owners) for _ in chunk}
        assert sources == {name}  # a chunk never crosses from one source to the next; its name is its source
        assert sum(len(seq) for seq in chunk) <= 13
    assert len(chunks) >= 4  # the 30-word line fills a chunk of its own
    assert [list(s) for c in corpus_chunks(path, tok, max_len=16, limit=2) for s in c] == pieces[:2]
    counts = {}
    assert [list(s) for c in corpus_chunks(path, tok, max_len=16, limit=5, counts=counts) for s in c] == pieces[:5]
    whole = [len(tok(t, add_special_tokens=False)["input_ids"]) for _, t in lines[:5]]
    assert counts == {"sentences": 5, "tokens": sum(whole)} and max(whole) > 13  # the 30-word line counted whole
