"""The zoo command's training chunks (``python -m scripts.zoo``'s worker, gpu baseline, train and
flops) are ``models.zoo.data.corpus_chunks``'s, on a small hand-written corpus with
two sources, an empty line, a sentence longer than a chunk and more lines than ``--max-sentences``;
the logged token counts count every sentence whole (before ``make_chunks`` cuts the long one)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from models.zoo import data as zd
from scripts.zoo.__main__ import main as run_zoo

REPO = Path(__file__).resolve().parents[3]
SHIPPED = REPO / "weights" / "zoo"
LONG = " ".join(["the quick brown fox jumps over the lazy dog"] * 20)  # 180 words: over 125 pieces
LIMIT = 30


class _Stop(Exception):
    pass


def _lines() -> list[tuple[str, str]]:
    sample = [s for s in (REPO / "data" / "train_sample.txt").read_text(encoding="utf-8").splitlines() if s][:38]
    return ([("a", s) for s in sample[:12]] + [("a", LONG)] + [("b", s) for s in sample[12:25]]
            + [("c", s) for s in sample[25:]])


def _write_corpus(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = _lines()
    text = "".join(f"{s}\t{t}\n" for s, t in lines[:5]) + "a\t\n" + "".join(f"{s}\t{t}\n" for s, t in lines[5:])
    (folder / "train_ordered.tsv").write_text(text, encoding="utf-8")
    (folder / "train.txt").write_text("".join(f"{t}\n" for _, t in lines), encoding="utf-8")
    return folder / "train_ordered.tsv"


def _tokenizer(family: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(SHIPPED / family))


def _whole_tokens(tokenizer, limit: int = 0) -> int:
    texts = [t for _, t in _lines()][: limit or None]
    return sum(len(x) for x in tokenizer(texts, add_special_tokens=False)["input_ids"])


def _as_lists(chunks) -> list[list[list[int]]]:
    return [[seq.tolist() for seq in chunk] for chunk in chunks]


def _expected(path: Path, tokenizer, limit: int = 0):
    chunks = zd.corpus_chunks(path, tokenizer, 128, limit)  # the shipped shape's max_len
    assert len({len(c) for c in chunks}) > 1 and any(len(s) == 125 for c in chunks for s in c)  # LONG was cut
    return chunks


@pytest.fixture()
def stop_at_piece_counts(monkeypatch) -> list:
    """The worker and the baseline stop where they first count the chunks' pieces; the chunks land here."""
    from scripts.zoo import gpu as zoo_gpu

    seen = []

    def piece_counts(chunks, vocab):
        seen.append(chunks)
        raise _Stop

    monkeypatch.setattr(zoo_gpu.zs, "piece_counts", piece_counts)
    return seen


def test_the_gpu_worker_chunks_the_corpus_as_corpus_chunks_and_logs_its_whole_sentences_tokens(tmp_path,
                                                                                              stop_at_piece_counts):
    seen = stop_at_piece_counts
    work = tmp_path / "work"
    path = _write_corpus(work)
    with pytest.raises(_Stop):
        run_zoo(["worker", "--family", "mini-bert", "--work", str(work), "--deadline", str(time.time() + 600),
                 "--device", "cpu", "--tiny", "--max-sentences", str(LIMIT), "--heldout-limit", "4"])
    tok = _tokenizer("mini-bert")
    assert _as_lists(seen[0]) == _as_lists(_expected(path, tok, LIMIT))
    logged = json.loads((work / "mini-bert" / "train.log").read_text(encoding="utf-8").splitlines()[0])
    assert logged["chunks"] == len(seen[0])
    assert logged["corpus_tokens"] == _whole_tokens(tok, LIMIT) > sum(len(s) for c in seen[0] for s in c)


def test_the_baseline_counts_pieces_of_corpus_chunks_at_the_record_s_length(tmp_path, stop_at_piece_counts):
    seen = stop_at_piece_counts
    path = _write_corpus(tmp_path / "corpus")
    zoo = tmp_path / "zoo"
    shutil.copytree(SHIPPED / "mini-bert", zoo / "mini-bert", ignore=shutil.ignore_patterns("*.safetensors"))
    with pytest.raises(_Stop):
        run_zoo(["gpu", "baseline", "--corpus", str(path.parent), "--zoo", str(zoo)])
    assert _as_lists(seen[0]) == _as_lists(_expected(path, _tokenizer("mini-bert")))


def test_zoo_train_chunks_the_corpus_once_per_tokenizer_and_records_its_sentences(tmp_path, monkeypatch):
    from scripts.zoo import train as train_zoo

    path = _write_corpus(tmp_path / "corpus")
    work = tmp_path / "work"
    shutil.copytree(SHIPPED / "mini-bert", work / "tiny" / "tokenizers" / "wordpiece",
                    ignore=shutil.ignore_patterns("*.safetensors", "*.md", "record.json", "config.json"))
    seen, records = [], {}

    def train_family(family, tokenizer, chunks, heldout, cfg, **kw):
        seen.append(chunks)
        return {"objective": SimpleNamespace(model=torch.nn.Linear(1, 1)), "examples": None,
                "record": {"tokens": 1, "steps": 1, "wall_minutes": 1.0}}

    monkeypatch.setattr(train_zoo.Z, "train_family", train_family)
    monkeypatch.setattr(train_zoo.zs, "final_scores", lambda *a, **k: {})
    monkeypatch.setattr(train_zoo.zs, "unigram_baseline", lambda *a, **k: {})
    monkeypatch.setattr(train_zoo, "export", lambda family, _o, _t, record, _out, _counts=None: records.update({family: record}))
    monkeypatch.setattr(train_zoo, "write_cards_in", lambda folder: None)
    monkeypatch.setattr("models.zoo.cards.targets_table", lambda out: "")
    assert run_zoo(["train", "--tiny", "--corpus", str(path.parent), "--work", str(work), "--out", str(tmp_path / "out"),
                    "--families", "mini-bert", "mini-electra", "--max-sentences", str(LIMIT),
                    "--heldout-limit", "4"]) == 0
    tok = _tokenizer("mini-bert")
    assert len(seen) == 2 and seen[0] is seen[1]  # both wordpiece families: one tokenization
    assert _as_lists(seen[0]) == _as_lists(_expected(path, tok, LIMIT))
    assert {r["corpus"]["sentences"] for r in records.values()} == {LIMIT}
    logged = [json.loads(line) for line in (work / "tiny" / "train-rank0.log").read_text(encoding="utf-8").splitlines()]
    assert [line for line in logged if "tokenizer" in line] == [
        {"tokenizer": "wordpiece", "chunks": len(seen[0]), "tokens": _whole_tokens(tok, LIMIT)}]


def test_zoo_flops_steps_on_corpus_chunks_once_per_tokenizer(tmp_path, monkeypatch, capsys):
    from scripts.zoo import flops as zoo_flops

    path = _write_corpus(tmp_path / "corpus")
    zoo = tmp_path / "zoo"
    for family in ("mini-bert", "mini-distilbert"):  # one tokenizer kind
        shutil.copytree(SHIPPED / family, zoo / family)
        record = json.loads((zoo / family / "record.json").read_text(encoding="utf-8"))
        record["corpus"]["sentences"] = len(_lines())
        (zoo / family / "record.json").write_text(json.dumps(record), encoding="utf-8")
    seen = []

    def train_family(family, tokenizer, chunks, heldout, cfg, **kw):
        seen.append(chunks)
        return {"record": {"flops_per_token": 1.0}}

    monkeypatch.setattr(zoo_flops.Z, "train_family", train_family)
    assert run_zoo(["flops", "--corpus", str(path.parent), "--zoo", str(zoo), "--families", "mini-bert",
                    "mini-distilbert", "--dry-run"]) == 0
    assert len(seen) == 4 and all(c is seen[0] for c in seen)  # two steps a family, one tokenization
    assert _as_lists(seen[0]) == _as_lists(_expected(path, _tokenizer("mini-bert")))
    # a record trained on another corpus is refused
    record = json.loads((zoo / "mini-bert" / "record.json").read_text(encoding="utf-8"))
    record["corpus"]["sentences"] += 1
    (zoo / "mini-bert" / "record.json").write_text(json.dumps(record), encoding="utf-8")
    with pytest.raises(SystemExit, match="rebuild it"):
        run_zoo(["flops", "--corpus", str(path.parent), "--zoo", str(zoo), "--families", "mini-bert", "--dry-run"])

