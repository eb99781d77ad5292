"""The start-up line of a process that confines itself (`confine.confine` writes it), and how a
reader tells what it says: the words are written here once, for the writer and every reader
(tests/confinement/test_confine_line.py parses every line the writer makes).

A line is `<process>: <outcome>...`: `confined (Landlock ABI ...)`, `unconfined: <why>`, or
`refusing to start...`.
"""

from __future__ import annotations

from collections.abc import Collection

CONFINED = "confined"
UNCONFINED = "unconfined"
REFUSED = "refusing to start"
OUTCOMES = (CONFINED, UNCONFINED, REFUSED)


def outcome_of(text: str, processes: Collection[str]) -> str | None:
    """The outcome a start-up line of one of `processes` states; None for any other line."""
    process, colon, said = text.partition(": ")
    if not colon or process not in processes:
        return None
    return next((o for o in OUTCOMES if said == o or said.startswith((f"{o} ", f"{o}:"))), None)
