"""The data service backend (spec 2): where rows with `backend=SERVICE` send their requests.

An analytics row is a `ToolSpec(..., backend=SERVICE, toolset="analytics")` in the tool table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from portal_tools.toolspec import Backend

if TYPE_CHECKING:
    from portal_tools.client import Connection


def _service_connection() -> Connection:
    # Imported at call time: listing tools never pays for loading pydantic-settings.
    from svc_mcp.settings import service_connection

    return service_connection()


SERVICE = Backend(name="service", connect=_service_connection)
