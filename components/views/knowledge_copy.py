"""The knowledge probe's text (Fill-mask and Compare tabs)."""

PROBE_HELP = (
    "**What does this model know?** A built-in set of cloze sentences, each typed into "
    "fill-mask as you would type it, with the model's top 5 and whether an accepted answer is "
    "among them. *facts*: 113 common facts written for this project (capitals, languages, "
    "continents, rivers and mountains, the calendar, the body, elements, famous works, "
    "science), phrased unlike the facts in the offline model's training text, so a hit needs "
    "the fact, not a remembered sentence. *everyday*: 36 everyday sentences with generous "
    "answer lists. The offline model's last stage read sentences written by this project that "
    "state these facts and scenes in other words (its model card says how): its hits show "
    "what it absorbed from them, not knowledge it found for itself."
)
PROBE_SET_LABEL = "Probe set"
PROBE_BUTTON = "Probe what it knows"
COMPARE_HELP = (
    "### What each model knows, side by side\n"
    "The same probe set through two models: each sentence's top 5 and whether it holds an "
    "accepted answer (✓ first guess, ✓5 among the top 5, · neither)."
)
COMPARE_BUTTON = "Probe both"
