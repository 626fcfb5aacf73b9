"""The parts the browser and cluster tests run on: one of each lesson, a and b in turn."""

from autograder.course import assignment_ids, lesson_of
from tests.support.parts import one_part_per_lesson


def test_one_part_of_each_lesson_a_and_b_in_turn():
    parts = ["01a_x", "01b_x", "02a_y", "02b_y", "03a_z", "03b_z", "07_whole"]
    assert one_part_per_lesson(parts) == ["01a_x", "02b_y", "03a_z", "07_whole"]


def test_the_course_is_covered_lesson_by_lesson():
    chosen = one_part_per_lesson(assignment_ids())
    assert [lesson_of(part) for part in chosen] == sorted({lesson_of(a) for a in assignment_ids()})
