"""Why ALBERT's sentence order and ELECTRA's detection stay weak in the CPU zoo: probes.

    .venv/bin/python -m scripts.zoo heads sop [--write]         # how much order the pairs carry
    nice -n 19 .venv/bin/python -m scripts.zoo heads rtd --generator-hidden 64    # a changed ELECTRA
    .venv/bin/python -m scripts.zoo heads rtd --checkpoint .cache/zoo-10m/mini-electra/trial-lr=0.001-dropout=0.0.ckpt

``sop``: sentence-order pairs built as training builds them (``models.zoo.data.Examples.pair``,
ALBERT's tokenizer, 128-token sequences, the same held-out chunks), read three ways, on the
pairs of every chunk and on those of running text alone (``RUNNING_TEXT``: the novels,
stories, speeches and the Bible, whose consecutive sentences have an order; dictionary
entries, WordNet's examples and fortunes are lines without one, so a pair cut from them
has no right order to find):
  1. the shipped mini-albert's SOP head;
  2. a bag-of-words order model, logit = w . (mean one-hot of A - mean one-hot of B) + b,
     logistic regression on ``--pairs`` training pairs (L-BFGS; the L2 penalty chosen on a
     tenth of them held back): the simplest model that compares which words each segment holds;
  3. the shipped mini-albert fine-tuned on SOP alone, running-text pairs, ``--steps`` steps of
     32 (AdamW, lr 1e-4): what this model can learn of order when nothing else competes.

``rtd``: ELECTRA trained on the shipped recipe (bf16, the fast path, lr 1e-3, dropout 0, the
locality start) for the opening ``--stop`` tokens of the 10 M-token schedule, as a tuning
trial is, with one change (a narrower or shallower generator; ``--uniform``: replacements
drawn uniformly from the vocabulary instead of from the generator, the check that the
discriminator can learn to detect at all), or a trial's checkpoint scored as it is; prints
the generator's loss per masked piece on the tuning lines and ``rtd_summary`` on the
held-out chunks (the record's ``rtd_heldout``). Nothing is saved but the run's checkpoint
in ``--work`` (a run found finished there is scored again, not retrained; ``--name`` names
another): these runs explain, they ship nothing. ``sop --write`` keeps the bag-of-words
model's accuracy in mini-albert's record (``pair_reference``: its card, Compare and the pair
views show it).
"""

from __future__ import annotations

import json
import shutil
import time
import warnings
from contextlib import contextmanager, nullcontext
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from models.zoo import data as zd
from models.zoo import families as zm
from models.zoo import scores as zs
from models.zoo import train as Z
from models.zoo.pairs import NARRATIVE

REFERENCE_PAIRS = 80_000  # training pairs of the bag-of-words order reference (the shipped mini-albert's)

REPO = Path(__file__).resolve().parents[2]
ZOO = REPO / "weights" / "zoo"
RUNNING_TEXT = NARRATIVE  # the sources of running text (models/zoo/pairs.py)


def segments(ids: np.ndarray, types: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[CLS] A [SEP] B [SEP] -> (A, B)."""
    first_b = int(np.argmax(types))
    return ids[1 : first_b - 1], ids[first_b:-1]


class BagOfWordsOrder(torch.nn.Module):
    """logit = w . (mean one-hot of A - mean one-hot of B) + b: P(the pair is swapped).
    Swapping A and B negates everything but the bias."""

    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab
        self.w = torch.nn.Parameter(torch.zeros(vocab))
        self.b = torch.nn.Parameter(torch.zeros(()))

    def features(self, a: list[np.ndarray], b: list[np.ndarray]) -> torch.Tensor:
        """(pairs, vocab), sparse CSR: each row A's mean one-hot minus B's (repeats summed)."""
        rows = np.concatenate([np.full(len(x) + len(y), k) for k, (x, y) in enumerate(zip(a, b))])
        cols = np.concatenate([np.concatenate([x, y]) for x, y in zip(a, b)])
        vals = np.concatenate([np.concatenate([np.full(len(x), 1.0 / len(x)), np.full(len(y), -1.0 / len(y))])
                               for x, y in zip(a, b)])
        coo = torch.sparse_coo_tensor(np.stack([rows, cols]).astype(np.int64), vals.astype(np.float32),
                                      (len(a), self.vocab), check_invariants=True)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
            return coo.coalesce().to_sparse_csr()

    def score(self, features: torch.Tensor) -> torch.Tensor:
        return (features @ self.w[:, None]).squeeze(-1) + self.b

    def forward(self, a: list[np.ndarray], b: list[np.ndarray]) -> torch.Tensor:
        return self.score(self.features(a, b))


def logistic_fit(rows: list[tuple[np.ndarray, np.ndarray, int]], vocab: int, penalty: float,
                 iterations: int = 200) -> BagOfWordsOrder:
    """The bag-of-words order model fitted to (A, B, label) rows as L2-penalised logistic
    regression: mean log-loss + penalty / 2 * |w|^2 (the bias unpenalised), by L-BFGS."""
    model = BagOfWordsOrder(vocab)
    x = model.features([r[0] for r in rows], [r[1] for r in rows])
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        xt = x.t().to_sparse_csr()
    y = torch.tensor([float(r[2]) for r in rows])
    opt = torch.optim.LBFGS(model.parameters(), max_iter=iterations, line_search_fn="strong_wolfe",
                            tolerance_grad=1e-9, tolerance_change=1e-12)

    def closure():  # the loss and its gradient written out (logistic regression's)
        with torch.no_grad():
            logits = model.score(x)
            loss = F.binary_cross_entropy_with_logits(logits, y) + penalty / 2 * model.w.square().sum()
            residual = (torch.sigmoid(logits) - y) / len(rows)
            model.w.grad = (xt @ residual[:, None]).squeeze(-1) + penalty * model.w
            model.b.grad = residual.sum()
        return loss

    opt.step(closure)
    return model


def fit_bag_of_words(pairs: list[tuple[np.ndarray, np.ndarray, int]], vocab: int,
                     penalties=(1e-6, 1e-5, 1e-4, 1e-3)) -> tuple[BagOfWordsOrder, dict]:
    """``logistic_fit`` with the penalty of the best accuracy on the last tenth of ``pairs``
    (held back), then refitted on all of them."""
    cut = len(pairs) * 9 // 10
    chosen = {p: accuracy(logistic_fit(pairs[:cut], vocab, p), pairs[cut:]) for p in penalties}
    best = max(chosen, key=chosen.get)
    return logistic_fit(pairs, vocab, best), {"penalty": best, "validation": chosen}


@torch.no_grad()
def accuracy(model: BagOfWordsOrder, pairs) -> float:
    logits = model([p[0] for p in pairs], [p[1] for p in pairs])
    return float(((logits > 0).long() == torch.tensor([p[2] for p in pairs])).float().mean())


def sop_pairs(examples: zd.Examples, idx: list[int], seed: int, n: int = 0):
    """(A, B, label) SOP pairs of chunks ``idx`` (``n`` drawn with replacement when given)."""
    rng = np.random.default_rng(seed)
    chosen = idx if not n else [int(i) for i in rng.choice(idx, n)]
    out = []
    for i in chosen:
        ids, types, label = examples.pair(int(i), rng, "sop")
        out.append((*segments(ids, types), label))
    return out


def sop_sets(folder: Path, corpus: Path):
    """(tokenizer, examples, sets) of the ALBERT in ``folder``: its SOP pairs as training builds
    them, ``sets`` the (training, held-out) chunk indices of every chunk ("all") and of running
    text alone ("running text")."""
    from .objectives import pair_examples

    tokenizer, examples, names = pair_examples(folder, corpus)
    chunks = examples.chunks
    running = {i for i, n in enumerate(names) if n in RUNNING_TEXT and len(chunks[i]) >= 2}
    sets = {"all": (examples.train_idx, examples.eval_idx),
            "running text": ([i for i in examples.train_idx if i in running],
                             [i for i in examples.eval_idx if i in running])}
    return tokenizer, examples, sets


def bag_of_words_reference(tokenizer, examples: zd.Examples, sets: dict, pairs: int) -> dict:
    """Per set of ``sets``: the bag-of-words order model (trained on ``pairs`` training pairs)
    on the held-out pairs: {"accuracy", "pairs", "penalty", "training_accuracy"}."""
    found = {}
    for label, (train_idx, eval_idx) in sets.items():
        training = sop_pairs(examples, train_idx, 0, pairs)
        bow, chosen = fit_bag_of_words(training, len(tokenizer))
        held = sop_pairs(examples, eval_idx, 1234)
        found[label] = {"accuracy": accuracy(bow, held), "pairs": len(held), "penalty": chosen["penalty"],
                        "training_accuracy": accuracy(bow, training)}
    return found


def need_corpus(corpus: Path) -> None:
    """An install's first check: the reference needs the corpus the zoo trained on."""
    if not (corpus / "train_ordered.tsv").is_file():
        raise SystemExit(f"{corpus / 'train_ordered.tsv'} is missing: mini-albert's record needs the bag-of-words "
                         "order reference, made from the corpus (build it: python -m scripts.build_corpus)")


def install_reference(folder: Path, corpus: Path, pairs: int = REFERENCE_PAIRS) -> dict:
    """A newly installed mini-albert's ``pair_reference`` (what its card, Compare and the pair
    views show beside its SOP head): the installs call this, so no zoo ships without it."""
    need_corpus(corpus)
    tokenizer, examples, sets = sop_sets(folder, corpus)
    return write_reference(folder / "record.json", bag_of_words_reference(tokenizer, examples, sets, pairs), pairs)


def _sop(args) -> int:
    from transformers import AlbertForPreTraining

    folder = ZOO / "mini-albert"
    tokenizer, examples, sets = sop_sets(folder, args.corpus)
    running = sets["running text"][0] + sets["running text"][1]
    model = AlbertForPreTraining.from_pretrained(str(folder), dtype=torch.float32)
    objective = zm.Objective("mini-albert", {"model": model})
    print(f"mini-albert's SOP pairs, {len(examples.train_idx) + len(examples.eval_idx):,} chunks, "
          f"{len(running):,} of them running text with two sentences or more")
    found = bag_of_words_reference(tokenizer, examples, sets, args.pairs)
    for label, (_, eval_idx) in sets.items():
        shipped = zs.pair_accuracy(objective, examples, "sop", chunks=eval_idx)
        print(f"  {label}: {len(eval_idx):,} held-out pairs (majority {shipped['majority']:.1%})")
        print(f"    the shipped SOP head:            {shipped['accuracy']:.1%}")
        print(f"    bag-of-words order model:        {found[label]['accuracy']:.1%} (trained on {args.pairs:,} pairs, "
              f"L2 penalty {found[label]['penalty']:g}; its training pairs {found[label]['training_accuracy']:.1%})")
    if args.write:
        write_reference(folder / "record.json", found, args.pairs)
        print(f"written: {folder / 'record.json'} (pair_reference)")
    if not args.steps:
        return 0
    train_idx, eval_idx = sets["running text"]
    print(f"  mini-albert fine-tuned on SOP alone (running text, 32 pairs a step, lr {args.lr:g}):")
    fine_tune_sop(objective, examples, train_idx, eval_idx, args.steps, args.lr,
                  lambda step, loss, acc: print(f"    step {step:5d}: training loss {loss:.4f}, held-out {acc:.1%}",
                                                flush=True))
    return 0


def write_reference(record_path: Path, found: dict, pairs: int) -> dict:
    """Keep the bag-of-words order model's held-out accuracy in the record (``pair_reference``):
    the cards, Compare and the pair views show it beside the SOP head's."""
    record = json.loads(record_path.read_text(encoding="utf-8"))
    everything, running = found["all"], found["running text"]
    record["pair_reference"] = {
        "model": (f"a bag-of-words order model (logistic regression on segment A's mean one-hot minus B's, "
                  f"trained on {pairs:,} training pairs, its L2 penalty chosen on a tenth of them held back)"),
        "accuracy": everything["accuracy"], "pairs": everything["pairs"], "penalty": everything["penalty"],
        "running_text_accuracy": running["accuracy"], "running_text_pairs": running["pairs"],
        "running_text": list(RUNNING_TEXT), "script": "scripts.zoo heads sop"}
    record_path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return record["pair_reference"]


def fine_tune_sop(objective: zm.Objective, examples: zd.Examples, train_idx, eval_idx, steps: int, lr: float,
                  report, every: int = 300, batch: int = 32, seed: int = 0) -> list[tuple[int, float, float]]:
    """Train ``objective``'s ALBERT on its SOP loss alone; ``report(step, mean loss, held-out
    accuracy)`` every ``every`` steps (and returned)."""
    torch.manual_seed(seed)
    model, rng, losses, out = objective.model, np.random.default_rng(seed), [], []
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    model.train()
    for step in range(1, steps + 1):
        rows = [examples.pair(int(i), rng, "sop") for i in rng.choice(train_idx, batch)]
        ids, types, attention = zd.pad_batch([r[0] for r in rows], [r[1] for r in rows], examples.pad)
        _, pooled = zm.encode("mini-albert", model, ids, attention, types)
        loss = F.cross_entropy(model.sop_classifier(pooled), torch.tensor([r[2] for r in rows]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
        if step % every == 0 or step == steps:
            acc = zs.pair_accuracy(objective, examples, "sop", chunks=eval_idx)["accuracy"]
            model.train()
            out.append((step, float(np.mean(losses[-every:])), acc))
            report(*out[-1])
    return out


@contextmanager
def uniform_replacements():
    """Within this block ELECTRA's generator proposes every vocabulary piece alike (its logits
    read as zeros): replacements drawn uniformly, in training and in ``rtd_scores``."""
    stock = zm.mlm_logits

    def flat(family, model, hidden):
        out = stock(family, model, hidden)
        return out * 0.0 if family == "mini-electra" and hasattr(model, "generator_lm_head") else out

    zm.mlm_logits = zs.mlm_logits = flat
    try:
        yield
    finally:
        zm.mlm_logits = zs.mlm_logits = stock


def electra_models(tokenizer, shape: zm.Shape, generator_layers: int = 0) -> dict:
    """The zoo's ELECTRA (locality start, dropout 0), its generator cut to its first
    ``generator_layers`` layers when given."""
    torch.manual_seed(0)
    models = zm.build_models("mini-electra", tokenizer, shape, dropout=0.0, position_init="local")
    if generator_layers:
        gen = models["generator"]
        gen.electra.encoder.layer = gen.electra.encoder.layer[:generator_layers]
        gen.config.num_hidden_layers = generator_layers
    return models


def _rtd(args) -> int:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(ZOO / "mini-electra"))
    shape = zm.Shape(**({"electra_generator_hidden": args.generator_hidden} if args.generator_hidden else {}))
    chunks = zd.corpus_chunks(args.corpus / "train_ordered.tsv", tokenizer, shape.max_len)
    tune = zd.heldout_splits()[0]  # the search's tuning lines
    cfg = Z.ZooConfig(tokens=args.tokens, lr=args.lr, dropout=0.0, autocast="bf16", evals=2,
                      eval_sentences=len(tune), shape=shape)
    args.work.mkdir(parents=True, exist_ok=True)
    changed = (f"g{args.generator_hidden or shape.electra_generator_hidden}-l{args.generator_layers or shape.layers}"
               + ("-uniform" if args.uniform else ""))
    name = args.name or (args.checkpoint.stem if args.checkpoint else changed)
    checkpoint = args.work / f"{name}.ckpt"
    if args.checkpoint and not checkpoint.is_file():  # scored from a copy: a run's end writes its checkpoint
        shutil.copyfile(args.checkpoint, checkpoint)
    models = None if args.checkpoint else electra_models(tokenizer, shape, args.generator_layers)
    start = time.time()
    with uniform_replacements() if args.uniform else nullcontext():
        done = Z.train_family("mini-electra", tokenizer, chunks, tune, cfg, models=models,
                              checkpoint=checkpoint, checkpoint_every=200, stop_tokens=args.stop,
                              log=lambda line: None)
        objective = done["objective"].cpu()
        out = zs.rtd_scores(objective, done["examples"])
        gen = zs.whole_word_accuracy("mini-electra", objective.generator, tokenizer, tune)
    print(f"{name}: {done['record']['tokens']:,} tokens ({time.time() - start:.0f} s); generator on the tuning "
          f"lines: {gen['piece_loss']:.3f} nats per masked piece, whole-word top-1 {gen['word_top1']:.1%}")
    print("  " + ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v:,}" for k, v in out.items()))
    return 0


def add_arguments(p) -> None:
    sub = p.add_subparsers(dest="probe", required=True)
    s = sub.add_parser("sop", help="how much sentence order the SOP pairs carry")
    s.add_argument("--corpus", type=Path, default=REPO / ".cache" / "corpus")
    s.add_argument("--pairs", type=int, default=REFERENCE_PAIRS, help="training pairs of the bag-of-words model")
    s.add_argument("--steps", type=int, default=1500, help="SOP-only fine-tuning steps (0: none)")
    s.add_argument("--lr", type=float, default=1e-4)
    s.add_argument("--write", action="store_true",
                   help="keep the bag-of-words model's accuracy in mini-albert's record (pair_reference)")
    r = sub.add_parser("rtd", help="ELECTRA's detection with one change, or a checkpoint scored")
    r.add_argument("--corpus", type=Path, default=REPO / ".cache" / "corpus")
    r.add_argument("--work", type=Path, default=REPO / ".cache" / "zoo-heads")
    r.add_argument("--name", default="")
    r.add_argument("--tokens", type=int, default=10_000_000, help="the schedule's budget (the 10 M zoo's: the README's runs)")
    r.add_argument("--stop", type=int, default=2_500_000, help="train this opening of it (a tuning trial's)")
    r.add_argument("--lr", type=float, default=1e-3)
    r.add_argument("--generator-hidden", type=int, default=0, help="the generator's width (0: the zoo's 128)")
    r.add_argument("--generator-layers", type=int, default=0, help="the generator's depth (0: the zoo's 4)")
    r.add_argument("--uniform", action="store_true", help="replacements uniform over the vocabulary")
    r.add_argument("--checkpoint", type=Path, default=None, help="score this finished run (e.g. a trial's)")


def run(args) -> int:
    return _sop(args) if args.probe == "sop" else _rtd(args)

