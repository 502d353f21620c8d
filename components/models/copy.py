"""The Models tab's text."""

MODELS_HELP = (
    "Every model the app knows. **Embedded** models are installed by the project's setup "
    "and work with no internet. The others are the real checkpoints from the Hugging Face "
    "Hub: available when this machine can reach the Hub or has them in its Hugging Face "
    "cache (`python -m scripts.prefetch KEY` on a connected machine puts them there). A model marked "
    "**stand-in: random weights** has the real shape with random weights (`python -m scripts.standins`), "
    "for tests and benches."
)

MEMORY_HELP = (
    "What the server keeps (models, cached results, trained heads and encoders, retrieval indexes) "
    "shares one memory budget: when it is full, what was used least recently is dropped, each "
    "visitor's newest trained run last. A model bigger than the whole budget is refused."
)
