"""A tiny mini zoo for the test suite when the repository ships none.

The real zoo (weights/zoo, made by python -m scripts.zoo search) takes hours of CPU. When it is
absent, the tests train the same seven families in a tiny shape (2 layers, 64 wide, a
1,024-token vocabulary, a few thousand tokens from data/train_sample.txt) with the same
command (``python -m scripts.zoo train --tiny``), once per version of the training code (cached under .cache/test-zoo/), and point
ENCODER_LAB_ZOO_DIR at it, so every test and the app server they start see the seven
families and the decoder twin. Its models are labelled by their records like any run: a few steps, test-only.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FAMILIES = ("mini-bert", "mini-roberta", "mini-distilbert", "mini-albert", "mini-electra",
            "mini-deberta", "mini-modernbert")
DECODER = "mini-decoder"  # mini-modernbert's decoder twin (beside the zoo, trained by the same script)
INPUTS = ("models/zoo/train.py", "models/zoo/data.py", "models/zoo/families.py", "models/zoo/scores.py",
          "models/zoo/tokenizers.py", "models/zoo/batches.py", "models/zoo/step.py",
          "models/pretraining/masking.py", "scripts/zoo/train.py", "scripts/zoo/export.py",
          "data/train_sample.txt")


def shipped(folder: Path) -> bool:
    return all((folder / key / "record.json").is_file() for key in FAMILIES)


def has_decoder(folder: Path) -> bool:
    return (folder / DECODER / "record.json").is_file()


def ensure_test_zoo() -> Path:
    """The folder of a complete zoo and its decoder twin: the shipped one, else the cached tiny
    one (trained now); a shipped zoo without its decoder gets a tiny one beside it (the shipped
    families linked into one folder with it)."""
    if os.environ.get("ENCODER_LAB_ZOO_DIR"):
        return Path(os.environ["ENCODER_LAB_ZOO_DIR"])
    real = REPO / "weights" / "zoo"
    if shipped(real) and has_decoder(real):
        return real
    digest = hashlib.sha256(b"".join((REPO / f).read_bytes() for f in INPUTS)).hexdigest()[:16]
    root = REPO / ".cache" / "test-zoo" / digest
    out = root / ("with-decoder" if shipped(real) else "zoo")
    if shipped(real):
        out.mkdir(parents=True, exist_ok=True)
        for key in FAMILIES:
            if not (out / key).exists():
                (out / key).symlink_to(real / key, target_is_directory=True)
    if not (shipped(out) and has_decoder(out)):
        corpus = _sample_corpus(root)
        families = [] if shipped(out) else list(FAMILIES)
        for args in ([["--families", *families]] if families else []) + [["--families", DECODER]]:
            _train(args, corpus, root, out)
        if not (shipped(out) and has_decoder(out)):
            raise RuntimeError(f"training the test zoo left it incomplete in {out}")
    os.environ["ENCODER_LAB_ZOO_DIR"] = str(out)
    return out


def _sample_corpus(root: Path) -> Path:
    sample = (REPO / "data" / "train_sample.txt").read_text(encoding="utf-8").splitlines()[:3000]
    corpus = root / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    (corpus / "train.txt").write_text("\n".join(sample) + "\n", encoding="utf-8")
    (corpus / "train_ordered.tsv").write_text("".join(f"sample\t{s}\n" for s in sample), encoding="utf-8")
    return corpus


def _train(families: list[str], corpus: Path, root: Path, out: Path) -> None:
    cmd = [sys.executable, "-m", "scripts.zoo", "train", "--tiny", "--corpus", str(corpus), *families,
           "--work", str(root / "work"), "--out", str(out), "--tokens", "8000", "--batch-size", "8",
           "--evals", "2", "--eval-sentences", "16", "--heldout-limit", "64", "--autocast", "",
           "--threads", "2"]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=1200)
    if done.returncode != 0:
        raise RuntimeError("training the test zoo failed:\n" + done.stderr[-4000:])
