"""ELECTRA's discriminator trained on past the shared budget to find a plainly wrong word.

    nice -n 19 .venv/bin/python -m scripts.zoo detector --out WORK/detector --minutes 30

Starts from the shipped ``weights/zoo/mini-electra`` (discriminator and generator) and trains
the discriminator alone (the generator frozen, read from its own folder) on single training
sentences of the corpus (``train_ordered.tsv``; never the held-out split), two kinds per
step, each half of the batch:

- ELECTRA's own corruption: ELECTRA's masking, the frozen generator's samples at the masked
  positions, every token labelled replaced where it differs from the original;
- single swaps, the swapped word's pieces labelled replaced, a quarter of these sentences left
  whole: in half of the rest a noun put in place of a noun (``models.zoo.swaps.noun_swaps``:
  after a determiner, WordNet's nouns, drawn from the nouns of every training sentence), so
  the grammar holds and the meaning is plainly wrong, as in a student's sentence; in the
  other half any word for a word of another sentence of the batch
  (``models.zoo.swaps.swapped_sentences``). WordNet is read from ``--wordnet`` (its
  ``usr/share/wordnet``), by default unpacked from the Debian package the corpus build fetched.

AdamW (lr ``--lr``, linear warm-up over the first 5 % of the steps, then constant), weight
decay 0.01, float32, the loss ELECTRA's binary cross-entropy over every real token. A
checkpoint every 100 steps in ``--out`` (a run resumes from it); at the end (``--steps``
or ``--minutes``) the discriminator is saved there with ``record.json`` (steps, tokens, wall
and CPU minutes). Score it with ``python -m scripts.zoo objectives electra --folder OUT``.

``--install`` then ships it as ``weights/zoo/mini-electra-detector`` (float16, as the zoo's
weights): its record gains the held-out detection on generator-corrupted text
(``scripts.zoo rtd``'s ``measure``) and the single-swap figures (``scripts.zoo objectives
electra``), both on the shipped weights, and its card is written.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from transformers import AutoTokenizer, ElectraForMaskedLM, ElectraForPreTraining

from models.pretraining.masking import apply_masking
from models.zoo import data as zd
from models.zoo import families as zm
from models.zoo import swaps

from .resumable import Resumable, add_common_arguments, ship

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "weights" / "zoo" / "mini-electra"


def training_sentences(corpus: Path, n: int, seed: int = 0) -> list[str]:
    """``n`` sentences of 5 words or more drawn from the corpus's training split."""
    _, sentences = zd.read_ordered(corpus / "train_ordered.tsv")
    rng = np.random.default_rng(seed)
    pool = [s for s in sentences if len(s.split()) >= 5]
    return [pool[int(i)] for i in rng.choice(len(pool), n, replace=False)]


def swap_batch(tokenizer, items: list[dict]) -> tuple[dict, torch.Tensor]:
    """Tokenized swapped sentences and each token's label (1: a piece of the swapped word)."""
    enc = tokenizer([it["text"] for it in items], padding=True, truncation=True, max_length=128,
                    return_offsets_mapping=True, return_tensors="pt")
    offsets = enc.pop("offset_mapping")
    labels = torch.zeros(enc["input_ids"].shape)
    for k, it in enumerate(items):
        if it.get("start") is None:
            continue
        a, b = it["start"], it["start"] + len(it["swapped"])
        labels[k] = ((offsets[k, :, 0] < b) & (offsets[k, :, 1] > a)).float()
    return enc, labels


def generator_batch(tokenizer, generator, sentences: list[str], g: torch.Generator) -> tuple[dict, torch.Tensor]:
    """Sentences corrupted as ELECTRA trains: masking, the generator's samples, labels by difference."""
    enc = tokenizer(sentences, padding=True, truncation=True, max_length=128, return_tensors="pt",
                    return_special_tokens_mask=True)
    ids, attention = enc["input_ids"], enc["attention_mask"]
    special = enc.pop("special_tokens_mask").bool() | (attention == 0)
    inputs, labels, _ = apply_masking(ids, special, zm.masking_policy("mini-electra"),
                                      mask_token_id=tokenizer.mask_token_id, vocab_size=len(tokenizer), generator=g)
    sel = labels != -100
    with torch.no_grad():
        hidden = generator.electra(input_ids=inputs, attention_mask=attention).last_hidden_state
        logits = zm.mlm_logits("mini-electra", generator, hidden[sel]).float()
    corrupted = ids.clone()
    corrupted[sel] = torch.multinomial(logits.softmax(-1), 1, generator=g).squeeze(-1)
    return {"input_ids": corrupted, "attention_mask": attention}, (corrupted != ids).float()


def items_for(sentences: list[str], rng: np.random.Generator, seed: int, nouns: frozenset[str],
              noun_pool: list[str]) -> list[dict]:
    """A quarter of the sentences whole (no label set); of the rest, half with a noun put in place
    of a noun (those with a noun to swap), the others with any word swapped."""
    draw = rng.random(len(sentences))
    whole = [{"text": s, "swapped": "", "start": None} for s, d in zip(sentences, draw) if d < 0.25]
    by_noun = [s for s, d in zip(sentences, draw) if 0.25 <= d < 0.625]
    by_word = [s for s, d in zip(sentences, draw) if d >= 0.625]
    return (whole + swaps.noun_swaps(by_noun, nouns, seed=seed, pool=noun_pool)
            + swaps.swapped_sentences(by_word, seed=seed))


def wordnet_folder(args) -> Path:
    """``--wordnet``, else WordNet unpacked from the Debian package (fetched unless cached)."""
    if args.wordnet:
        return args.wordnet
    from scripts import build_corpus

    root, _ = build_corpus.Fetcher(args.corpus).deb("wordnet-base")
    return root / "usr" / "share" / "wordnet"


def add_arguments(p) -> None:
    add_common_arguments(p, "sentences per step, half of each kind", "weights/zoo/mini-electra-detector")
    p.add_argument("--sentences", type=int, default=60_000)
    p.add_argument("--wordnet", type=Path, default=None, help="WordNet's usr/share/wordnet (default: unpacked "
                   "from the wordnet-base package in CORPUS/debs, fetched if absent)")


def run(args) -> int:
    args.out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(str(SHIPPED))
    disc = ElectraForPreTraining.from_pretrained(str(SHIPPED), dtype=torch.float32)
    gen = ElectraForMaskedLM.from_pretrained(str(SHIPPED / "generator"), dtype=torch.float32).eval()
    for q in gen.parameters():
        q.requires_grad_(False)
    sentences = training_sentences(args.corpus, args.sentences)
    nouns = swaps.wordnet_nouns(wordnet_folder(args))
    noun_pool = [m.group().lower() for s in sentences for m in swaps.nouns_in(s, nouns)]
    opt = torch.optim.AdamW(disc.parameters(), lr=args.lr, weight_decay=0.01)
    g = torch.Generator().manual_seed(1)
    place = Resumable(args.out)
    if place.state is not None:
        disc.load_state_dict(place.state["disc"]), opt.load_state_dict(place.state["opt"])
        g.set_state(place.state["gen_rng"])
    losses, half = [], args.batch // 2
    disc.train()
    while place.running(args.steps, args.minutes):
        rng = np.random.default_rng([7, place.step])
        chosen = [sentences[int(i)] for i in rng.choice(len(sentences), 2 * half)]
        items = items_for(chosen[half:], rng, place.step, nouns, noun_pool)
        losses.append(train_on(disc, opt, tokenizer, gen, chosen[:half], items, g,
                               args.lr * min(1.0, (place.step + 1) / max(1, 0.05 * args.steps))))
        place.count += losses[-1][1]
        place.step += 1
        if place.step % 25 == 0:
            mean = float(np.mean([x[0] for x in losses[-25:]]))
            print(json.dumps({"step": place.step, "tokens": place.count, "loss": round(mean, 4),
                              "wall_s": round(place.wall_s())}), flush=True)
        if place.step % 100 == 0:
            place.save(disc=disc.state_dict(), opt=opt.state_dict(), gen_rng=g.get_state())
    place.save(disc=disc.state_dict(), opt=opt.state_dict(), gen_rng=g.get_state())
    disc.save_pretrained(str(args.out))
    tokenizer.save_pretrained(str(args.out))
    (args.out / "record.json").write_text(json.dumps({
        "start": "the shipped mini-electra (its discriminator; the generator frozen)", "steps": place.step,
        "tokens": place.count, "batch": args.batch, "lr": args.lr, "sentences": args.sentences,
        "corruption": "half of each batch ELECTRA's (the frozen generator's samples), half single swaps: a "
                      "quarter whole, the rest half noun for noun (WordNet's nouns after a determiner), half any "
                      "word for a word of another sentence", "nouns": len(nouns),
        "wall_minutes": place.wall_s() / 60, "cpu_minutes": place.cpu_s() / 60,
        "torch": torch.__version__, "script": "scripts.zoo detector"}, indent=1) + "\n", encoding="utf-8")
    if args.install:
        install(args.out, args.corpus)
    return 0


def install(out: Path, corpus: Path, dest: Path = REPO / "weights" / "zoo" / "mini-electra-detector") -> None:
    """The trained discriminator in ``out`` -> ``dest``, measured there: the held-out detection on
    generator-corrupted text and the single-swap figures."""
    from . import objectives, rtd

    ship(ElectraForPreTraining, out, dest, SHIPPED, lambda folder: {
        "rtd_heldout": {**rtd.measure(folder, corpus), "weights": "the shipped float16 weights, read in float32",
                        "script": f"scripts.zoo rtd --folder weights/zoo/{dest.name}"},
        "swap_detection": {**objectives.electra_figures(folder), "script": "scripts.zoo objectives electra"}})


def train_on(disc, opt, tokenizer, gen, plain: list[str], items: list[dict], g, lr: float) -> tuple[float, int]:
    """One step on ELECTRA-corrupted ``plain`` and word-swapped ``items``: (loss, real tokens)."""
    for group in opt.param_groups:
        group["lr"] = lr
    loss, real_tokens = 0.0, 0
    parts = [generator_batch(tokenizer, gen, plain, g), swap_batch(tokenizer, items)]
    opt.zero_grad(set_to_none=True)
    for enc, labels in parts:
        real = enc["attention_mask"].bool()
        real_tokens += int(real.sum())
        logits = disc(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).logits
        part = F.binary_cross_entropy_with_logits(logits[real], labels[real]) / len(parts)
        part.backward()
        loss += float(part.detach())
    torch.nn.utils.clip_grad_norm_(disc.parameters(), 1.0)
    opt.step()
    return loss, real_tokens

