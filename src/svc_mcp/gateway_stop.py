"""How the gateway stops: on SIGTERM or SIGINT it stops accepting, lets every call in flight end
(each is bounded by its own deadline, `SVC_MCP_TIMEOUT_SECONDS`, so each ends with its answer or a
typed, retryable tool error), then exits 0.

uvicorn would otherwise cut calls after its graceful timeout with a bare 500 and re-raise the
signal once stopped, ending the process with 143 and a traceback.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

import uvicorn

STOP_MARGIN_SECONDS = 2.0
"""Beyond the call timeout: time for the last answers to be written."""


def graceful_seconds(call_timeout: float) -> int:
    """How long a stop waits for calls in flight (whole seconds, as uvicorn takes them): longer
    than any call may take."""
    return math.ceil(call_timeout + STOP_MARGIN_SECONDS)


class GatewayServer(uvicorn.Server):
    """A uvicorn server whose stop on a signal is the end of the service, exit 0."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        with super().capture_signals():
            yield
            # The stop was asked for and done: nothing is left for the signal to do.
            self._captured_signals.clear()
