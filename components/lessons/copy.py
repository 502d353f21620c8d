"""UI text of the Lessons tab: the steps of the story the app teaches, in order.

Each step: a few sentences, one thing to try in its live view, and a question with its
answer (revealed on demand). Plain data, no Gradio: ``components.shell.links`` reads the slugs.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import before_bert_copy

# The four training steps' default runs: short, so that each opens computed within seconds
# on two CPU cores (the app computes them in the background after start-up); the full
# sections of the Fine-tuning & search tab run longer.
SENTENCE_STEPS = 60  # batches of 16 triplets (anchor, positive, negative)
PAIR_EPOCHS, PAIR_TRAIN = 20, 800  # probe epochs over that many training pairs
SPAN_STEPS, SPAN_RATE = 60, 1e-3  # batches of 16 questions; the Fine-tuning tab's rate is 1e-4
DISTILL_STEPS, DISTILL_STUDENT = 30, "1x64"  # per student, batches of 32 sentences
# No lesson run trains longer, whatever steps are asked for; the defaults need far less on an
# idle machine, and this much on a loaded one (a run cut short would show fewer steps).
LESSON_SECONDS = 120


@dataclass(frozen=True)
class Step:
    slug: str  # in links: ?lesson=<slug> (or the step's number)
    title: str
    text: str  # Markdown
    try_this: str
    question: str
    answer: str


TAB_LABEL = "Lessons"
INTRO = (
    "## Lessons: how an encoder works, in seventeen steps\n"
    "Each step explains one idea and opens a live view already computed on an example. Edit "
    "its inputs and press its button to recompute; then answer the check-yourself question "
    "before you reveal the answer. Go in order with **Previous / Next**, or jump with the "
    "step list. Every view also has a full tab of its own."
)
REVEAL = "Reveal the answer"
WAITING = (
    "This step needs a model that is not available on this machine: {what}. The step "
    "opens when one is (the mini zoo trained into `weights/zoo/`, or a Hub model cached)."
)
NEEDS = "a model with the head this step uses"
LIVE_STEPS = ("sentence-encoder", "sentence-pairs", "span-head", "distillation")  # they train a model live
LIVE_NEEDS = "a small encoder to train live (one of the mini zoo's, with a masked-LM head)"

STEPS = (
    Step(
        "encoder-vs-decoder",
        "Encoder vs decoder: the detective and the storyteller",
        "An **encoder** (BERT), the detective, reads the whole text at once: each position sees both "
        "sides, and it is trained to fill blanks. A **decoder** (GPT), the storyteller, reads left to "
        "right: each position sees only the pieces before it, and it is trained to give the next one. "
        "Here the two are twins trained by this project, `mini-modernbert` and `mini-decoder`: the same "
        "tokenizer, shape, corpus and number of training tokens; the objective is what differs (their cards "
        "give the rest, such as the precision each trained in). Below, the "
        "detective fills the blank; the storyteller reads the words before the blank, gives its next "
        "piece and goes on. The table measures both on held-out tasks, each beside the baseline it must "
        "beat, and the rule of thumb under it (classify, retrieve, tag: an encoder; continue, chat, "
        "translate: a decoder) is read against those figures. The last chart is a second exhibit: the "
        "encoder forced to read only the left through a causal mask it never trained with, which mixes "
        "lost context with an unfamiliar way of reading: a handicapped detective, not a storyteller.",
        "Move the [MASK] to the end of the sentence: now both models answer the same question, what "
        "comes after these words. Compare their guesses, then move it back to the middle.",
        "Which of the two would you use to sort support tickets into categories, and which to draft a "
        "reply to one?",
        "By the rule of thumb, sorting tickets is classification: an encoder, which reads each ticket whole. "
        "Read the table's probe rows before you trust it: on these two miniatures, frozen features sort "
        "texts about as well from either model, so here the rule's evidence is the blank-filling row, "
        "where reading both sides wins. Drafting a reply is continuation: a decoder, the one trained to "
        "write the next piece after the text so far (the table's next-piece row).",
    ),
    Step(*before_bert_copy.STEP_FIELDS),
    Step(
        "tokens-embeddings",
        "Tokens and the input embeddings",
        "The tokenizer cuts text into pieces from a fixed vocabulary (rare words become several "
        "pieces) and adds special tokens such as [CLS] and [SEP]. Each piece becomes a vector: "
        "its **token embedding**, plus a **position embedding** for where it stands, plus a "
        "**segment embedding** for which sentence of a pair it belongs to. The sum (then a "
        "LayerNorm) is all the first layer receives. The check below recomputes the sum and "
        "compares it with what the model's own embedding layer produced.",
        "Give a second sentence: the segment rows change from A to B after the first [SEP].",
        "Two identical words at different places in a sentence: do they enter the first layer "
        "as the same vector?",
        "No. Their token embeddings are equal, but their position embeddings differ, so the "
        "sums differ. (Models with rotary positions, such as ModernBERT, add position inside "
        "attention instead, and have no position row here.)",
    ),
    Step(
        "attention",
        "Attention: where each token looks",
        "In every layer, each head lets every token take a weighted average of the others' "
        "vectors; the weights (one row per token, summing to 1) come from comparing a query "
        "with every key. The heatmap shows one head's weights: row = the token looking, column "
        "= the token looked at. Many heads look at [CLS], [SEP] or the next token; a few follow "
        "meaning. Attention weights show where information can flow, not why the model decides "
        "what it decides.",
        "Change the layer and head: find a head that puts most weight on the previous or the "
        "next token.",
        "What does each row of the heatmap add up to, and why?",
        "Each row sums to 1: the weights are a softmax over the positions the token may look "
        "at (all of them, for an encoder).",
    ),
    Step(
        "knock-out-a-head",
        "Knock out a head: which parts cause the answer",
        "Attention weights say where a head looks, not whether the answer needs it. To find out, "
        "**knock the head out**: set its part of the layer's output to zero (its slice of the input "
        "to the attention output projection), in that layer only, and read the blank again. Most "
        "heads alone change the answer little: the others carry the same information. The bars "
        "show the top guesses with every head and without the one chosen; the note gives "
        "p(answer) both ways.",
        "Try several heads of the last layer, then of the first: which layer's heads move the "
        "answer more?",
        "Knocking out one head barely changes the answer. Does that prove the head does nothing?",
        "No. Other heads may carry the same information (redundancy), so the answer survives "
        "without any one of them; knocking out several together can change it a lot. A small "
        "effect alone says the head is not needed on its own, not that it is unused.",
    ),
    Step(
        "answer-across-layers",
        "Where the answer appears across layers",
        "The MLM head reads the last layer. The **logit lens** reads every layer through that same "
        "head: the embeddings, then each layer's output, each turned into guesses for the blank "
        "exactly as the model turns its last layer into its answer. The table shows each layer's "
        "top guesses and the probability of the final answer; the curve shows when the answer "
        "appears. Early layers mostly give frequent words; the answer usually appears in the last "
        "layers.",
        "Try a fact (“The capital of France is [MASK].”) and a grammar blank (“She [MASK] to "
        "school every day.”): does one of them settle in an earlier layer?",
        "Why does the last row of the table always match fill-mask's answer?",
        "The last row reads the last layer's output, which is exactly what the MLM head reads when "
        "the model fills the blank: same state, same head, same answer. The other rows read "
        "earlier states through that head, which the head was never trained on.",
    ),
    Step(
        "masking",
        "Masking: 15 %, and 80 / 10 / 10",
        "BERT learns by fixing corrupted text. In each sentence it **selects 15 %** of the "
        "tokens (never the special ones). Of those, **80 %** become [MASK], **10 %** a random "
        "token, and **10 %** stay as they were; the model must give the original token at every "
        "selected position. The random and kept ones stop it from learning that only [MASK] "
        "needs predicting, since [MASK] never appears when the model is used. With dynamic "
        "masking (RoBERTa) each epoch draws a fresh selection.",
        "Change the seed to draw again, or raise the rate: at 0.5, how much of the sentence is "
        "left to read?",
        "A selected token that was kept unchanged: does it still count in the loss?",
        "Yes. Every selected position is scored, whatever the model saw there; unselected "
        "positions cost nothing.",
    ),
    Step(
        "mlm-loss",
        "The MLM loss",
        "At each selected position the model gives a score (logit) to every token of its "
        "vocabulary; a softmax turns them into probabilities. The loss there is −log p(original "
        "token): 0 when the model is sure and right, large when it gave the right token little "
        "probability. The MLM loss is the mean over the selected positions only. The table "
        "shows each selected position; below it, the arithmetic for one of them, step by step.",
        "Change the seed so that other tokens are selected: which kind of word costs the most?",
        "The model gives the right token probability 0.5. What is the loss at that position, "
        "in nats?",
        "−ln 0.5 ≈ 0.693 nats. (p = 1 gives 0; p = 0.01 gives about 4.6.)",
    ),
    Step(
        "nsp",
        "Next-sentence prediction, and why RoBERTa dropped it",
        "BERT had a second task: given sentences A and B, tell whether B really followed A or "
        "was a random sentence (50 % each), read from the [CLS] vector. RoBERTa's authors "
        "tested it by ablation: trained on runs of contiguous full sentences without the NSP "
        "loss, their model matched or slightly beat the versions trained with it on downstream "
        "tasks (and pairs of single sentences hurt), so they dropped it. ALBERT's authors gave "
        "a reason why it teaches little: a random B is usually on another topic, so the task "
        "can be solved by topic alone. ALBERT kept a pair task but made it harder: **sentence "
        "order** (both sentences are real neighbours; are they swapped?). The model here is the "
        "first one available with either head. Under the table, its accuracy on held-out pairs "
        "of single sentences from novels, stories and speeches, with a random B drawn two ways: "
        "from another source (another kind of text, as BERT drew them) and from elsewhere in the "
        "same source (the same kind of text, where only the story links A to B). Where mini-bert-nsp "
        "is here (mini-bert's head trained on past the zoo's budget with random B's of the same kind "
        "of text), the table reads each pair with it too.",
        "Write a B on the same topic that does not follow A: is the head fooled?",
        "Why is telling a random sentence from the next one easier than telling the order of "
        "two neighbours?",
        "A random sentence usually differs in topic, which is easy to spot; two neighbours "
        "share the topic, so only order cues (reference, tense, discourse) are left.",
    ),
    Step(
        "variants",
        "The variants: one family's idea at a time",
        "RoBERTa, DistilBERT, ALBERT, ELECTRA, DeBERTa and ModernBERT change one or a few of "
        "BERT's choices: the masking, the training task, sharing weights, the attention or the "
        "positions. This project trained a miniature of each on the same corpus for the same "
        "number of training tokens. Only the tokens are equal: the shapes differ with each "
        "family's idea (DistilBERT has half the layers, ALBERT's layers share one set of weights, "
        "ELECTRA trains a generator beside its discriminator), and so do the parameters and the "
        "FLOPs each token costs (the table's columns). A difference in score mixes an idea with "
        "what it costs. These are small models trained here on a CPU, not the published "
        "checkpoints; their scores compare ideas at this size only. Below: their learning curves, "
        "scores and costs, and one masked sentence through each.",
        "Write your own masked sentence: which miniatures agree?",
        "ELECTRA's discriminator learns from every token, BERT only from the 15 % it masked. "
        "Do the table's figures show ELECTRA ahead of BERT here?",
        "No. Its whole-word score (its generator's, the model that fills masks) is below "
        "mini-bert's, and each of its training tokens cost more FLOPs (a generator and a "
        "discriminator). ELECTRA's paper measured its advantage after fine-tuning the "
        "discriminator on downstream tasks, at far larger sizes and budgets: a fill-in-the-blank "
        "score of a miniature does not measure that, and these figures show no advantage.",
    ),
    Step(
        "pooling-retrieval",
        "[CLS] vs mean pooling, and retrieval",
        "To compare whole sentences, an encoder's token vectors are pooled into one vector: "
        "the [CLS] token's, or the mean over the tokens. The heatmaps show the cosine between "
        "every pair of sentences for both poolings; sentences of one group should be close. "
        "Which pooling works depends on how the model was trained: this one (a "
        "sentence-transformers model) was trained on mean-pooled vectors. Search uses the same "
        "vectors: the query's nearest corpus sentences, found with a FAISS index.",
        "Search with [CLS] pooling instead of mean: do the hits still match the query?",
        "Why can [CLS] pooling work badly on a model trained only with masked-language "
        "modelling?",
        "Nothing in MLM training asks the [CLS] vector to summarise the sentence (only NSP "
        "used it), so it need not place similar sentences close together.",
    ),
    Step(
        "fine-tuning",
        "Fine-tuning heads: pre-train once, reuse everywhere",
        "A task head is one linear layer on top of the encoder: C × d weights + C biases, tiny "
        "next to the body. With the encoder frozen it is a **probe** (seconds to train): how "
        "much of the task the pre-trained vectors already hold. Fine-tuning trains the body "
        "too. Here a probe learns to tell fiction from State of the Union addresses, labels "
        "taken from where each sentence comes from (`data/tasks/`); the curves show training "
        "and held-out accuracy.",
        "Classify a sentence of your own: a speech, or a line from a novel.",
        "The probe reaches high held-out accuracy with the encoder frozen. What does that tell "
        "you about the encoder's vectors?",
        "That the information separating the classes is already there, readable by a linear "
        "layer: pre-training learned it without these labels.",
    ),
    Step(
        "retrieve-then-read",
        "Retrieve, then read: an encoder finds, a reader points",
        "Why do encoders still matter beside large generators? Because they are the **cheap, "
        "checkable** half of answering from a text collection. A **bi-encoder** embeds the question "
        "once and finds the nearest passages among 18,445 corpus lines already embedded (one matrix "
        "product, exact FAISS search); a **span reader** reads `[CLS] question [SEP] passage [SEP]` "
        "for each of the k passages and points at the answer, a start and an end token. The reader "
        "here is a start/end head of 770 parameters over the same frozen encoder, trained on "
        "templated questions; the countries asked about below were held out of its training, and "
        "the question is phrased as a person would ask it, not as the templates do. Its span scores "
        "share one softmax over all k passages, so the passages compete for the answer. The chart "
        "times each part on this machine, beside the zoo's decoder writing after the same question "
        "where it is trained here: the decoder pays a forward pass for every piece it writes, and its "
        "answer points to no passage.",
        "Ask “Where does Iceland's government sit?”, then “Who painted the Mona Lisa?”: the search "
        "finds passages that hold the answer, but the reader learnt only capitals, elements and "
        "definitions; which span does it point at? Set k to 1: which part of the cost shrinks?",
        "The bi-encoder embedded the 18,445 passages once, before any question. Why does that make "
        "search cheap at question time, and why could a cross-encoder (question and passage read "
        "together) not be used for the search itself?",
        "At question time only the question is encoded (one short forward pass); the search is a dot "
        "product with stored vectors. A cross-encoder's score needs the question and the passage in "
        "one input, so it would run the whole encoder once per passage for every question: 18,445 "
        "forward passes. That is why the reader, which reads question and passage together, only "
        "reads the k passages the cheap search found.",
    ),
    Step(
        "sentence-encoder",
        "From encoder to sentence encoder: siamese training",
        "Mean-pooled vectors of an encoder trained only on masked-LM are **not a metric space**: "
        "nothing asked two sentences of the same meaning to land close. **Sentence-BERT** runs the "
        "*same* encoder (shared weights: a siamese network) on an anchor a, a positive p and a "
        "negative n, and trains it with the **triplet loss** max(0, ‖a − p‖² − ‖a − n‖² + margin) on "
        "unit vectors: the anchor must be closer to its positive than to its negative by the margin. "
        "The triplets come from WordNet 3.0: two usage examples of one sense (synset) are anchor and "
        "positive; the negative is an example of another sense of the same word (or of a random "
        "sense), and every other sentence of the batch from another sense serves as a negative too. "
        "A **copy** of the model is trained (the shared one never changes), then scored on "
        "the senses of words **never trained on**: the matrices show a few of them before and after, "
        "and the ROC AUC is the chance that a same-sense pair scores above a different-sense pair. "
        f"This is a short run: {SENTENCE_STEPS} steps of 16 triplets ({SENTENCE_STEPS * 48:,} sentences "
        "encoded), about ten seconds on two CPU cores; the Fine-tuning & search tab runs up to 1000 "
        "steps. "
        "Your own groups below are scored with the model before and with the copy after.",
        "Switch to the contrastive loss, or triple the steps: does the held-out AUC rise further?",
        "With margin 0.5, a triplet's squared distances are ‖a − p‖² = 0.8 and ‖a − n‖² = 1.0. What is "
        "its loss? And once the negative has moved to ‖a − n‖² = 1.5?",
        "max(0, 0.8 − 1.0 + 0.5) = 0.3: the negative is not yet farther than the positive by the margin, "
        "so the triplet pulls p in and pushes n away. At 1.5: max(0, 0.8 − 1.5 + 0.5) = max(0, −0.2) = 0: "
        "the margin is met and the triplet gives no gradient; only triplets still inside the margin "
        "teach (that is why hard negatives, such as another sense of the same word, help).",
    ),
    Step(
        "sentence-pairs",
        "Sentence pairs: [CLS] A [SEP] B [SEP] → a label",
        "Many tasks read two texts: is B a paraphrase of A, does B follow from A, does B define A? "
        "BERT reads both in **one input**, `[CLS] A [SEP] B [SEP]`, and adds a **segment (token "
        "type) embedding** to every token: 0 for A's, 1 for B's. Attention then mixes the two "
        "sentences in every layer, and one linear head on the [CLS] state gives the label (C × d + C "
        "parameters, as transformers' `*ForSequenceClassification`). Here the task is "
        "*same-source*: do A and B come from the same one of the corpus's six sources (Jane Austen, "
        "Moby-Dick, State of the Union addresses, the World English Bible, WordNet's usage examples, "
        "the Jargon File)? Half the pairs share a source; the held-out pairs are built from other "
        "sentences than the training pairs (the encoder read all of them in its masked-LM "
        "pre-training, but never their sources). A head must beat its **majority baseline**, the "
        "score of always answering the most frequent label. This is a "
        f"short run: a probe on the frozen encoder, {PAIR_EPOCHS} epochs over {PAIR_TRAIN} training "
        "pairs, a few seconds on two CPU cores.",
        "Keep A and give B a sentence from a State of the Union address (“We must work together in "
        "this Congress to lower taxes for American families.”): does the head say “different”? Then "
        "try a verse of the Bible against a line of Moby-Dick: which sources does the head confuse?",
        "The model's hidden size is d = 128 and the task has 2 labels. How many parameters does the "
        "head have? If 50 % of the held-out pairs are “same”, what accuracy shows the head read "
        "nothing from the pair?",
        "2 × 128 + 2 = 258 (a weight per label and dimension, one bias per label). 50 %: always "
        "answering one label scores exactly its share, so only the points above 50 % come from "
        "reading A and B together.",
    ),
    Step(
        "span-head",
        "Extractive QA: a start and an end over the context",
        "To answer a question from a text, a **span head** gives every token of the input "
        "`[CLS] question [SEP] context [SEP]` two logits: a start and an end score (one linear layer, "
        "2 × d + 2 parameters, transformers' `qa_outputs`). A softmax over the context's tokens "
        "turns each into a probability; the answer is the span with the best P(start) × P(end), its "
        "end not before its start. The questions are **templated** by the project from structured "
        "records (a country's capital, an element's symbol, a word's definition), held out by "
        "entity, so no held-out answer was ever trained on. Scores: exact match and token F1, "
        "against two baselines that read no question (the first noun phrase, the longest word). "
        f"This is a short run: a copy fine-tuned {SPAN_STEPS} steps of 16 questions "
        f"({SPAN_STEPS * 16:,} questions read) at learning rate {SPAN_RATE:g} (this model is small), "
        "a few seconds on two CPU cores.",
        "Ask “Which part of the world is Peru in?” with the same context: do the start and end "
        "bars move to “South America”?",
        "Why choose the span with the best P(start) × P(end) with start ≤ end, rather than the best "
        "start and the best end taken separately?",
        "The two heads score independently: the best end can fall before the best start (no span "
        "at all) or far after it. Scoring every pair with start ≤ end (and a length limit) picks "
        "the most likely valid span; multiplying the probabilities adds the logits.",
    ),
    Step(
        "distillation",
        "Distillation: what do soft targets buy?",
        "Knowledge distillation (Hinton et al.; DistilBERT applied it to BERT): a small **student** "
        "learns from a big **teacher**'s outputs, not only from the data. At each masked position "
        "the teacher gives a whole distribution over the vocabulary; softened by a temperature T, "
        "it is the student's **soft target**. The loss here is α · T² · KL(teacher ‖ student) + "
        "(1 − α) · MLM: two of DistilBERT's three terms, without its cosine term between the "
        "student's and the teacher's hidden states. To see what that buys, two students with the "
        "**same seed, initial weights, batches and masks** train for the **same steps**: one with "
        "the soft targets, one on masked-LM alone; both are scored on the same held-out sentences. "
        "The students are tiny, narrower than the teacher, and start from random weights "
        f"(DistilBERT also copied the teacher's layers). This is a short run: {DISTILL_STEPS} steps of 32 sentences per student "
        f"({DISTILL_STEPS * 32:,} sentences each), under half a minute on two CPU cores (the teacher "
        "reads every batch too); at this length the students have only begun to learn.",
        "Set α to 1 (soft targets only), or raise the temperature: which student wins now?",
        "Why does a teacher's distribution carry more information per masked position than the "
        "one-hot label of the original token?",
        "The label says only which token was right: every other token gets the same 0. The "
        "teacher's distribution also ranks the others, e.g. “dog” 0.6, “puppy” 0.3, “cat” 0.05, "
        "“engine” ≈ 0: which wrong answers are nearly right. A temperature above 1 lifts those "
        "small probabilities so the student sees them. So each position teaches how the whole "
        "vocabulary relates to the context, not one answer.",
    ),
)

ENCODER_DECODER_TEXT = "The [MASK] barked at the postman all night."
EMBEDDINGS_TEXT = "The bank by the river."
ATTENTION_TEXT = "The animal didn't cross the street because it was too tired."
MASKING_TEXT = ("The river bank was flooded after the storm, so the walkers took the long road "
                "around the hill to the village.")
NSP_A = "The weather was cold and grey all morning."
NSP_B = "By noon it had started to snow."
VARIANTS_TEXT = "The capital of France is [MASK]."
KNOCK_OUT_TEXT = "The capital of France is [MASK]."
LAYERS_TEXT = "The capital of France is [MASK]."
POOLING_SENTENCES = (
    "A cat is sleeping on the sofa.\nA kitten naps on the couch.\n\n"
    "The stock market fell sharply today.\nShares dropped steeply this afternoon.\n\n"
    "He is playing the guitar on stage.\nA musician performs a song for the crowd."
)
SEARCH_QUERY = "The whale dived under the ship."
HEAD_TASK = "fiction-speech"
HEAD_SENTENCE = "The President asked Congress to pass the budget before the end of the year."
SENTENCE_GROUPS = (
    "She sat on the bank of the river.\nThe boat drifted towards the muddy bank.\n\n"
    "He paid the cheque into the bank.\nThe bank lent them money for a house.\n\n"
    "The plant needs water every day.\nShe grew tomatoes in the garden."
)
PAIR_TASK = "same-source"
PAIR_A = "A program that crashes the system whenever it runs out of memory is said to be buggy."
PAIR_B = "Hackers often use this term for any software that is badly designed."
SPAN_QUESTION = "What is the capital of Peru?"
READING_QUESTION = "Which city does Kenya's government work from?"  # a held-out country
SPAN_CONTEXT = "Peru lies in South America, and its capital is Lima."
