"""The findings as text: flake8's lines, JSON, SARIF 2.1.0, GitHub Actions annotations.

SARIF is the format GitHub code scanning (and most CI dashboards) read: upload the file
with ``github/codeql-action/upload-sarif``. The annotations are GitHub Actions' workflow
commands, shown on the pull request's diff without any upload.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import PurePath

from autograd_pitfalls.lint.base import Finding, Rule
from autograd_pitfalls.pitfalls import PITFALLS

__all__ = ["FORMATS", "format_findings", "sarif"]

TOOL = "autograd-pitfalls-lint"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _flake8(findings: list[Finding], rules: dict[str, Rule]) -> str:
    return "".join(f"{finding.flake8_line()}\n" for finding in findings)


def _json(findings: list[Finding], rules: dict[str, Rule]) -> str:
    return json.dumps([finding.as_dict() for finding in findings], indent=2) + "\n"


def _uri(path: str) -> str:
    return PurePath(path).as_posix().removeprefix("./")


def sarif(findings: Iterable[Finding], rules: dict[str, Rule]) -> dict:
    """A SARIF 2.1.0 log of one run: the rules as the tool's rules, a result per finding.

    A finding in a notebook is reported at line 1 of the ``.ipynb`` file (a cell's lines
    are not the file's), with the cell and its line in the message and the properties.
    """
    codes = list(rules)
    results = []
    for finding in findings:
        where = f"cell {finding.cell}, line {finding.line}: " if finding.cell is not None else ""
        region = (
            {"startLine": finding.line, "startColumn": finding.column}
            if finding.cell is None
            else {"startLine": 1}
        )
        result: dict = {
            "ruleId": finding.code,
            "ruleIndex": codes.index(finding.code),
            "level": "warning",
            "message": {"text": f"{where}{finding.text}"},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": _uri(finding.path)},
                        "region": region,
                    }
                }
            ],
        }
        if finding.cell is not None:
            result["properties"] = {"cell": finding.cell, "cellLine": finding.line}
        results.append(result)
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": TOOL,
                        "rules": [
                            {
                                "id": code,
                                "shortDescription": {"text": rule.summary or rule.message},
                                "fullDescription": {"text": rule.message},
                                "help": {"text": PITFALLS[rule.pitfall].describe()},
                                "defaultConfiguration": {
                                    "level": "warning" if rule.on_by_default else "none"
                                },
                                "properties": {
                                    "tags": [rule.pitfall, rule.notebook],
                                },
                            }
                            for code, rule in rules.items()
                        ],
                    }
                },
                "results": results,
            }
        ],
    }


def _sarif(findings: list[Finding], rules: dict[str, Rule]) -> str:
    return json.dumps(sarif(findings, rules), indent=2) + "\n"


def _escape(text: str, properties: bool = False) -> str:
    """GitHub's escaping of a workflow command's message (and of its properties)."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if properties else text


def _github(findings: list[Finding], rules: dict[str, Rule]) -> str:
    lines = []
    for finding in findings:
        where = f"cell {finding.cell}, line {finding.line}: " if finding.cell is not None else ""
        place = f"line={finding.line},col={finding.column}," if finding.cell is None else ""
        title = _escape(f"{finding.code} {PITFALLS[finding.pitfall].title}", properties=True)
        message = _escape(f"{where}{finding.text} (taught in {finding.notebook})")
        lines.append(
            f"::warning file={_escape(finding.path, True)},{place}title={title}::{message}"
        )
    return "".join(f"{line}\n" for line in lines)


FORMATS = {"flake8": _flake8, "json": _json, "sarif": _sarif, "github": _github}


def format_findings(findings: list[Finding], form: str, rules: dict[str, Rule]) -> str:
    """The findings in ``form`` (a key of :data:`FORMATS`)."""
    return FORMATS[form](findings, rules)
