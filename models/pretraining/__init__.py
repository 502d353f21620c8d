"""Pre-training objectives: masking, the masking lab, NSP/SOP/RTD heads, loss arithmetic, the trainer."""
