"""nbgrader preprocessors of the hardened autograde and feedback, one per module."""
