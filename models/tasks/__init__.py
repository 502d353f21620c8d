"""Labelled tasks: task data, classifier heads and probes, their features, fine-tuning."""
