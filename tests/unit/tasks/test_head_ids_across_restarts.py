"""A trained head's id names that head only: not another one trained after a restart, nor one
in another replica (a session moves to another replica when its own leaves). The page keeps the
id in a text box and sends it back with every Classify; an id that another process gives to
another visitor's head would be answered by that head, silently."""

from __future__ import annotations

import os
import subprocess
import sys

from helpers import REPO

TRAIN_THEN_USE = """
import sys
from models import InputError, classify, classify_pair, train_classifier, train_pair_classifier
seed = int(sys.argv[1])
head = train_classifier("mini-bert", "fiction-speech", epochs=1, seed=seed).head_id
pair = train_pair_classifier("mini-bert", "same-source", epochs=1, seed=seed, train_size=16).head_id
print(head)
print(pair)
for use, old in ((lambda h: classify(h, "Come here at once!"), sys.argv[2]),
                 (lambda h: classify_pair(h, "A cat.", "A dog."), sys.argv[3])):
    try:
        use(old)
        print("answered")
    except InputError:
        print("refused")
"""


def _process(seed: int, head: str = "-", pair: str = "-") -> list[str]:
    """A fresh process (the server after a restart): trains a probe and a pair head, then uses
    the ids given (from an earlier process)."""
    env = {**os.environ, "ENCODER_LAB_KEEP_RUNS": "0", "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", TRAIN_THEN_USE, str(seed), head, pair], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.split()[-4:]


def test_a_head_id_from_before_a_restart_is_refused_not_answered_by_a_head_trained_since():
    head, pair, _, _ = _process(0)
    new_head, new_pair, classified, paired = _process(1, head, pair)
    assert (new_head, new_pair) != (head, pair)
    assert (classified, paired) == ("refused", "refused")
