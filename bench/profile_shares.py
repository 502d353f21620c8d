"""Where a server's time goes, from a py-spy profile: shares of samples by kind of work.

    py-spy record --pid PID --format raw --rate 50 --nonblocking -o server.txt -- (during a bench)
    python -m bench.profile_shares server.txt [--top 25]

py-spy's raw format is one line per distinct stack, ``frame;frame;... count``, idle threads
left out unless asked. Each sample is counted once, under the kind (``KINDS``) of its
innermost frame that any kind matches (work in a library no kind names, numpy say, counts
for the code that called it), and the top functions by samples in which they are on the
stack (inclusive) are listed. Counts and shares only: no times, so a profile taken on a
busy machine still says how the server's own work divides.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter

# (kind, pattern on a frame "function (file:line)"); a stack counts for its innermost match
KINDS = (
    ("torch (the model forward, tensor ops)", re.compile(r"torch/|onednn\.py")),
    ("fill-mask core (tokenise, batch, top-k)", re.compile(r"models/|tokenizers/|transformers/tokenization")),
    ("transformers model code (outside torch modules)", re.compile(r"transformers/")),
    ("figures and tables (plots)", re.compile(r"components/.*plots\.py|plotly/|pandas/")),
    ("the app's handlers (components)", re.compile(r"components/")),
    ("JSON serialisation", re.compile(r"orjson|json/encoder|jsonable_encoder|json\.py|model_dump|pydantic")),
    ("Gradio pre/postprocessing and state", re.compile(r"gradio/(blocks|components|processing_utils|data_classes|state_holder|utils)\.py|gradio/components/")),
    ("Gradio routes and queue", re.compile(r"gradio/(routes|route_utils|queueing|server_messages|helpers)\.py")),
    ("HTTP server (uvicorn, starlette, h11)", re.compile(r"uvicorn/|starlette/|h11/|fastapi/|anyio/")),
    ("asyncio event loop", re.compile(r"asyncio/")),
    ("threads / other", re.compile(r".")),
)
LINE = re.compile(r"^(?P<stack>.*) (?P<count>\d+)$")


def read(path: str) -> list[tuple[list[str], int]]:
    stacks = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            match = LINE.match(line.rstrip("\n"))
            if match:
                stacks.append((match["stack"].split(";"), int(match["count"])))
    return stacks


def shares(stacks) -> tuple[int, Counter, Counter]:
    total, kinds, functions = 0, Counter(), Counter()
    for frames, count in stacks:
        total += count
        kinds[next((kind for frame in reversed(frames) for kind, pattern in KINDS[:-1] if pattern.search(frame)),
                   KINDS[-1][0])] += count
        for frame in set(frames):
            functions[frame] += count
    return total, kinds, functions


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args(argv)
    total, kinds, functions = shares(read(args.profile))
    print(f"{total} samples")
    for kind, _ in KINDS:
        print(f"  {kinds[kind] / max(total, 1) * 100:5.1f} %  {kind}")
    print(f"\ntop {args.top} functions, inclusive (share of samples with the function on the stack):")
    for frame, count in functions.most_common(args.top):
        print(f"  {count / max(total, 1) * 100:5.1f} %  {frame[:150]}")


if __name__ == "__main__":
    main()
