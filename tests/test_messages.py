"""Messages in the learner's language: the catalog, its lookup, and where messages are shown.

The code raises English messages in every edition; ``autograd_pitfalls.messages`` turns
one back into its template and values and renders the translation (see
``autograder/i18n/messages.py`` for where the templates come from).
"""

from __future__ import annotations

import json
import re

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from autograd_pitfalls import explain
from autograd_pitfalls.messages import (
    LANGUAGE_VARIABLE,
    SESSION_VARIABLE,
    notebook_language,
    show_errors_in_language,
    to_regex,
    translate,
    translate_errors,
)
from autograd_pitfalls.pitfalls import PITFALLS
from autograder.course import REPO
from autograder.i18n import catalog, messages
from autograder.i18n.catalog import LANGUAGES
from autograder.learner.summary import exercise_summary
from autograder.learner.validate_button import dialog_answer
from autograder.learner.verdict import ExerciseVerdict, NotebookVerdict, format_verdict
from tests.test_i18n import terms

CHINESE = re.compile(r"[\u4e00-\u9fff]")


@pytest.mark.parametrize("language", LANGUAGES)
def test_catalog_has_every_message_of_the_code_translated(language):
    """Fails when code gains a message (`translate messages` then translates it) or loses one."""
    found = catalog.read(messages.catalog_path(language), language)
    extracted = {text for text, _, _ in messages.extract()}
    assert {m.id for m in found if m.id} == extracted, (
        "run `python -m autograder translate messages`"
    )
    assert not messages.untranslated(found), messages.untranslated(found)[:5]
    assert not found.obsolete


@pytest.mark.parametrize("language", LANGUAGES)
def test_translations_keep_every_value_and_each_pitfall_its_marker(language):
    found = catalog.read(messages.catalog_path(language), language)
    value = re.compile(r"(?<!\{)\{\d+\}(?!\})")
    for message in found:
        if message.id:
            assert set(value.findall(message.string)) == set(value.findall(message.id)), message.id
    for pitfall in PITFALLS.values():
        translated = translate(pitfall.describe(), language)
        assert translated != pitfall.describe() and translated.endswith(pitfall.marker)


def test_messages_use_the_terminology_table():
    rejected = [word for _, _, words in terms() for word in words]
    found = catalog.read(messages.catalog_path("zh-CN"), "zh-CN")
    used = [(m.id, word) for m in found if m.id for word in rejected if word in m.string]
    assert not used, used


def test_extraction_turns_f_strings_into_numbered_templates():
    source = (
        'where = f"hidden case {n} of {total}"\n'
        'assert ok, f"{name} is on {seen.device}, expected it on {device}."\n'
        'raise AssertionError(f"{where}: the answer raised {error}")\n'
        "assert ok, sorted(names)\n"
    )
    import ast

    found = list(messages._messages(source, ast.parse(source), every_raise=True))
    assert found == [
        ("{0} is on {1}, expected it on {2}.", "{0} = name, {1} = seen.device, {2} = device"),
        ("hidden case {0} of {1}: the answer raised {2}", "{0} = n, {1} = total, {2} = error"),
    ]


def test_translate_finds_the_template_and_translates_values_in_turn():
    message = "x is not a leaf: it has grad_fn=<MulBackward0>. " + explain("not-a-leaf")
    said = translate(message, "zh-CN")
    assert said.startswith("x 不是叶子张量：它有 grad_fn=<MulBackward0>。陷阱：")
    assert said.endswith("[not-a-leaf]")
    judged = (
        "hidden tests (judged by the grader): q1: not judged: the exercise is not answered yet; "
        "q2: not judged: the visible tests above failed first (AssertionError)"
    )
    assert translate(judged, "zh-CN") == (
        "隐藏测试（由评分器判定）：q1：未判定：这个练习还没有作答; "
        "q2：未判定：上面的可见测试先失败了（AssertionError）"
    )
    tensors = "expected tensor([[1., 2.],\n        [3., 4.]]), got tensor([0.])"
    assert translate(tensors, "zh-CN").startswith("应当是 tensor([[1., 2.],\n")
    assert translate("no such message here", "zh-CN") == "no such message here"
    assert translate(message, "en") == message


def test_value_templates_are_in_the_sources_and_render_inside_their_message():
    sources = "".join(path.read_text() for path in sorted((REPO / "solutions").glob("*/*.py")))
    stale = [
        text for text in messages.VALUE_TEMPLATES if text not in re.sub(r'"\n\s*"', "", sources)
    ]
    assert not stale, f"value templates no longer in solutions/: {stale}"
    moved = translate("no parameter moved on the GPU stand-in. ", "zh-CN")
    assert moved == "没有任何参数发生变化（在 GPU 替身上）。"
    triage = "B: " + messages.VALUE_TEMPLATES[3] + ". "
    said = translate(triage, "zh-CN")
    assert said.startswith("B：对损失调用 requires_grad_()") and said.endswith("（06a 第 2 节）。")


def test_04s_prediction_feedback_is_whole_in_chinese_for_a_snippet_that_raises_or_runs():
    """Each branch of 04 q1's judge gives a message its template matches, value and all."""
    head = "stack: `out = torch.stack([a[0] * 2, a[1] * 3])` then backward(): the answer is "
    runs = head + "'ok', you predicted 'raises'. " + messages.VALUE_TEMPLATES[-1]
    raises = head + "'raises', you predicted 'ok'. " + explain("stale-saved-tensor")
    for message in (runs, raises):
        said = translate(message + " (the rule of section 5)", "zh-CN")
        assert said.endswith("（第 5 节的规则）"), said
        assert not re.search(r"[A-Za-z]{4,} [a-z]{3,}", said.replace("backward()", "")), said


def test_to_regex_reads_literal_braces_and_repeated_values():
    assert to_regex("{0} maps to {{1}}").fullmatch("a maps to {1}")
    assert to_regex("{0} in, {0} out").fullmatch("float32 in, float32 out")
    assert not to_regex("{0} in, {0} out").fullmatch("float32 in, float64 out")


def test_translate_errors_rewrites_message_and_traceback():
    cell = {
        "outputs": [
            {
                "output_type": "error",
                "ename": "AssertionError",
                "evalue": "param was modified",
                "traceback": ["\x1b[31mAssertionError\x1b[0m: param was modified"],
            }
        ]
    }
    translate_errors(cell, "zh-CN")
    assert cell["outputs"][0]["evalue"] == "param 被修改了"
    assert cell["outputs"][0]["traceback"] == ["\x1b[31mAssertionError\x1b[0m: param 被修改了"]


def test_kernel_reads_its_notebooks_language(tmp_path, monkeypatch):
    notebook = tmp_path / "01a_leaf_tensors.ipynb"
    notebook.write_text(json.dumps({"metadata": {"autograd_pitfalls": {"language": "zh-CN"}}}))
    monkeypatch.delenv(LANGUAGE_VARIABLE, raising=False)
    monkeypatch.setenv(SESSION_VARIABLE, str(notebook))
    assert notebook_language() == "zh-CN"
    notebook.write_text(json.dumps({"metadata": {}}))
    assert notebook_language() == "en"
    monkeypatch.setenv(LANGUAGE_VARIABLE, "zh-CN")
    assert notebook_language() == "zh-CN"


def test_kernel_shows_a_failing_test_in_the_notebooks_language():
    shell = InteractiveShell.instance()
    try:
        assert show_errors_in_language("zh-CN")
        with capture_output() as shown:
            shell.run_cell("assert 1 == 2, 'param was modified'")
        assert "param 被修改了" in shown.stdout + shown.stderr
    finally:
        shell.set_custom_exc((), None)
    assert not show_errors_in_language("en")


def test_make_check_and_validate_speak_the_notebooks_language(tmp_path):
    exercise = ExerciseVerdict("q1", 0.0, 2.0, "not answered", "not run", ("x",))
    verdict = NotebookVerdict(
        tmp_path / "01a_leaf_tensors.ipynb", "01a_leaf_tensors", "ok", "", [exercise], [], "zh-CN"
    )
    text = format_verdict(verdict, "01a_leaf_tensors.ipynb")
    assert "1 个练习中有 0 个通过；尚未通过：q1。" in text
    assert "按评分器的方式检查 01a_leaf_tensors.ipynb" in text
    assert "得分：0/2，即评分器会给出的分数。" in text
    assert "not answered" not in text and "Points" not in text
    answer = dialog_answer(verdict.as_dict())["failed"][0]
    assert answer["source"] == exercise_summary([], ["q1"], "zh-CN")
    assert "尚未作答" in answer["error"] and CHINESE.search(answer["raw_error"])
    english = format_verdict(
        NotebookVerdict(verdict.notebook, verdict.assignment, "ok", "", [exercise]), "x"
    )
    assert "0 of 1 exercises pass; not yet: q1." in english
