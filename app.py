"""Encoder Lab: assembles the tabs and starts the Gradio server.

    python app.py [--host HOST] [--port PORT] [--device auto|cpu|cuda|mps] [--share]
                  [--allow-model OWNER/NAME ...] [--default-model KEY]

Gradio's own environment variables (GRADIO_SERVER_NAME, GRADIO_SERVER_PORT, ...) work
too; command-line flags win over them.
"""

from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path

import components  # noqa: F401  (sets analytics/telemetry off before gradio is imported)
import gradio as gr

from components.shell import copy
from components.attention.tab import build_attention_tab
from components.attribution.tab import build_attribution_tab
from components.shell.blocks import EncoderLabBlocks
from components.class_rounds.round_page import build_round_page, wire_round_page
from components.class_rounds.tab import build_class_tab
from components.compare.tab import build_compare_tab
from components.shell.deep_links import build_link_bar, wire_links
from components.embeddings.tab import build_embeddings_tab
from components.fill_mask.tab import build_fill_mask_tab
from components.finetune.tab import build_finetune_tab
from components.lessons.tab import build_lessons_tab
from components.masking.tab import build_masking_tab
from components.models.tab import build_models_tab
from components.shell import present
from components.pretrain.tab import build_pretrain_tab
from components.shell.server import (MAX_REQUEST_BYTES, RequestSizeLimit, freeze_long_lived, limit_malloc_arenas,
                                     settle_gpu_paths)
from components.shell.vendor import routes as vendor_routes
from components.inside.tab import build_inside_tab
from components.parts.tab import build_parts_tab
from components.shell.warm_views import first_views, warm_in_background

ASSETS = Path(__file__).resolve().parent / "assets"


def build_demo() -> gr.Blocks:
    """The whole app as a ``gr.Blocks``, not launched."""
    with EncoderLabBlocks(title=copy.TITLE, analytics_enabled=False) as demo:
        with gr.Column(elem_id="lab-main"):  # hidden on a class round's link (?round=CODE)
            gr.Markdown(copy.INTRO, elem_id="app-header")
            link_bar = build_link_bar()
            with gr.Tabs(overflow_behavior="wrap") as tabs:  # thirteen tabs: every one stays in sight
                targets = [
                    build_fill_mask_tab(),
                    build_lessons_tab(),
                    build_attribution_tab(),
                    build_masking_tab(),
                    build_attention_tab(),
                    build_inside_tab(),
                    build_parts_tab(),
                    build_embeddings_tab(),
                    build_compare_tab(),
                    build_pretrain_tab(),
                    build_finetune_tab(),
                    build_models_tab(),
                    build_class_tab(),
                ]
        round_page = build_round_page()
        wire_links(demo, tabs, targets, *link_bar)
        wire_round_page(demo, round_page)
    demo.first_views = first_views(targets)  # computed in the background after start-up (main)
    demo.queue(default_concurrency_limit=2, max_size=64)
    return demo


def launch_kwargs() -> dict:
    """Theme and assets: system fonts only, so nothing is fetched from outside; projector
    mode, the dark theme's charts and the exports (``components/shell/present.py``)."""
    from starlette.middleware import Middleware

    return {
        "theme": present.theme(),
        "css_paths": [ASSETS / "style.css", present.STYLE],
        "head": present.head(),
        "max_file_size": MAX_REQUEST_BYTES,  # the app takes no uploads; bound them anyway
        # Gradio keeps a copy of every component's config per browser/API session (~2 MB
        # here) and, by default, 10,000 sessions; the app keeps no per-session state of its
        # own (no gr.State), so a smaller LRU bounds memory at no cost to users.
        "state_session_capacity": int(os.environ.get("ENCODER_LAB_SESSIONS", 256)),
        # Gradio's run history keeps every call's inputs and outputs (the texts typed, the
        # charts' data) in the browser's localStorage, up to 100 calls, and parses and rewrites
        # that whole list on every event, so each event costs more as a visit goes on. On a
        # classroom's shared computers it would also keep each student's texts after they
        # leave. Off unless the operator sets Gradio's own GRADIO_RUN_HISTORY=true.
        "run_history": os.environ.get("GRADIO_RUN_HISTORY", "false").strip().lower() == "true",
        "app_kwargs": {
            "middleware": [Middleware(RequestSizeLimit, max_bytes=MAX_REQUEST_BYTES)],
            # bertviz's JavaScript at /vendor/<name>.js; plotly.js for the chart exports
            "routes": vendor_routes() + present.routes(),
        },
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Encoder Lab: explore BERT-family encoders.")
    parser.add_argument("--host", default=None, help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=None, help="port (default 7860)")
    parser.add_argument(
        "--device",
        choices=["auto", "cpu", "cuda", "mps"],
        default=os.environ.get("ENCODER_LAB_DEVICE", "auto"),
        help="where models run (default: CUDA, then MPS, then CPU)",
    )
    parser.add_argument("--share", action="store_true", help="open a public Gradio share link")
    parser.add_argument(
        "--allow-model",
        action="append",
        default=[],
        metavar="OWNER/NAME",
        help="also allow this Hugging Face Hub model (repeatable; safetensors only, no remote "
        "code). By default only the registry's models load.",
    )
    parser.add_argument(
        "--default-model",
        default=os.environ.get("ENCODER_LAB_DEFAULT") or None,
        metavar="KEY",
        help="the model every tab opens on (default: ENCODER_LAB_DEFAULT, else the first available of "
        "bert-base, minilm-mlm, splade-tiny; a stand-in only when named here)",
    )
    return parser.parse_args(argv)


def choose_default_model(key: str | None) -> None:
    """Open every tab on ``key``: a known model, available here, with an MLM head, or a
    ``SystemExit`` that says which of these it is not."""
    if not key:
        return
    from models import EncoderLabError, get_spec, list_models

    try:
        spec = get_spec(key)
    except EncoderLabError as exc:
        raise SystemExit(f"error: --default-model: {exc}") from None
    found = {m.key: m for m in list_models()}
    fill_mask = ", ".join(k for k, m in found.items() if m.available and m.can("mlm"))
    if not spec.can("mlm"):
        raise SystemExit(f"error: --default-model {key} has no masked-LM head; the app opens on a fill-mask "
                         f"model: choose one of {fill_mask}.")
    if key not in found or not found[key].available:
        why = found[key].availability if key in found else "not in the catalogue"
        raise SystemExit(f"error: --default-model {key} is not available here: {why} "
                         f"Available fill-mask models: {fill_mask}.")
    os.environ["ENCODER_LAB_DEFAULT"] = key


def prepare_embedded() -> None:
    """Install the embedded weights (what `make setup` does); the app runs without them."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "scripts.fetch_embedded"], cwd=Path(__file__).resolve().parent,
                          check=False)
    if done.returncode:
        print(f"warning: scripts.fetch_embedded failed ({done.returncode}); embedded models unavailable")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    from models import EncoderLabError, allow_hub_models, set_device

    set_device(args.device)
    settle_gpu_paths()  # fill-mask's CUDA graphs: off under ZeroGPU
    limit_malloc_arenas()
    # the app's own log (first views computed, runs kept and restored, a request's error) on stderr
    log = logging.getLogger("encoder_lab")
    if not log.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("encoder_lab: %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
    if os.environ.get("SPACE_ID"):  # on a Hugging Face Space, `make setup` never ran
        prepare_embedded()
    try:  # a bad operator setting stops the start, not every later request
        allow_hub_models(args.allow_model)
    except EncoderLabError as exc:
        raise SystemExit(f"error: {exc}") from None
    choose_default_model(args.default_model)
    demo = build_demo()
    freeze_long_lived()  # and again after the warm-up: no full collection stalls a class
    warm_in_background(demo.first_views)
    demo.launch(
        server_name=args.host,
        server_port=args.port,
        share=args.share or None,
        **launch_kwargs(),
    )


if __name__ == "__main__":
    main()
