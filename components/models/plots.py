"""The Models tab's table: the registry in, a DataFrame out (no Gradio, no model calls)."""

from __future__ import annotations

import pandas as pd

from models import ModelSpec


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

