"""The mini zoo's one command: ``python -m scripts.zoo <subcommand>`` (docs/zoo.md).

One module per subcommand, each with ``add_arguments(parser)`` and ``run(args)``;
``__main__`` joins them. The corpus they train on is built apart
(``python -m scripts.build_corpus``: the offline model's pre-training reads it too).
"""

import os

# Threads that wait for work sleep instead of spinning: on a shared machine (or under nice)
# spinning OpenMP threads made training ~10x slower here (450 vs 5,000 tokens/s). Set before
# any subcommand's module imports torch.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
