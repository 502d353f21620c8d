"""Gradio UI: one module per tab, plus pure plot builders. Calls the core in ``models``."""

import os

# No request leaves the machine: Gradio's usage analytics and HF telemetry off.
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
