"""What ``scripts.zoo detector`` and ``scripts.zoo nsp`` share: their options, and a run
kept in ``OUT/run.ckpt`` that resumes where it stopped, its wall and CPU time summed across
sittings."""

from __future__ import annotations

import json
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]


def add_common_arguments(p, batch_help: str, installs: str) -> None:
    p.add_argument("--corpus", type=Path, default=REPO / ".cache" / "corpus")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--minutes", type=float, default=0.0, help="stop after this many wall minutes (0: none)")
    p.add_argument("--batch", type=int, default=32, help=batch_help)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--install", action="store_true", help=f"then ship it as {installs}")


class Resumable:
    """A run's place: ``step``, ``count`` (what it counts: tokens, pairs) and its time so far;
    ``state`` holds what the last checkpoint saved besides (None on a fresh start)."""

    def __init__(self, out: Path):
        self.path = out / "run.ckpt"
        self.step, self.count, self.before = 0, 0, {"wall_s": 0.0, "cpu_s": 0.0}
        self.state = torch.load(self.path, weights_only=False) if self.path.is_file() else None
        if self.state is not None:
            self.step, self.count, self.before = self.state["step"], self.state["count"], self.state["elapsed"]
        self.wall0, self.cpu0 = time.time(), time.process_time()

    def wall_s(self) -> float:
        return self.before["wall_s"] + time.time() - self.wall0

    def cpu_s(self) -> float:
        return self.before["cpu_s"] + time.process_time() - self.cpu0

    def running(self, steps: int, minutes: float) -> bool:
        return self.step < steps and not (minutes and self.wall_s() > 60 * minutes)

    def save(self, **state) -> None:
        torch.save({**state, "step": self.step, "count": self.count,
                    "elapsed": {"wall_s": self.wall_s(), "cpu_s": self.cpu_s()}}, str(self.path) + ".tmp")
        Path(str(self.path) + ".tmp").replace(self.path)


def ship(model_class, out: Path, dest: Path, start: Path, measure) -> None:
    """The model trained in ``out`` -> ``dest`` in float16 (as the zoo's weights) with the tokenizer
    files of ``start`` (the zoo model it was trained from) as they are, its record updated with
    ``measure(dest)`` (figures taken on the shipped weights), and its card."""
    import shutil

    from models.zoo.cards import past_budget_card

    dest.mkdir(parents=True, exist_ok=True)
    model = model_class.from_pretrained(str(out), dtype=torch.float32)
    record = json.loads((out / "record.json").read_text(encoding="utf-8"))
    record["parameters"] = sum(p.numel() for p in model.parameters())
    model.to(torch.float16).save_pretrained(str(dest))
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(start / name, dest / name)
    record.update(measure(dest))
    (dest / "record.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    (dest / "MODEL_CARD.md").write_text(past_budget_card(dest.name, record, dest), encoding="utf-8")
    print(f"installed: {dest} (record.json, MODEL_CARD.md)")
