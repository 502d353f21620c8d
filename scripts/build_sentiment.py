"""Write ``data/tasks/sentiment.tsv`` from the templates of ``data/written/sentiment.json``.

The sentences and their labels are written for this project (CC0), not taken from a model or
a review site: each template says how its label follows from the adjective it is filled with
("same": the adjective's polarity, "flip": the opposite, as in "The film was not awful at
all."), or that it is positive or negative whatever fills it ("The meal was worth every
penny."). Each template gives ``PER_TEMPLATE`` sentences: half with a positive and half with a
negative adjective (fixed-label templates: one per thing), the fills chosen in a hash order, so
the output is the same on every machine and both labels are balanced in each split. Templates
are held out whole: the data file's ``split`` of a template is where all its sentences go.

Each line is ``split<TAB>label<TAB>sentence``.
Usage: python -m scripts.build_sentiment [--out data/tasks]
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

from scripts.build_tasks import REPO, _hash, write

TEMPLATES = REPO / "data" / "written" / "sentiment.json"
PER_TEMPLATE = 16
OPPOSITE = {"positive": "negative", "negative": "positive"}


def _filled(template: dict, thing: str, adj: str = "", other: str = "") -> str:
    return template["text"].format(thing=thing, adj=adj, other=other)


def template_sentences(spec: dict):
    """(template id, split, label, sentence) for every sentence the templates give."""
    things = spec["things"]
    for template in spec["templates"]:
        key = lambda combo: _hash(" ".join(combo), f"{template['id']}:")  # noqa: E731
        if template["rule"] in OPPOSITE:
            for thing in things[:PER_TEMPLATE]:
                yield template["id"], template["split"], template["rule"], _filled(template, thing)
            continue
        for polarity in ("positive", "negative"):
            combos = itertools.product(things, spec[polarity], spec[OPPOSITE[polarity]])
            chosen = sorted(combos, key=key)[:PER_TEMPLATE // 2]
            label = polarity if template["rule"] == "same" else OPPOSITE[polarity]
            for thing, adj, other in chosen:
                yield template["id"], template["split"], label, _filled(template, thing, adj, other)


def sentiment_rows(spec: dict) -> list[tuple[str, str, str]]:
    rows = [(split, label, text) for _, split, label, text in template_sentences(spec)]
    return sorted(rows, key=lambda row: (row[0] != "train", _hash(row[2], "order:")))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "data" / "tasks")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    write(args.out / "sentiment.tsv", sentiment_rows(json.loads(TEMPLATES.read_text(encoding="utf-8"))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
