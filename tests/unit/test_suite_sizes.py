"""A suite's sizes and one problem's own (``kerneltui suite --set PROBLEM:NAME=VALUE --scale PROBLEM:F``)."""

from __future__ import annotations

from kerneltui.core.suite.discover import SuiteItem
from kerneltui.core.suite.prepare import ProblemSizes, load_options_for
from kerneltui.core.task import LoadOptions


def test_a_problems_own_sizes_come_on_top_of_the_suites(tmp_path):
    problem = tmp_path / "1_P.py"
    problem.write_text("batch = 64\ndim = 1024\n")
    item = SuiteItem("1_P", problem, None, "x")
    suite = LoadOptions(constants=(("dim", "512"), ("other", "3")), scale=0.5)
    # The suite's --set reaches only the constants the problem defines.
    assert load_options_for(item, suite) == LoadOptions(constants=(("dim", "512"),), scale=0.5)
    # The problem's own value of a name wins; its other names add to the suite's; its factor replaces.
    own = ProblemSizes(constants=(("dim", "256"), ("batch", "8")), scale=0.25)
    assert load_options_for(item, suite, own) == LoadOptions(constants=(("dim", "256"), ("batch", "8")), scale=0.25)
    # Its own names are not filtered: a name the problem lacks is its task error when it loads.
    assert load_options_for(item, suite, ProblemSizes(constants=(("missing", "2"),))) == LoadOptions(
        constants=(("dim", "512"), ("missing", "2")), scale=0.5)
