"""Copy the browser tests' screenshots that the README shows into docs/screenshots/:
one picture per tab (named by its link slug), and bertviz's head view.

    make screenshots    # runs the browser tests, then python -m scripts.readme_screenshots

Each picture is cropped to its first 1,600 px of height (the top of the tab), scaled to
900 px wide and saved as an optimised 8-bit PNG, so the repository stays small.
"""

from __future__ import annotations

import sys
from pathlib import Path

from PIL import Image

from components.shell.links import TABS

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO / "artifacts" / "screenshots"
DEST = REPO / "docs" / "screenshots"

# README picture -> the browser test screenshot it comes from: each tab's own test where it
# takes one after computing a view, else the tab as it opens (tests/e2e/test_deep_links_browser.py).
TAB_PICTURES = {
    "fill-mask": "fill-mask-two-masks",
    "lessons": "arrival-lessons",
    "why-this-guess": "attribution",
    "masking-lab": "masking-lab",
    "attention": "attention-heatmap-grid",
    "inside-one-layer": "inside-one-layer",
    "which-parts-matter": "which-parts-matter",
    "embeddings": "embeddings",
    "compare": "compare-fill-mask",
    "pre-training": "pretrain",
    "fine-tuning-search": "finetune",
    "models": "arrival-models",
    "class": "class-round",
}
assert list(TAB_PICTURES) == [tab.slug for tab in TABS], "one README picture per tab, in the tabs' order"
PICTURES = {**TAB_PICTURES, "attention-bertviz": "attention-bertviz-head"}
WIDTH, MAX_HEIGHT = 900, 1600


def main() -> int:
    DEST.mkdir(parents=True, exist_ok=True)
    missing = []
    for name, source in PICTURES.items():
        path = SOURCE / f"{source}.png"
        if not path.is_file():
            missing.append(path.name)
            continue
        image = Image.open(path).convert("RGB")
        image = image.crop((0, 0, image.width, min(image.height, int(MAX_HEIGHT * image.width / WIDTH))))
        if image.width > WIDTH:
            image = image.resize((WIDTH, round(image.height * WIDTH / image.width)), Image.LANCZOS)
        image.quantize(colors=256).save(DEST / f"{name}.png", optimize=True)
        print(f"docs/screenshots/{name}.png  <- artifacts/screenshots/{path.name}")
    if missing:
        print(f"missing (run the browser tests first): {', '.join(missing)}", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main())
