r"""The linter's precision on public repositories: a seeded sample to read, and the table.

The corpus is fetched outside git (``build/corpus/<owner>+<name>/``, each with a ``COMMIT``
file) and linted with every rule into ``build/corpus-out/<owner>+<name>.json``::

    for d in build/corpus/*/; do
      .venv/bin/python -m autograd_pitfalls.lint --select ALL --format json --exit-zero "$d" \\
        > "build/corpus-out/$(basename "$d").json"
    done

``sample`` prints each sampled finding with the code around it, for a person to judge;
the verdicts go to ``docs/linter-verdicts.tsv`` (repository, commit, path, cell, line, rule,
verdict, reason), never the code itself. ``table`` prints, per rule, the findings now, the
verdicts read and the precision as measured, and the same for the verdicts whose finding
the rules still make (a rule tightened after the reading drops some).

Run: ``.venv/bin/python benchmarks/lint_precision.py sample`` (or ``table``).
"""

from __future__ import annotations

import argparse
import csv
import json
import random
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "build" / "corpus"
OUT = REPO / "build" / "corpus-out"
VERDICTS = REPO / "docs" / "linter-verdicts.tsv"
SEED = 39
READ_ALL_UP_TO = 12  # a rule with at most this many findings is read whole
SAMPLE = 15  # otherwise, this many, drawn with SEED


def findings() -> list[dict]:
    """Every finding of the corpus, with its repository and commit, in a stable order."""
    found = []
    for path in sorted(OUT.glob("*.json")):
        repository = path.stem
        commit = (CORPUS / repository / "COMMIT").read_text().strip()
        for finding in json.loads(path.read_text()):
            relative = Path(finding["path"]).resolve().relative_to(CORPUS / repository)
            found.append(
                {**finding, "repository": repository, "commit": commit, "path": str(relative)}
            )
    return found


def sampled(every: list[dict]) -> list[dict]:
    """The findings to read: all of a rare rule's, a seeded sample of a frequent one's."""
    by_code = defaultdict(list)
    for finding in every:
        by_code[finding["code"]].append(finding)
    chosen = []
    for code in sorted(by_code):
        items = by_code[code]
        if len(items) > READ_ALL_UP_TO:
            items = random.Random(f"{SEED}{code}").sample(items, SAMPLE)
        chosen += sorted(
            items, key=lambda f: (f["repository"], f["path"], f["cell"] or "", f["line"])
        )
    return chosen


def context(finding: dict, around: int = 6) -> str:
    """The lines around a finding (in a notebook, of its cell)."""
    path = CORPUS / finding["repository"] / finding["path"]
    if path.suffix == ".ipynb":
        cells = json.loads(path.read_text())["cells"]
        cell = next(
            c for i, c in enumerate(cells) if (c.get("id") or f"cell-{i}") == finding["cell"]
        )
        source = cell["source"]
        lines = ("".join(source) if isinstance(source, list) else source).splitlines()
    else:
        lines = path.read_text(errors="replace").splitlines()
    start = max(0, finding["line"] - 1 - around)
    shown = []
    for number in range(start, min(len(lines), finding["line"] + around)):
        mark = ">>" if number == finding["line"] - 1 else "  "
        shown.append(f"{mark}{number + 1:5} {lines[number]}")
    return "\n".join(shown)


def sample_command() -> None:
    """Prints the sampled findings with their code, for a person to judge."""
    for finding in sampled(findings()):
        where = (
            f"{finding['repository']} {finding['path']} {finding['cell'] or '-'} {finding['line']}"
        )
        print(f"==== {finding['code']} {where}\n{context(finding)}\n")


def table_command() -> None:
    """Prints the precision table from the corpus's findings and the verdicts."""
    every = findings()
    counts = Counter(finding["code"] for finding in every)
    current = {(f["repository"], f["path"], f["cell"] or "-", f["line"], f["code"]) for f in every}
    read: dict[str, Counter] = defaultdict(Counter)
    kept: dict[str, Counter] = defaultdict(Counter)
    with VERDICTS.open() as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            repository = row["repository"].replace("/", "+")
            key = (repository, row["path"], row["cell"], int(row["line"]), row["rule"])
            read[row["rule"]][row["verdict"]] += 1
            if key in current:
                kept[row["rule"]][row["verdict"]] += 1
    print(
        "| code | findings now | read | true | precision | read, still found | true | precision |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for code in sorted(set(counts) | set(read)):
        cells = []
        for verdicts in (read[code], kept[code]):
            total, true = sum(verdicts.values()), verdicts["true"]
            cells += [str(total), str(true), f"{100 * true / total:.0f}%" if total else "-"]
        print(f"| {code} | {counts[code]} | " + " | ".join(cells) + " |")
    repositories = Counter(finding["repository"] for finding in every)
    print(f"\n{len(every)} findings now, in {len(repositories)} repositories")


def main() -> None:
    """``sample`` or ``table``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["sample", "table"])
    if parser.parse_args().command == "sample":
        sample_command()
    else:
        table_command()


if __name__ == "__main__":
    main()
