"""Who makes the request being served: the OAuth gate (svc_mcp.serve.oauth.gate) sets it, the
call's span, the person's budget and the portal's on-behalf call read it; None without OAuth.

Here, in a module that imports nothing of `mcp` nor of OAuth, for the stdio server's sake: it
reads `CALLER` (always None there) and loads no OAuth settings to do so.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcp.server.auth.provider import AccessToken

CALLER: ContextVar[AccessToken | None] = ContextVar("svc_mcp_caller", default=None)
