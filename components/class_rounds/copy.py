"""The Class tab's and the round page's words."""

TEACHER_HELP = """\
**Guess first, then see the model.** Type a sentence with one [MASK], open a round, and put
this page on the projector: the class opens the link (or types the code) on their phones and
each sends one word for the blank. Watch the guesses arrive, hide one if it should not be on
screen, then reveal the model's answer beside the class's: the class's average −log p is the
masked-LM loss of its own answers. Rounds are deleted a day after they open (on a Hugging Face
Space they live as long as its disk)."""
EXAMPLE = "The students opened their [MASK] and started to write."
SENTENCE_LABEL = "Sentence with one [MASK]"
MINUTES_LABEL = "Minutes to guess"
OPEN = "Open a round"
REVEAL = "Reveal the model's answer"
CLOSE = "Close the guesses"
HIDE_LABEL = "Hide a guess from the screen"
HIDE = "Hide this guess"
EXPORT = "Export the round as CSV"
LINK_LABEL = "Link for the class"
CHART_LABEL = "The class's guesses and the model's"
NO_ROUND = "No round is open on this page: type a sentence and open one."

STUDENT_TITLE = "Your guess"
GUESS_LABEL = "One word for the blank"
SEND = "Send"
WAITING = "Sent: {guess}. You can change it until the teacher closes the round; the model's answer shows here when the teacher reveals it."
CHANGED = "Changed to {guess}. Only your latest guess counts."
NOT_YET = "Type one word for the blank, then press Send."
CLOSED = "The round is closed: wait for the teacher to reveal the model's answer."
REVEALED = "The class's answers beside the model's."
STUDENT_CHART_LABEL = "Your class and the model"
