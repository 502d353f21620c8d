"""Install a finished search (``search``'s work folder) as the shipped zoo: weights/zoo/ and its cards.

    .venv/bin/python -m scripts.zoo install [--work .cache/zoo-local] [--out weights/zoo]

Refuses while a family is unfinished (run the same ``search`` command again). Each exported
family replaces its folder under ``--out``; each record first says once more what trained
beside it (every sitting has ended now); a new mini-albert gets its bag-of-words order
reference (``heads sop``), made from ``--corpus``; then the cards are written and the
targets table printed. ``gpu import`` installs a GPU run the same way.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from .export import clear_backend_state, write_cards_in
from .heads import REFERENCE_PAIRS
from .search import FAMILIES, WORK, finished, record_concurrency, sittings

REPO = Path(__file__).resolve().parents[2]


def add_arguments(p) -> None:
    p.add_argument("--work", type=Path, default=WORK)
    p.add_argument("--out", type=Path, default=REPO / "weights" / "zoo")
    p.add_argument("--corpus", type=Path, default=REPO / ".cache" / "corpus",
                   help="the training corpus (mini-albert's order reference is made from it)")
    reference_pairs_argument(p)


def reference_pairs_argument(p) -> None:
    p.add_argument("--reference-pairs", type=int, default=REFERENCE_PAIRS,
                   help="training pairs of mini-albert's bag-of-words order reference (the shipped one: "
                        f"{REFERENCE_PAIRS:,})")


def run(args) -> int:
    """Every family finished -> ``--out`` (the shipped folders), cards, the targets table."""
    missing = [f for f in FAMILIES if not finished(args.work, f)]
    if missing:
        raise SystemExit(f"not finished: {', '.join(missing)} (run the same 'search' command again)")
    if sittings(args.work):  # every sitting has ended now: what ran beside each, read once more
        for family in FAMILIES:
            record_concurrency(args.work, family)
    install_folders(args.work / "export", args.out, FAMILIES, args.corpus, args.reference_pairs)
    return 0


def install_folders(source: Path, out: Path, families, corpus: Path, reference_pairs: int = REFERENCE_PAIRS) -> None:
    """Each family's exported folder in ``source`` replaces its folder in ``out``; a new
    mini-albert gets its bag-of-words order reference (from ``corpus``, fitted on
    ``reference_pairs`` training pairs); then the cards of
    ``out`` are written and the targets table printed."""
    from models.zoo.cards import targets_table

    from .heads import install_reference, need_corpus

    if "mini-albert" in families:
        need_corpus(corpus)  # before anything is replaced
    out.mkdir(parents=True, exist_ok=True)
    for family in families:
        target = out / family
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(source / family, target)
        for path in target.rglob("tokenizer.json"):  # a run exported without save_tokenizer's clean-up
            clear_backend_state(path)
        print(f"{family}: installed into {target}")
    if "mini-albert" in families:
        ref = install_reference(out / "mini-albert", corpus, reference_pairs)
        print(f"mini-albert: the bag-of-words order reference, {ref['accuracy']:.1%} on {ref['pairs']:,} held-out pairs")
    write_cards_in(out)
    print(targets_table(out))
