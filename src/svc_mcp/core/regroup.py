"""Grouped answers from a data service that does not group: svc-mcp pages the raw records itself
and computes the rows the service would have (svc_serving.grouping, the one definition both share).

Another implementation of spec 2 may not know `group_by`. It then either refuses it as an unknown
query parameter (a 400) or ignores it and answers raw records. Neither is guessed from words: raw
records are recognised by their shape (records of the tool's own kind, none with a group's
`count`), and a refusal counts only when the same request without `group_by` is taken. Then the
records are paged with the same filters, at most `RECORDS_BOUND` of them, and the answer says so
under `computed`: by svc-mcp, from how many records, and whether that was all of them.

The paging is written once, as a generator that yields each query and is sent each page back, so
the async MCP call and the CLI's one-shot call drive the same steps over their own transports.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from svc_mcp.core.bounded import part_cursor
from svc_mcp.core.connection import Payload
from svc_mcp.core.toolspec import CURSOR, GROUP_BY
from svc_serving.contracts import DEFAULT_LIMIT, MAX_LIMIT
from svc_serving.grouping import grouped_rows

RECORDS_BOUND = 100_000
"""The most raw records svc-mcp reads to group one answer itself (100 pages of MAX_LIMIT)."""
PAGES_BOUND = 2 * RECORDS_BOUND // MAX_LIMIT
"""The most pages it asks for: a service that answers short or empty pages, each with a cursor,
ends the paging there (the answer then says it is partial) instead of holding the call forever."""
COMPUTED_KEY = "computed"
"""Where a result says that svc-mcp grouped it, from how many records, and if from all."""


class Ungrouped(Exception):
    """The data service answered a grouped request with its raw records: it ignored `group_by`."""


def raw_records(data: object) -> bool:
    """Whether a grouped request's answer is raw records rather than groups: a non-empty list
    none of whose rows carries a group's `count` (the caller then checks them as records). An
    empty list is no group either way."""
    return (
        isinstance(data, list)
        and bool(data)
        and all(isinstance(row, dict) and "count" not in row for row in data)
    )


Paging = Generator[dict[str, str], Payload, tuple[list[dict[str, Any]], bool]]


def page_records(query: dict[str, str]) -> Paging:
    """Yields the query of each raw page (the grouped request's filters, without `group_by`,
    its cursor or its limit) and is sent its payload; returns the records and whether they are
    all of them (False when `RECORDS_BOUND` or `PAGES_BOUND` stopped the paging, or the
    service handed back the cursor it was sent)."""
    raw = {
        name: value
        for name, value in query.items()
        if name not in (GROUP_BY, CURSOR.name, "limit", "fields")
    }
    records: list[dict[str, Any]] = []
    page = {**raw, "limit": str(min(MAX_LIMIT, RECORDS_BOUND))}
    for _ in range(PAGES_BOUND):
        payload = yield page
        records.extend(payload.data)
        if payload.next_cursor is None:
            return records, True
        if len(records) >= RECORDS_BOUND or payload.next_cursor == page.get(CURSOR.name):
            return records[:RECORDS_BOUND], False
        left = min(MAX_LIMIT, RECORDS_BOUND - len(records))
        page = {**raw, "limit": str(left), CURSOR.name: payload.next_cursor}
    return records, False


def computed_page(
    path: str,
    query: dict[str, str],
    skipped: int,
    records: list[dict[str, Any]],
    complete: bool,
) -> tuple[list[dict[str, Any]], str | None, dict[str, Any]]:
    """The page of rows the grouped request asks for (after the `skipped` first), the cursor of
    the rest (svc-mcp's own, as for a cut page), and what `computed` says."""
    rows = grouped_rows(path, query[GROUP_BY], records)
    limit = int(query.get("limit", DEFAULT_LIMIT))
    end = skipped + limit
    cursor = part_cursor(None, end) if end < len(rows) else None
    said: dict[str, Any] = {"by": "svc-mcp", "records": len(records), "complete": complete}
    if not complete:
        said["bound"] = RECORDS_BOUND
    return rows[skipped:end], cursor, said


def computed_note(said: dict[str, Any]) -> str:
    """One line for an agent or a terminal: what `computed` says."""
    records = f"{said['records']:,} records"
    if said["complete"]:
        return f"Grouped by svc-mcp from all {records}: the data service does not group."
    return (
        f"PARTIAL: grouped by svc-mcp from the first {records} only (its bound); "
        "narrow since/until for a whole answer."
    )
