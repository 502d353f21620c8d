"""``train_family`` trains, bit for bit, what the reference trainer trained on the same seed.

``REFERENCE`` holds, for each tiny run of ``CASES`` (a few steps of a 2-layer 32-wide shape on
60 lines of data/train_sample.txt: every family, the fast split path, torch's stock kernels,
bf16 autocast, a teacher, a resumed checkpoint, a trial's stop), the sha256 of the trained
weights (``state_digest``) and of the run's record without its timings. The digests were
recorded from commit e17170a's ``models/zoo/train.py`` (``train_family`` as one function;
the decoder's from commit 1b16bd2, the same function with its causal batches) with this
module's own ``run_case``, on this project's 2-core AMD EPYC (torch 2.13.0+cpu, one
thread), so they are independent of the code under test. Another CPU's kernels may differ in
the last bits. To refresh them, run this module on a checkout of a trainer known to be right,
with the same virtual environment, and paste what it prints::

    git archive <commit> | tar -x -C /tmp/reference && cp tests/unit/zoo/test_zoo_train_reference.py \\
        /tmp/reference/tests/unit/zoo/ && cd /tmp/reference && PYTHONPATH=. python tests/unit/zoo/test_zoo_train_reference.py
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[3]
TIMINGS = {"wall_minutes", "cpu_minutes_rank0", "allocator"}  # record keys that depend on the machine's load
LOG_TIMINGS = {"elapsed_s", "tokens_per_s"}
# options the trainer has gained since the reference, at the value that does what the reference did:
# left out of the compared record's config (the reference had no such key)
LATER_OPTIONS = {"nsp_negatives": "any"}

# name: (family, ZooConfig overrides, train_family arguments, steps before a resume (0: none))
CASES = {
    "bert-split-eval": ("mini-bert", {"dropout": 0.1, "workers": 2, "evals": 2}, {"max_steps": 8}, 0),
    "albert-stock": ("mini-albert", {"dropout": 0.1, "fast_kernels": False}, {"max_steps": 8}, 0),
    "electra-bf16-split": ("mini-electra", {"dropout": 0.1, "workers": 2, "autocast": "bf16"}, {"max_steps": 8}, 0),
    "distilbert-teacher": ("mini-distilbert", {"dropout": 0.1}, {"max_steps": 6}, 0),
    "roberta-resumed": ("mini-roberta", {"dropout": 0.1}, {"max_steps": 8}, 3),
    "deberta-stop-tokens": ("mini-deberta", {"dropout": 0.1}, {"stop_tokens": 900}, 0),
    "modernbert-one-worker": ("mini-modernbert", {"workers": 1, "evals": 1}, {"max_steps": 6}, 0),
    # the decoder on one worker: split over two, its runs differ from one another in the last bits
    "decoder-causal": ("mini-decoder", {"dropout": 0.1, "evals": 1, "workers": 1}, {"max_steps": 6}, 0),
}
TOKENIZER_FOLDER = {"mini-decoder": "mini-modernbert"}  # the decoder twin trains with its twin's tokenizer

REFERENCE = {
    "bert-split-eval": {"weights": "557c37f436d8d465a15c869c03c3d7b18de0f928a0a11f13db3fec15584b6ba4",
                        "record": "a08701154d63a1e2c1f61a61c414f1a83753d285d658be0e97d3633676c1cc99"},
    "albert-stock": {"weights": "3c9c07fe093d554aff665dd9cb41ee1a4490be6e4ed76b251934a226d712d2db",
                     "record": "9737319402857cb5440bff6eb5ba08f648fd2cb8941d68ccc594dea267d679ab"},
    "electra-bf16-split": {"weights": "c25df99bc7732679215cea4861b2af244431e453c5b6c889c784e46eb3f866d6",
                           "record": "de890aa2393cdca1ffca6bfd3505e6da2f63b8893f29c9f9a9f491bc511f6be6"},
    "distilbert-teacher": {"weights": "fa1f5f33bcd767fc96a01fe522392533c4f3c7fbaf3140fc439f1635bcac1385",
                           "record": "4a3271e8d6c36ab2a42ff0f0ef48e89d4ea16b74c619c5d346244a6a51909c73"},
    "roberta-resumed": {"weights": "d5ea001ebd1c4c4ad063d4acf45df5e85300be84353fc3dcca466fb63ecbcd5a",
                        "record": "89d803c2f3eecd4f95b4bb5089a8e0ca514d9ea07bd29db22c298354e7321985"},
    "deberta-stop-tokens": {"weights": "672904a29bdf8223b6668658789883719bdbec40a598010985164af6bf927eec",
                            "record": "21988c912cd72da27169a6acf150aa011080f1768038619b6684b33f7054a530"},
    "modernbert-one-worker": {"weights": "82f958b2fe5ac5d9e75359e4e8c76a30f60c8ead54229efad28495670343a4bb",
                              "record": "e89b00efaea7d2513f831d923d8a3debf89d7f1d19dd02a0332e81fb95d9b148"},
    "decoder-causal": {"weights": "f5b152299e747ef01a5810d1c62852eee0461d8dcd76765b813eb97a109df87d",
                       "record": "b288f8836aafae23142d63280fa795743bff8dffccc8ab9868411b7cd7d5e01d"},
}


def _teacher(tok):
    import transformers as T

    torch.manual_seed(3)
    return T.BertForPreTraining(T.BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2,
                                             num_attention_heads=2, intermediate_size=64, max_position_embeddings=64))


def run_case(name: str, tmp: Path) -> dict:
    """The digests of case ``name``: {"weights": ..., "record": ...}."""
    from transformers import AutoTokenizer

    from models.zoo import data as zd
    from models.zoo import train as Z
    from models.zoo.families import Shape

    family, overrides, kwargs, resume_at = CASES[name]
    tok = AutoTokenizer.from_pretrained(str(REPO / "weights" / "zoo" / TOKENIZER_FOLDER.get(family, family)))
    lines = [s for s in (REPO / "data" / "train_sample.txt").read_text(encoding="utf-8").splitlines() if s][:60]
    chunks = zd.make_chunks(["s"] * len(lines), tok(lines, add_special_tokens=False)["input_ids"], 61)
    heldout = [s for s in (REPO / "data" / "heldout.txt").read_text(encoding="utf-8").splitlines()
               if s and len(s.split()) < 20][:12]  # short enough for the 64-token shape
    shape = Shape(layers=2, hidden=32, heads=2, ffn=64, vocab=len(tok), max_len=64, albert_embedding=16,
                  electra_embedding=16, electra_generator_hidden=16)
    cfg = Z.ZooConfig(**{"tokens": 3000, "batch_size": 4, "evals": 0, "eval_sentences": 12, "shape": shape,
                         **overrides})
    teacher = _teacher(tok) if family == "mini-distilbert" else None
    torch.set_num_threads(1)
    checkpoint = tmp / f"{name}.ckpt" if resume_at else None
    if resume_at:
        Z.train_family(family, tok, chunks, heldout, cfg, teacher=teacher, log=lambda _: None,
                       **{**kwargs, "max_steps": resume_at}, checkpoint=checkpoint)
    done = Z.train_family(family, tok, chunks, heldout, cfg, teacher=teacher, log=lambda _: None,
                          checkpoint=checkpoint, **kwargs)
    record = {k: v for k, v in done["record"].items() if k not in TIMINGS}
    record["log"] = [{k: v for k, v in row.items() if k not in LOG_TIMINGS} for row in record["log"]]
    record["config"] = {k: v for k, v in record["config"].items() if LATER_OPTIONS.get(k, object()) != v}
    text = json.dumps(record, sort_keys=True, default=str)
    return {"weights": Z.state_digest(done["objective"]), "record": hashlib.sha256(text.encode()).hexdigest()}


@pytest.mark.parametrize("name", sorted(CASES))
def test_train_family_reproduces_the_reference_trainer(name, tmp_path):
    threads = torch.get_num_threads()
    try:
        assert run_case(name, tmp_path) == REFERENCE[name]
    finally:
        torch.set_num_threads(threads)


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        print(json.dumps({name: run_case(name, Path(tmp)) for name in CASES}, indent=4))
