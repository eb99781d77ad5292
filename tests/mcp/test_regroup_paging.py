"""The fallback's paging ends on a service that never does (svc_mcp.core.regroup.page_records):
empty pages each with a new cursor, or the same cursor handed back, end as a partial answer."""

from __future__ import annotations

from collections.abc import Callable

from svc_mcp.core.connection import Payload
from svc_mcp.core.regroup import PAGES_BOUND, Paging, page_records


def drive(
    paging: Paging, answer: Callable[[int, dict[str, str]], Payload]
) -> tuple[int, int, bool]:
    """Sends `answer` for each page asked; returns how many were asked, the records kept, and
    whether they are all."""
    asked = 0
    query = next(paging)
    while True:
        asked += 1
        try:
            query = paging.send(answer(asked, query))
        except StopIteration as done:
            records, complete = done.value
            return asked, len(records), complete


def test_empty_pages_with_new_cursors_stop_at_the_page_bound() -> None:
    asked, kept, complete = drive(
        page_records({"group_by": "symbol"}), lambda n, _: Payload([], f"c{n}")
    )
    assert (asked, kept, complete) == (PAGES_BOUND, 0, False)


def test_a_cursor_handed_back_ends_the_paging() -> None:
    asked, kept, complete = drive(
        page_records({"group_by": "symbol"}), lambda _n, _q: Payload([{"id": "1"}], "same")
    )
    assert (asked, kept, complete) == (2, 2, False)


def test_a_service_that_ends_is_read_whole() -> None:
    asked, kept, complete = drive(
        page_records({"group_by": "symbol", "symbol": "X"}),
        lambda n, query: Payload([{"id": str(n)}], None if n == 3 else f"c{n}"),
    )
    assert (asked, kept, complete) == (3, 3, True)
