"""The "Which parts matter" tab: knock out heads, head importance, the logit lens, causal tracing."""
