"""What a call returns (`ToolResult`): its structured content and its text, within the bound of
`svc_mcp.core.bounded`."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from svc_mcp.core.bounded import PAGE_CHARS, part_cursor
from svc_mcp.core.regroup import COMPUTED_KEY
from svc_mcp.core.safe_text import safe_json


@dataclass(frozen=True)
class ToolResult:
    """The REST `data` (only the chosen fields of each record when `fields` was given), and the
    cursor of the next page when more remain."""

    data: Any
    next_cursor: str | None = None
    key: str = "result"
    """Where a list goes in the structured content: `result`, or `groups` for grouped rows."""
    computed: dict[str, Any] | None = None
    """Grouped rows svc-mcp computed itself, because the data service does not group: by whom,
    from how many records, and whether from all of them (`svc_mcp.core.regroup`)."""

    def text(self, tool: str) -> str:
        """What an agent reads: the structured content as compact JSON and, when more remain,
        one line saying how to get the next page."""
        text = safe_json(self.structured())
        if self.next_cursor is None:
            return text
        return (
            f"{text}\nMore records: call {tool} again with the same arguments and "
            f"cursor={json.dumps(self.next_cursor)} for the next page."
        )

    def structured(self) -> dict[str, Any]:
        """MCP structured content, which must be an object: a list becomes `{"result": [...]}`
        plus `next_cursor` when paging; an object is returned as it is."""
        if isinstance(self.data, dict):
            return self.data
        content: dict[str, Any] = {self.key: self.data}
        if self.next_cursor is not None:
            content["next_cursor"] = self.next_cursor
        if self.computed is not None:
            content[COMPUTED_KEY] = self.computed
        return content


def within_bound(
    result: ToolResult, tool: str, page_cursor: str | None, skipped: int
) -> ToolResult:
    """`result` (its list the records after the `skipped` first of the backend page asked for
    with `page_cursor`), cut short at a record boundary when its text is over the bound."""
    if not isinstance(result.data, list) or len(result.text(tool)) <= PAGE_CHARS:
        return result

    def cut(count: int) -> ToolResult:
        return replace(
            result, data=result.data[:count], next_cursor=part_cursor(page_cursor, skipped + count)
        )

    fits, too_many = 1, len(result.data)
    while too_many - fits > 1:
        middle = (fits + too_many) // 2
        if len(cut(middle).text(tool)) <= PAGE_CHARS:
            fits = middle
        else:
            too_many = middle
    return cut(fits)
