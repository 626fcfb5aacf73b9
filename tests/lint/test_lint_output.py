"""``--format sarif`` (GitHub code scanning) and ``--format github`` (workflow annotations)."""

from __future__ import annotations

import json

import fastjsonschema
import pytest

from autograd_pitfalls.lint.cli import main
from autograd_pitfalls.lint.registry import RULES

# The parts of SARIF 2.1.0 (OASIS, sarif-schema-2.1.0.json) that GitHub code scanning
# requires of an upload, as that schema states them: our own subset, not the schema file.
_MESSAGE = {"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}}
SARIF_SUBSET = {
    "type": "object",
    "required": ["version", "runs"],
    "properties": {
        "version": {"const": "2.1.0"},
        "$schema": {"type": "string", "format": "uri"},
        "runs": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["tool", "results"],
                "properties": {
                    "tool": {
                        "type": "object",
                        "required": ["driver"],
                        "properties": {
                            "driver": {
                                "type": "object",
                                "required": ["name", "rules"],
                                "properties": {
                                    "name": {"type": "string"},
                                    "rules": {
                                        "type": "array",
                                        "items": {
                                            "type": "object",
                                            "required": ["id", "shortDescription"],
                                            "properties": {
                                                "id": {"type": "string"},
                                                "shortDescription": _MESSAGE,
                                                "fullDescription": _MESSAGE,
                                                "help": _MESSAGE,
                                                "defaultConfiguration": {
                                                    "type": "object",
                                                    "properties": {
                                                        "level": {
                                                            "enum": [
                                                                "none",
                                                                "note",
                                                                "warning",
                                                                "error",
                                                            ]
                                                        }
                                                    },
                                                },
                                            },
                                        },
                                    },
                                },
                            }
                        },
                    },
                    "results": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["ruleId", "message", "locations"],
                            "properties": {
                                "ruleId": {"type": "string"},
                                "ruleIndex": {"type": "integer", "minimum": 0},
                                "level": {"enum": ["none", "note", "warning", "error"]},
                                "message": _MESSAGE,
                                "locations": {
                                    "type": "array",
                                    "minItems": 1,
                                    "items": {
                                        "type": "object",
                                        "required": ["physicalLocation"],
                                        "properties": {
                                            "physicalLocation": {
                                                "type": "object",
                                                "required": ["artifactLocation", "region"],
                                                "properties": {
                                                    "artifactLocation": {
                                                        "type": "object",
                                                        "required": ["uri"],
                                                        "properties": {"uri": {"type": "string"}},
                                                    },
                                                    "region": {
                                                        "type": "object",
                                                        "required": ["startLine"],
                                                        "properties": {
                                                            "startLine": {
                                                                "type": "integer",
                                                                "minimum": 1,
                                                            },
                                                            "startColumn": {
                                                                "type": "integer",
                                                                "minimum": 1,
                                                            },
                                                        },
                                                    },
                                                },
                                            }
                                        },
                                    },
                                },
                            },
                        },
                    },
                },
            },
        },
    },
}


@pytest.fixture
def sources(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    script = tmp_path / "train.py"
    script.write_text("import torch\nloss = torch.ones(3).sum()\nprint(loss.data[0])\n")
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("import torch\nfrom torch.autograd import Variable"),
        nbformat.v4.new_code_cell("x = Variable(torch.ones(1))"),
    ]
    notebook.cells[1].id = "legacy"
    nbformat.write(notebook, tmp_path / "lesson.ipynb")
    return tmp_path


def test_sarif_output_has_the_shape_code_scanning_reads(sources, capsys, monkeypatch):
    monkeypatch.chdir(sources)
    assert main(["--format", "sarif", "--select", "ALL", "."]) == 1
    log = json.loads(capsys.readouterr().out)
    fastjsonschema.compile(SARIF_SUBSET)(log)
    (run,) = log["runs"]
    rules = run["tool"]["driver"]["rules"]
    assert [rule["id"] for rule in rules] == list(RULES)
    results = {result["ruleId"]: result for result in run["results"]}
    assert set(results) == {"AGP103", "AGP110"}
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
    script = results["AGP103"]["locations"][0]["physicalLocation"]
    assert script == {
        "artifactLocation": {"uri": "train.py"},
        "region": {"startLine": 3, "startColumn": 7},
    }
    cell = results["AGP110"]
    assert cell["locations"][0]["physicalLocation"]["region"] == {"startLine": 1}
    assert cell["properties"] == {"cell": "legacy", "cellLine": 1}
    assert cell["message"]["text"].startswith("cell legacy, line 1: `Variable(t)`")


def test_a_rule_off_by_default_is_described_as_off(capsys, sources, monkeypatch):
    monkeypatch.chdir(sources)
    main(["--format", "sarif", "--select", "ALL", "."])
    rules = json.loads(capsys.readouterr().out)["runs"][0]["tool"]["driver"]["rules"]
    levels = {rule["id"]: rule["defaultConfiguration"]["level"] for rule in rules}
    assert levels["AGP104"] == "none" and levels["AGP101"] == "warning"


def test_github_annotations_are_workflow_commands(sources, capsys, monkeypatch):
    monkeypatch.chdir(sources)
    assert main(["--format", "github", "."]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(
        "::warning file=lesson.ipynb,title=AGP110 a legacy `Variable` wrapper::"
    )
    assert "cell legacy, line 1: " in lines[0]
    assert lines[1].startswith("::warning file=train.py,line=3,col=7,title=AGP103 ")
    assert all("\n" not in line for line in lines)
