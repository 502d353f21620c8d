"""python -m scripts.zoo <subcommand> [options]: train, tune, install and read the mini zoo.

    python -m scripts.zoo search              # the shipped zoo's recipe on this CPU (resumes)
    python -m scripts.zoo search --status     # where each family stands
    python -m scripts.zoo install             # the finished search -> weights/zoo/ + cards
    python -m scripts.zoo <subcommand> --help

docs/zoo.md says what each subcommand does and how the shipped zoo was made.
"""

from __future__ import annotations

import argparse
import sys

import importlib

SUBCOMMANDS = {  # name: what it does (each is the module scripts/zoo/<name>.py, imported when chosen)
    "train": "train families straight to a token budget (no search) and ship them",
    "search": "the shipped zoo's recipe on this CPU: tuning search, then full runs (resumes)",
    "install": "a finished search -> weights/zoo/ with its cards",
    "gpu": "the same recipe on one GPU: pack here, run there, import here",
    "worker": "internal: one family's search and full run (started by search and gpu run)",
    "cards": "write the model cards, or print the README's table",
    "flops": "recount the shipped zoo's training FLOPs per token",
    "heads": "probes of ALBERT's sentence order (sop) and ELECTRA's detection (rtd)",
    "plateau": "one family, one named change, a short run: why a family stays on the plateau",
    "profile": "where a training step's time goes (torch.profiler)",
    "rtd": "the shipped mini-electra's replaced-token detection, read apart",
    "objectives": "NSP, SOP and ELECTRA's detector on a student's text: the heads' figures",
    "detector": "train ELECTRA's discriminator on past the budget to find a plainly wrong word",
    "nsp": "train BERT's NSP head on past the budget to read the story, not the source",
}


def parser(chosen: str | None = None) -> argparse.ArgumentParser:
    """The command's parser; only the ``chosen`` subcommand's module is imported (torch and
    transformers take seconds to import: the listing does not need them)."""
    p = argparse.ArgumentParser(prog="python -m scripts.zoo", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="subcommand", required=True, metavar="SUBCOMMAND")
    for name, what in SUBCOMMANDS.items():
        q = sub.add_parser(name, help=what, formatter_class=argparse.RawDescriptionHelpFormatter)
        if name == chosen:
            module = importlib.import_module(f"{__package__}.{name}")
            q.description = module.__doc__
            module.add_arguments(q)
            q.set_defaults(run=module.run)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    chosen = next((a for a in argv if not a.startswith("-")), None)
    args = parser(chosen).parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
