"""Put online-zoo models into the Hugging Face cache, on a machine with internet.

    python -m scripts.prefetch bert-base roberta-base     # chosen models
    python -m scripts.prefetch --all                       # the whole online zoo

Then copy the Hugging Face cache (``~/.cache/huggingface/hub``, or $HF_HUB_CACHE) to the
classroom machines and run the app there with ``HF_HUB_OFFLINE=1``: the Models tab shows
the prefetched models as available. Only the files the app reads are fetched
(config, tokenizer files, safetensors weights when the repository has them).
"""

from __future__ import annotations

import argparse


from models.registry.catalogue import SPECS, get_spec

PATTERNS = ["*.json", "*.txt", "*.model", "*.safetensors"]


def prefetch(key: str) -> str:
    from huggingface_hub import list_repo_files, snapshot_download

    spec = get_spec(key)
    if spec.source_kind != "hub":
        return f"{key}: embedded, installed by `make setup`; nothing to fetch"
    files = list_repo_files(spec.source)
    patterns = list(PATTERNS)
    if not any(f.endswith(".safetensors") for f in files):
        patterns.append("pytorch_model.bin")  # older repositories ship only this
    path = snapshot_download(spec.source, allow_patterns=patterns)
    return f"{key}: {spec.source} cached in {path}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("keys", nargs="*", help="registry keys (see the Models tab)")
    parser.add_argument("--all", action="store_true", help="every model of the online zoo")
    args = parser.parse_args(argv)
    keys = [s.key for s in SPECS if s.source_kind == "hub"] if args.all else args.keys
    if not keys:
        parser.error("name at least one model key, or --all")
    for key in keys:
        print(prefetch(key), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
