"""From ``solutions/`` to student notebooks: normalise, build, known wrong answers."""
