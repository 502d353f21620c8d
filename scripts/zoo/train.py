"""Train families straight to a token budget (no search) and ship them: the trainer as a command.

    python -m scripts.zoo train --threads 2                    # every family, 3 M tokens each
    torchrun --nproc_per_node 2 -m scripts.zoo train --families mini-roberta ...   # DDP

Trains the tokenizers (once, under ``--work``), then each family with
``models.zoo.train.train_family`` on one ``ZooConfig`` (the defaults: 3 M tokens, batches of
16, lr 1e-3, float32), scores it and writes its shipped folder under ``--out``
(weights/zoo/<key>/: config, float16 safetensors, tokenizer, record.json, MODEL_CARD.md).
Re-running with the same arguments on the same corpus reproduces the runs (same seeds and
data order; kernels may differ across CPUs in the last bits). The shipped zoo was made by
``search`` (a tuning search, then a longer bf16 run); the test suite's tiny zoo by this
(``--tiny``). Under torchrun it trains with DistributedDataParallel (gloo on CPU, NCCL on CUDA).
``--families mini-decoder`` trains mini-modernbert's decoder twin (a ModernBertDecoderForCausalLM
on next-token prediction, with its twin's tokenizer) beside the zoo.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import time
from pathlib import Path

import torch

from models.zoo import data as zd
from models.zoo import families as zm
from models.zoo import scores as zs
from models.zoo import train as Z
from models.zoo.tokenizers import train_tokenizer

from .export import export, write_cards_in

REPO = Path(__file__).resolve().parents[2]
TINY = dict(layers=2, hidden=64, heads=2, ffn=128, albert_embedding=32, electra_embedding=32,
            electra_generator_hidden=16)  # the test suite's shape (its vocabulary: 1,024 here)


def add_arguments(p) -> None:
    p.add_argument("--corpus", type=Path, default=REPO / ".cache" / "corpus")
    p.add_argument("--work", type=Path, default=REPO / ".cache" / "zoo")
    p.add_argument("--out", type=Path, default=REPO / "weights" / "zoo")
    p.add_argument("--families", nargs="+", default=list(zm.FAMILIES), choices=zm.FAMILIES + zm.DECODERS,
                   help="the encoder families (default: all seven); mini-decoder: the zoo's decoder twin")
    p.add_argument("--tokens", type=int, default=Z.ZooConfig.tokens)
    p.add_argument("--batch-size", type=int, default=Z.ZooConfig.batch_size)
    p.add_argument("--lr", type=float, default=Z.ZooConfig.lr)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--evals", type=int, default=Z.ZooConfig.evals)
    p.add_argument("--eval-sentences", type=int, default=Z.ZooConfig.eval_sentences)
    p.add_argument("--autocast", default=Z.ZooConfig.autocast, choices=["bf16", ""])
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--dropout", type=float, default=None, help="every model's dropout (default: each config's)")
    p.add_argument("--checkpoint-every", type=int, default=0,
                   help="write WORK/<family>.ckpt every N steps; re-running the same command resumes from it")
    p.add_argument("--stop-tokens", type=int, default=0,
                   help="stop once this many tokens are reached, on the schedule of --tokens (1 with a "
                        "checkpoint: score and export the run as the checkpoint left it, no step more)")
    p.add_argument("--stock-kernels", action="store_true",
                   help="torch's stock CPU kernels, one batch per step (ZooConfig.fast_kernels=False)")
    p.add_argument("--workers", type=int, default=Z.ZooConfig.workers,
                   help="CPU: threads each batch's rows are split over (the same gradient); 1: one batch with torch's threads")
    p.add_argument("--nsp-negatives", default=Z.ZooConfig.nsp_negatives, choices=zd.NSP_NEGATIVES,
                   help="mini-bert's NSP negatives: any other chunk's opening (BERT's draw, the default) or "
                        "whole sentences of the same source")
    p.add_argument("--device", default="cpu")
    p.add_argument("--tiny", action="store_true", help="a 2-layer 64-wide shape (tests only)")
    p.add_argument("--max-sentences", type=int, default=0, help="use only the first N corpus lines (tests)")
    p.add_argument("--heldout-limit", type=int, default=0, help="score on the first N held-out sentences only (tests)")
    p.add_argument("--digest", type=Path, default=None,
                   help="write each rank's sha256 of the trained weights here (the DDP replica check)")
    p.add_argument("--no-export", action="store_true", help="train only: no final evaluation, nothing saved")


def load_or_train_tokenizer(kind: str, corpus: Path, work: Path, vocab: int):
    from transformers import AutoTokenizer

    folder = work / "tokenizers" / kind
    if not (folder / "tokenizer_config.json").is_file():
        folder.mkdir(parents=True, exist_ok=True)
        t0 = time.time()
        train_tokenizer(kind, [str(corpus / "train.txt")], folder, vocab)
        print(f"tokenizer {kind}: trained in {time.time() - t0:.0f} s", flush=True)
    return AutoTokenizer.from_pretrained(str(folder))


def family_tokenizer(args, family: str, work: Path, vocab: int) -> tuple[object, str]:
    """(the family's tokenizer, the key its chunks are kept under): an encoder's is trained (once,
    under ``work``); a decoder takes its twin's shipped tokenizer, the same vocabulary exactly."""
    if family not in zm.DECODERS:
        kind = zm.TOKENIZER_OF[family]
        return load_or_train_tokenizer(kind, args.corpus, work, vocab), kind
    from transformers import AutoTokenizer

    twin = args.out / zm.TWIN_OF[family]  # trained in this --out (a test zoo), else the shipped one
    twin = twin if (twin / "tokenizer.json").is_file() else REPO / "weights" / "zoo" / zm.TWIN_OF[family]
    return AutoTokenizer.from_pretrained(str(twin)), zm.TWIN_OF[family]  # its chunks are its own


class LoadSampler:
    """The machine's 1-minute load average every 30 s while a run trains (what ran beside it)."""

    def __init__(self, every_s: float = 30.0):
        import threading

        self.samples, self._stop = [], threading.Event()
        self._thread = threading.Thread(target=self._run, args=(every_s,), daemon=True)
        self._thread.start()

    def _run(self, every_s: float) -> None:
        while not self._stop.wait(every_s):
            self.samples.append(round(os.getloadavg()[0], 2))

    def stop(self) -> list[float]:
        self._stop.set()
        return sorted(self.samples)


def decoder_record(family: str, objective, tokenizer, counts, tune: list[str], score: list[str],
                   load: list[float]) -> dict:
    """A decoder's record entries: next-piece scores and the word-frequency baseline on both
    held-out splits, continuations, and what it shares with its twin."""
    model = objective.model
    out = zs.final_scores(family, objective, tokenizer, None, score, [])
    out["heldout"]["split"] = f"data/heldout.txt without its last {zd.TUNING_SENTENCES} lines (the tuning split)"
    out["tuning_split"] = zs.next_piece_scores(family, model, tokenizer, tune)
    out["unigram"] = zs.unigram_next_piece(tokenizer, counts, score)
    out["unigram_tuning_split"] = zs.unigram_next_piece(tokenizer, counts, tune)
    out["twin"] = {"family": zm.TWIN_OF[family],
                   "shares": "tokenizer (its shipped folder), shape, corpus and order, seed, token budget, "
                             "batch size, schedule, learning rate (the twin's chosen point)"}
    cores = os.cpu_count() or 1
    out["concurrency"] = (f"on this machine's CPU ({cores} cores), shared with other work (tests, other training)"
                          + (f"; 1-minute load average while it trained: median {load[len(load) // 2]:.1f} "
                             f"(range {load[0]:.1f}-{load[-1]:.1f}; one run alone keeps it near {cores})"
                             if load else ""))
    out["concurrency_detail"] = {"load": load}
    out["script"] = "scripts.zoo train"
    return out


def start_ranks(device: torch.device) -> tuple[torch.device, int, int]:
    """(device, rank, world size); under torchrun the process group is started here."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1:
        import torch.distributed as dist

        if device.type == "cuda":
            device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
            torch.cuda.set_device(device)
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return device, int(os.environ.get("RANK", "0")), world


def config_of(args) -> Z.ZooConfig:
    shape = zm.Shape(**TINY, vocab=1024) if args.tiny else zm.Shape()
    return Z.ZooConfig(tokens=args.tokens, batch_size=args.batch_size, lr=args.lr, seed=args.seed,
                       autocast=args.autocast, evals=args.evals, eval_sentences=args.eval_sentences,
                       threads=args.threads, shape=shape, dropout=args.dropout,
                       fast_kernels=not args.stock_kernels, workers=args.workers,
                       nsp_negatives=args.nsp_negatives)


def teacher_first(families: list[str]) -> list[str]:
    """DistilBERT right after mini-bert (its teacher) when both train."""
    families = list(families)
    if "mini-distilbert" in families and "mini-bert" in families:
        families.remove("mini-distilbert")
        families.insert(families.index("mini-bert") + 1, "mini-distilbert")
    return families


def run(args) -> int:
    device, rank, world = start_ranks(torch.device(args.device))
    if args.threads:
        torch.set_num_threads(args.threads)
    cfg = config_of(args)
    work = args.work / ("tiny" if args.tiny else "")
    heldout = [s for s in (REPO / "data" / "heldout.txt").read_text(encoding="utf-8").splitlines() if s]
    if args.heldout_limit:
        heldout = heldout[: args.heldout_limit]
    work.mkdir(parents=True, exist_ok=True)
    log_file = open(work / f"train-rank{rank}.log", "a", encoding="utf-8")

    def log(line: str) -> None:
        if rank == 0:
            print(line, flush=True)
        log_file.write(line + "\n")
        log_file.flush()

    train_families(args, cfg, work, heldout, device, rank, log)
    if world > 1:
        import torch.distributed as dist

        dist.destroy_process_group()
    if rank == 0 and not args.no_export and set(args.families) - set(zm.DECODERS):
        from models.zoo.cards import targets_table

        print(targets_table(args.out), flush=True)
    return 0


def train_families(args, cfg: Z.ZooConfig, work: Path, heldout: list[str], device, rank: int, log) -> None:
    """Each family in turn (the teacher first): tokenizer, chunks (once per tokenizer), training, export."""
    chunks_of, names_of, corpus, teacher = {}, {}, {}, None  # corpus: its sentences and tokens (every sentence whole)
    tune, score = zd.heldout_splits(args.heldout_limit)  # a decoder's curve / its record (the zoo's splits)
    for family in teacher_first(args.families):
        decoder = family in zm.DECODERS
        tokenizer, kind = family_tokenizer(args, family, work, cfg.shape.vocab)
        if kind not in chunks_of:
            names_of[kind] = []
            chunks_of[kind] = zd.corpus_chunks(args.corpus / "train_ordered.tsv", tokenizer, cfg.shape.max_len,
                                               args.max_sentences, names=names_of[kind], counts=corpus)
            log(json.dumps({"tokenizer": kind, "chunks": len(chunks_of[kind]), "tokens": corpus["tokens"]}))
        if family == "mini-distilbert" and teacher is None:
            from transformers import BertForPreTraining

            teacher = BertForPreTraining.from_pretrained(str(args.out / "mini-bert"), dtype=torch.float32)
        load = LoadSampler() if decoder else None
        fam_cfg = dataclasses.replace(cfg, shape=dataclasses.replace(cfg.shape, vocab=len(tokenizer))) if decoder else cfg
        done = Z.train_family(family, tokenizer, chunks_of[kind], tune if decoder else heldout, fam_cfg,
                              teacher=teacher if family == "mini-distilbert" else None,
                              device=device, log=log,
                              checkpoint=(work / f"{family}.rank{rank}.ckpt") if args.checkpoint_every else None,
                              checkpoint_every=args.checkpoint_every, stop_tokens=args.stop_tokens,
                              sources=names_of[kind])
        if args.digest is not None:
            args.digest.mkdir(parents=True, exist_ok=True)
            (args.digest / f"{family}.rank{rank}.sha256").write_text(Z.state_digest(done["objective"]))
        if rank != 0 or args.no_export:
            continue
        decoder_scores = (tune, score, load.stop()) if decoder else None
        finish(args, family, done, tokenizer, chunks_of[kind], corpus, heldout, device, log, decoder_scores)
        if family == "mini-bert":
            # the teacher as shipped (fp16 values), so a DistilBERT-only re-run sees the same one
            teacher = copy.deepcopy(done["objective"].model).half().float()


def finish(args, family: str, done: dict, tokenizer, chunks, corpus: dict, heldout: list[str], device, log,
           decoder_scores: tuple | None = None) -> None:
    """The final scores into the record, then the shipped folder and (an encoder's) the cards.
    ``decoder_scores``: a decoder's (tuning split, score split, load samples)."""
    objective, record = done["objective"], done["record"]
    cloze = json.loads((REPO / "data" / "everyday_cloze.json").read_text(encoding="utf-8"))["items"]
    t0 = time.time()
    counts = zs.piece_counts(chunks, len(tokenizer))
    if decoder_scores:
        record.update(decoder_record(family, objective, tokenizer, counts, *decoder_scores))
    else:
        record.update(zs.final_scores(family, objective, tokenizer, done["examples"], heldout, cloze))
        record["unigram"] = zs.unigram_baseline(tokenizer, counts, heldout)
    record["tokens_per_s"] = record["tokens"] / max(record["wall_minutes"] * 60, 1e-9)
    record["tokenizer_kind"] = zm.TOKENIZER_OF[family]
    record["corpus"] = {"sentences": corpus["sentences"], "file": "train_ordered.tsv"}
    record["eval_minutes"] = (time.time() - t0) / 60
    record["torch"] = torch.__version__
    record["device"] = str(device)
    log(json.dumps({"family": family, "final": {k: record[k] for k in record
                                                if k in ("heldout", "everyday", "pair_heldout", "rtd_heldout",
                                                         "wall_minutes", "tokens", "steps")}}))
    export(family, objective, tokenizer, record, args.out, counts if decoder_scores else None)
    if not decoder_scores:
        write_cards_in(args.out)
