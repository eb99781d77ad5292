"""What the client side and the stubs must agree on over HTTP, written once for both: a value
spelled on each side would part silently (the stub's limit lowered, the client still sending up
to the old one).

The client reads these through `svc_mcp.core` and `svc_mcp.tools`, the stubs directly;
tests/architecture/test_contracts.py holds each side to them.
"""

from __future__ import annotations

INTEL_SCHEMA_TAG = "svc.intel.v1"
"""The schema tag of the one envelope the data service takes (docs/api-service.md)."""

DEFAULT_LIMIT = 100
"""The records of a list page when `limit` is not given (both stubs)."""

MAX_LIMIT = 1000
"""The largest `limit` of a list page (both stubs); the client never asks for more."""

MAX_BODY_BYTES = 64 * 1024
"""The largest request body a stub accepts, so the largest intel envelope the client sends."""

MAX_TARGET_BYTES = 8 * 1024
"""The longest request target (path and query) a stub accepts; the client refuses a longer URL
before sending it."""

REQUEST_ID_PATTERN = "[0-9a-f]{16,32}"
"""An `X-Request-Id` the stubs' access lines carry as sent: the client's own (16 hex digits) or a
trace id (32)."""

SAFE_HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}
"""What every JSON answer of a stub or the gateway carries: nothing cached, nothing sniffed."""
