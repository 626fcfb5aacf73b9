"""An estimate of each notebook's study time, from what its student version holds.

Method (stated in the README's table): the words of its prose (markdown cells) read at
150 words a minute, plus 1 minute per demonstration code cell (read it, run it, read its
output), plus 8 minutes per exercise (an answer cell to write; its test cells are run,
not studied). The setup cell and the exercises' test cells count for nothing. It is an
estimate of one sitting for a learner who reads everything once, not a measurement.

Run: ``.venv/bin/python benchmarks/study_time.py`` (``--notebooks DIR`` for another folder).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbgrader import utils

from autograder.demonstrations import skippable

REPO = Path(__file__).resolve().parents[1]
WORDS_PER_MINUTE = 150
MINUTES_PER_DEMO = 1
MINUTES_PER_EXERCISE = 8
ONE_SITTING = 75  # minutes: the most a notebook should ask for at once (issue 38)


@dataclass(frozen=True)
class StudyTime:
    """What one notebook holds, and the minutes it is estimated to take."""

    notebook: str
    words: int
    demos: int
    exercises: int

    @property
    def minutes(self) -> float:
        """The estimate: prose, demonstrations and exercises, in minutes."""
        return (
            self.words / WORDS_PER_MINUTE
            + self.demos * MINUTES_PER_DEMO
            + self.exercises * MINUTES_PER_EXERCISE
        )


def study_time(path: Path) -> StudyTime:
    """Counts the prose words, demonstration cells and exercises of the notebook at ``path``."""
    notebook = nbformat.read(path, as_version=4)
    words = demos = exercises = 0
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            words += len(cell.source.split())  # what is between spaces
        elif cell.cell_type == "code":
            if utils.is_solution(cell):
                exercises += 1
            elif not utils.is_grade(cell) and (not utils.is_locked(cell) or skippable(cell)):
                demos += 1  # locked: the setup cell, or a demonstration grading skips
    return StudyTime(path.stem, words, demos, exercises)


def main() -> None:
    """Prints the table of every notebook under ``--notebooks``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notebooks", type=Path, default=REPO / "notebooks")
    folder = parser.parse_args().notebooks
    times = [study_time(path) for path in sorted(folder.glob("*/*.ipynb"))]
    print(f"{'notebook':24} {'words':>6} {'demos':>6} {'exercises':>9} {'minutes':>8}")
    for time in times:
        flag = "  over one sitting" if time.minutes > ONE_SITTING else ""
        print(
            f"{time.notebook:24} {time.words:6d} {time.demos:6d} {time.exercises:9d} "
            f"{time.minutes:8.0f}{flag}"
        )
    print(
        f"method: words / {WORDS_PER_MINUTE} per minute + {MINUTES_PER_DEMO} min per demo cell"
        f" + {MINUTES_PER_EXERCISE} min per exercise; total {sum(t.minutes for t in times):.0f}"
    )


if __name__ == "__main__":
    main()
