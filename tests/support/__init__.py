"""Test data generators: fixture and adversarial submissions (not runtime code)."""
