"""Why this guess / this class: attribution methods, deletion curves, faithfulness."""
