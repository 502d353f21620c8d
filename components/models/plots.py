"""The Models tab's table: the registry in, a DataFrame out (no Gradio, no model calls)."""

from __future__ import annotations

import pandas as pd

from models import ModelSpec

from . import copy


def models_frame(models: tuple[ModelSpec, ...]) -> pd.DataFrame:
    """The registry as a table: what each model is, where it comes from, can it run here."""
    return pd.DataFrame(
        [
            {
                "key": m.key,
                "model": m.display_name,
                "family": m.family,
                "fill-mask": "yes" if m.can("mlm") else "no (no MLM head)",
                "available here": ("yes" if m.available else "no") + (" (default)" if m.default else ""),
                "why": m.availability,
                "provenance": m.provenance,
            }
            for m in models
        ]
    )



def memory_markdown(report) -> str:
    """The server's memory budget and what each part keeps now (a ``memory_budget()`` report)."""
    def gib(n: int) -> str:
        return f"{n / 2**30:.2f} GiB"

    parts = ", ".join(f"{part} {n} ({gib(b)})" for part, n, b in report.parts if n)
    return (f"**Memory budget: {gib(report.budget_bytes)}** ({report.source}, `ENCODER_LAB_MEMORY_MB`); "
            f"kept now: {gib(report.used_bytes)}" + (f": {parts}" if parts else "") +
            f"; dropped to stay within it since the start: {report.dropped}.  \n{copy.MEMORY_HELP}")
