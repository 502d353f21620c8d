"""The Inside one layer tab: tab.py (layout and events), plots.py (views), copy.py (text)."""
