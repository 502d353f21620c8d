"""UI text of the "Why this guess" tab, kept apart from its layout code."""

TAB_LABEL = "Why this guess"

HELP = (
    "## Which words made the model guess that?\n"
    "Pick a mask and a target word (empty: the model's top guess). Each method gives every "
    "word of your text a score for **p(target)**, the probability the model gives the target "
    "at that mask. Blue: the word pushed p(target) up; orange: it pushed it down; the "
    "number under each word is its score and **#1, #2, #3** mark the three highest. "
    "Grey, dashed: special tokens and masks, which are never scored or removed."
)

METHOD_LABELS = {
    "gradient_x_input": "gradient × input",
    "integrated_gradients": "integrated gradients",
    "attention_rollout": "attention rollout",
    "leave_one_out": "leave-one-out",
}

METHOD_NOTES = {
    "gradient_x_input": (
        "the gradient of p(target) with respect to each word's embedding, times the embedding "
        "(Captum's InputXGradient): how p would change for a tiny change of the word, a "
        "local, first-order guess that saturates once p is near 0 or 1."
    ),
    "integrated_gradients": (
        "gradients summed along a straight path from a **baseline** (every word replaced by "
        "the mask token) to your text (Captum's IntegratedGradients, Gauss-Legendre steps): the "
        "scores add up to p(text) − p(baseline), up to the completeness gap shown. "
        "More steps: a smaller gap, and proportionally more time."
    ),
    "attention_rollout": (
        "the mask's row of attention rollout (the Attention tab): where information may have "
        "flowed from, through the layers. It ignores the values and the MLP and is the "
        "same whatever the target: it cannot say *why* this word and not another."
    ),
    "leave_one_out": (
        "p(target) minus p(target) with that one word replaced by the mask token "
        "(occlusion): what the model actually does without the word, one word at a time. It "
        "misses words that matter only together (two words that each make the other redundant)."
    ),
}

DELETION_HELP = (
    "**Deletion check.** The scored tokens (words or word pieces) are replaced by the mask "
    "token one at a time, highest score first, and p(target) is measured after each; the dashed grey line does the same "
    "in random orders (mean of 5 seeded orders). A method whose line falls faster than "
    "random found words the model really used *on this input*: the legend's **area** "
    "(between the random and the method's curve, over the share of tokens removed) is its "
    "faithfulness here; near 0 or below means no better than chance. Leave-one-out looks at "
    "the same thing the check measures (removing words), so it has an advantage here."
)

LIMITS = (
    "**What attributions can and cannot say.** They describe this model on this one input, "
    "not language or the training data. Methods often disagree, and none is *the* explanation: "
    "each answers a different question (a gradient: sensitivity to tiny changes; integrated "
    "gradients: credit relative to a chosen baseline, so another baseline gives other scores; "
    "rollout: where attention routes information; leave-one-out: the effect of removing one "
    "word). Removing words makes inputs the model never saw in training, so a drop in p can "
    "also come from the broken sentence itself. A high score is a reason to look closer, not a "
    "proof. Over 40 held-out sentences (`bench/attribution_faithfulness.py`, figures in "
    "docs/attribution.md) the methods differ in how well they pass the deletion check."
)

EXAMPLES = [
    "She opened the [MASK] and walked into the room.",
    "The doctor told the nurse that [MASK] would be late for the operation.",
    "Paris is the capital of [MASK], and Berlin is the capital of Germany.",
    "He drank a cup of hot [MASK] before going to work.",
]
