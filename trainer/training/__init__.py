"""The training loop and what it keeps: the RL pipeline (``pipeline``), the supervised warm start
(``sft``), credit assignment, the curriculum, checkpoints and the run folder, stop requests,
metrics, and the run's view in the terminal."""
