"""Class rounds: a whole class guesses a blank, then sees its answers beside the model's."""
