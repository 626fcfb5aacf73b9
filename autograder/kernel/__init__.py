"""Runs inside the student's sandbox; imports nothing else from ``autograder``."""
