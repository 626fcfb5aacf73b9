"""The rule families: one module per family, each a LibCST visitor listing its rules."""
