"""Write MODEL_CARD.md for every trained miniature (weights/zoo/<key>/), or print the README's table.

    python -m scripts.zoo cards            # the cards (train and install also write them)
    python -m scripts.zoo cards --table    # the README's summary table

Safe to re-run: the cards are a pure function of the records and data/corpus_sources.json.
"""

from __future__ import annotations

from models.zoo.cards import summary_table, write_cards


def add_arguments(p) -> None:
    p.add_argument("--table", action="store_true", help="print the README's summary table, write nothing")


def run(args) -> int:
    if args.table:
        print(summary_table())
    else:
        write_cards()
    return 0
