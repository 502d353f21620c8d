"""The fill-mask tab: tab.py (layout and events), plots.py (views), copy.py (text)."""
