"""The app's built-in sentence sets (``data/sentence_groups.json``) and their text format.

The format, read by ``parse_groups`` and written by ``groups_text``: one sentence per line,
a blank line starts a new group, a line ``# topic`` starts a new topic.
"""

from __future__ import annotations

import copy
import json
from functools import lru_cache

from ..errors import InputError
from ..registry import catalogue
GROUPS_FILE = catalogue.REPO_ROOT / "data" / "sentence_groups.json"


@lru_cache(maxsize=1)
def _groups_file() -> dict:
    with open(GROUPS_FILE, encoding="utf-8") as f:
        return json.load(f)


def sentence_groups() -> dict:
    """The app's built-in sentence sets (data/sentence_groups.json), by name: a fresh copy."""
    return {s["name"]: copy.deepcopy(s) for s in _groups_file()["sets"]}


def bank_demo() -> tuple[str, tuple[str, ...]]:
    """(word, sentences) of the "bank" demo: river banks and money banks."""
    demo = _groups_file()["bank"]
    return demo["word"], tuple(demo["sentences"])


def parse_groups(text: str) -> tuple[tuple[str, ...], tuple[int, ...], tuple[str, ...] | None]:
    """Sentences typed one per line: a blank line starts a new group, '# topic' a new topic.

    Returns (sentences, group number of each, topic of each or None when no topic is named).
    """
    if text is not None and not isinstance(text, str):
        raise InputError(f"The sentences must be a string, one per line; got {type(text).__name__}.")
    sentences, groups, topics = [], [], []
    group, topic, new_group = 0, None, False
    for line in (text or "").splitlines():
        line = line.strip()
        if not line:
            new_group = True
        elif line.startswith("#"):
            topic, new_group = line.lstrip("#").strip(), True
        else:
            if new_group and sentences:
                group += 1
            new_group = False
            sentences.append(line)
            groups.append(group)
            topics.append(topic)
    named = any(t is not None for t in topics)
    return tuple(sentences), tuple(groups), (tuple(t or "" for t in topics) if named else None)


def groups_text(name: str) -> str:
    """A built-in set (``name``: a key of ``sentence_groups()``) written in the format
    ``parse_groups`` reads; an unknown name is an ``InputError``."""
    sets = sentence_groups()
    if not isinstance(name, str) or name not in sets:
        raise InputError(f"Unknown sentence set {name!r}; choose one of: {', '.join(sets)}.")
    blocks, last_topic = [], None
    for group in sets[name]["groups"]:
        lines = []
        if group.get("topic") and group["topic"] != last_topic:
            lines.append(f"# {group['topic']}")
            last_topic = group["topic"]
        blocks.append("\n".join(lines + group["sentences"]))
    return "\n\n".join(blocks)
