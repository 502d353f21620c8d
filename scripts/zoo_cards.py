"""Write MODEL_CARD.md for every trained miniature (weights/zoo/<key>/), or print the README table.

    python -m scripts.zoo_cards            # the cards (train_zoo.py also writes them)
    python -m scripts.zoo_cards --table    # the README's summary table

Safe to re-run: the cards are a pure function of the records and data/corpus_sources.json.
"""

from __future__ import annotations

import argparse

from models.zoo.cards import summary_table, write_cards

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", action="store_true", help="print the README's summary table, write nothing")
    if parser.parse_args().table:
        print(summary_table())
    else:
        write_cards()
