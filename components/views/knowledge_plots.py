"""The knowledge probe's views: a probe in, a DataFrame or a short Markdown summary out.

No Gradio and no model calls here; tokens are shown through ``show_token``.
"""

from __future__ import annotations

import pandas as pd

from models import KnowledgeProbe, ProbeItem

from ..shell.common import escape, show_token


def hit_mark(item: ProbeItem) -> str:
    """✓ when the first guess is accepted, ✓5 when one of the top 5 is, · otherwise."""
    return "✓" if item.top1 else "✓5" if item.top5 else "·"


def _top(item: ProbeItem) -> str:
    return ", ".join(show_token(t) for t in item.top)


def probe_frame(probe: KnowledgeProbe) -> pd.DataFrame:
    """One row per sentence: category, sentence, the top 5, the hit mark, the accepted answers."""
    return pd.DataFrame([{"topic": i.category, "sentence": i.text, "top 5": _top(i), "hit": hit_mark(i),
                          "accepted": ", ".join(i.answers)} for i in probe.items])


def probe_summary(probe: KnowledgeProbe) -> str:
    """Markdown: the counts overall and per category."""
    cats = "; ".join(f"{escape(c)} {t5}/{n}" for c, (n, _, t5) in probe.by_category().items() if c)
    return (f"`{probe.model_key}` on *{probe.probe_set}*: first guess right **{probe.top1_hits}/{probe.n}** "
            f"({probe.top1:.0%}), in the top 5 **{probe.top5_hits}/{probe.n}** ({probe.top5:.0%})."
            + (f"  \nTop 5 by topic: {cats}." if cats else ""))


def probe_pair_frame(a: KnowledgeProbe, b: KnowledgeProbe) -> pd.DataFrame:
    """The same sentences through two models, side by side."""
    if [i.text for i in a.items] != [i.text for i in b.items]:
        raise ValueError("the two probes hold different sentences")
    return pd.DataFrame([{"sentence": x.text, f"{a.model_key}: top 5": _top(x), f"{a.model_key}: hit": hit_mark(x),
                          f"{b.model_key}: top 5": _top(y), f"{b.model_key}: hit": hit_mark(y)}
                         for x, y in zip(a.items, b.items)])
