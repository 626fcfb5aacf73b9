"""What a learner runs: ``make check`` (validate) and ``make lab``."""
