"""The model catalogue: ModelSpec and its capabilities, the specs, availability, opt-in models."""
