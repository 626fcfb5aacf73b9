"""The rule families: each watches some of what the analysis sees and reports its rules."""
