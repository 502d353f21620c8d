"""Gradio UI: a folder per tab (tab.py, plots.py, copy.py), views shared by tabs in views/,
the shared shell in shell/. Calls the core only through ``models``."""

import os

# No request leaves the machine: Gradio's usage analytics and HF telemetry off.
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

# Gradio's queue rebuilds a pandas summary of its last 10,000 events (for its /monitoring
# page) after every single event: O(events) work per request, 27 % of the server's CPU time
# with 30 students typing (bench/classroom.py under py-spy). Recompute it every 1,000 events.
os.environ.setdefault("GRADIO_ANALYTICS_CACHE_FREQUENCY", "1000")

# Gradio wraps every handler call in a switch of matplotlib's backend to "agg" and back
# (utils.MatplotlibBackendMananger). With matplotlib's default backend still unresolved
# that re-resolves it on each request: 8.6 % of the server's samples under a burst of live
# fill-mask requests (py-spy). The server draws headless anyway: "agg" from the start.
os.environ.setdefault("MPLBACKEND", "agg")
