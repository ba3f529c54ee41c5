"""What a tool call ends in: an outcome for the model and the person, or a failure to report.

Its own module so that a tool defined outside ``tools.py`` (``override_proposals``) returns the same
types without importing the table of tools that lists it.
"""

from __future__ import annotations

from dataclasses import dataclass


class ToolFailure(Exception):
    """The tool could not do what was asked; the message tells the model what to do instead."""


@dataclass
class ToolOutcome:
    ok: bool
    summary: str
    output: str
