"""Write MODEL_CARD.md for every trained miniature (weights/zoo/<key>/), or print the README table.

    python scripts/zoo_cards.py            # the cards (train_zoo.py also writes them)
    python scripts/zoo_cards.py --table    # the README's summary table

Safe to re-run: the cards are a pure function of the records and data/corpus_sources.json.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from models.zoo.cards import summary_table, write_cards  # noqa: E402

if __name__ == "__main__":
    if "--table" in sys.argv:
        print(summary_table())
    else:
        write_cards()
