"""The finetune tab: tab.py (layout and events), plots.py (views), copy.py (text)."""
