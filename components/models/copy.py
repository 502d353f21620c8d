"""The Models tab's text."""

MODELS_HELP = (
    "Every model the app knows. **Embedded** models are installed by the project's setup "
    "and work with no internet. The others are the real checkpoints from the Hugging Face "
    "Hub: available when this machine can reach the Hub or has them in its Hugging Face "
    "cache (`python -m scripts.prefetch KEY` on a connected machine puts them there)."
)
