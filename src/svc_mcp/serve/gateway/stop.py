"""How the gateway stops: on SIGTERM or SIGINT it stops accepting, lets every call in flight end
(each is bounded by its own deadline, `SVC_MCP_TIMEOUT_SECONDS`, so each ends with its answer or a
typed, retryable tool error), then exits 0.

uvicorn would otherwise cut calls after its graceful timeout with a bare 500 and re-raise the
signal once stopped, ending the process with 143 and a traceback.
"""

from __future__ import annotations

import math

from svc_serving.bounded import StopOnSignalServer

STOP_MARGIN_SECONDS = 2.0
"""Beyond the call timeout: time for the last answers to be written."""


def graceful_seconds(call_timeout: float) -> int:
    """How long a stop waits for calls in flight (whole seconds, as uvicorn takes them): longer
    than any call may take."""
    return math.ceil(call_timeout + STOP_MARGIN_SECONDS)


GatewayServer = StopOnSignalServer
"""The gateway's uvicorn server: stopped by a signal, it exits 0 (svc_serving.bounded keeps the
override of uvicorn's signal capture, in its fence)."""
