"""How the gateway stops: on SIGTERM or SIGINT it stops accepting, lets every call in flight end
(each is bounded by its own deadline, `SVC_MCP_TIMEOUT_SECONDS`, so each ends with its answer or a
typed, retryable tool error), then exits 0.

uvicorn would otherwise cut calls after its graceful timeout with a bare 500 and re-raise the
signal once stopped, ending the process with 143 and a traceback.
"""

from __future__ import annotations

import contextlib
import math
import signal
from collections.abc import Iterator

import uvicorn

STOP_MARGIN_SECONDS = 2.0
"""Beyond the call timeout: time for the last answers to be written."""


def graceful_seconds(call_timeout: float) -> int:
    """How long a stop waits for calls in flight (whole seconds, as uvicorn takes them): longer
    than any call may take."""
    return math.ceil(call_timeout + STOP_MARGIN_SECONDS)


class GatewayServer(uvicorn.Server):
    """A uvicorn server whose stop on a signal is the end of the service, exit 0: the signals
    start the graceful stop, as uvicorn's own handler does, and are not raised again after it."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        previous = {sig: signal.signal(sig, self.handle_exit) for sig in STOP_SIGNALS}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
