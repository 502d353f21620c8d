"""Tables of the detective-vs-storyteller views: core results in, DataFrames out.

No Gradio and no model calls. Tokens are model output and prompts user text: shown in
Dataframe cells, which Gradio renders as text.
"""

from __future__ import annotations

import pandas as pd

from models import GenerationResult


def generation_frame(result: GenerationResult) -> pd.DataFrame:
    """One row per step: the text so far, the model's candidates with p, the pick."""
    return pd.DataFrame(
        [
            {
                "step": s.step,
                "the model read": " ".join(s.model_input),
                "candidates (p over the whole vocabulary)": ", ".join(
                    f"{c.token.strip() or c.raw_token} ({c.score:.3f})" for c in s.candidates
                ),
                "picked": s.chosen.token.strip() or s.chosen.raw_token,
                "text after the step": s.text,
            }
            for s in result.steps
        ],
        columns=["step", "the model read", "candidates (p over the whole vocabulary)", "picked",
                 "text after the step"],
    )
