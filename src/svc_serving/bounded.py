"""uvicorn's httptools protocol, bounded in time, bytes and connections.

What a client can hold on a server is bounded here, the same for the stubs and the gateway:
- a request head over MAX_HEAD_BYTES is answered 431 and the connection closed;
- a request head not complete within `head_timeout` seconds of its connection or of its first
  byte is closed (uvicorn's keep-alive timer only runs between requests);
- a request body not complete within `body_timeout` seconds of its head is answered 408 (or cut,
  when its response has begun) and closed;
- a connection is closed `idle_timeout` seconds after its last response unless a new request head
  has begun: bytes that begin none (the rest of a body the response did not wait for, blank lines)
  do not move this deadline, where any byte cancels uvicorn's keep-alive timer;
- at most `max_connections` connections are open, at most `max_per_address` under one peer key
  (`peer_key`: the client address, an IPv6 /64, on loopback the local user that owns the
  client's socket); at a cap the oldest connection that has not yet sent a complete request head
  makes way (answered 503 and closed), else the one that has rested longest, answered and idle
  or not reading its answer (closed), and only when there is none is the new one answered 503
  and closed, never queued (svc_serving.admission: counted as connections open and close, so
  admitting one costs the same however many are open);
- a loopback connection whose client socket is already closed when it is accepted is closed
  unread: nobody is there to read its answer, and its owner cannot be known;
- a repeated `Host` or `Authorization` header is answered 400 (which one counts would be a guess
  the next hop may make differently).

This is the one module that uses uvicorn's internals (its httptools protocol class): uvicorn has no
setting that bounds an httptools request head. tests/architecture/test_fences.py asserts what it
relies on, and pyproject.toml pins uvicorn to the releases those tests ran on.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import signal
import weakref
from collections.abc import Iterator
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from svc_serving.admission import ConnectionTable, address_key
from svc_serving.limits import ConnectionLimits
from svc_serving.loopback import literal_address
from svc_serving.one_write import HeadWithBody
from svc_serving.peer_owner import OWNER_SCOPE_KEY, Unknown, peer_owner
from svc_serving.refusals import error_body, raw_response, refusing, repeated_header

MAX_HEAD_BYTES = 64 * 1024
"""The most of a request head (request line and headers) a connection may send. Larger than the
stubs' own header limit, so that a head between the two gets its 431 envelope from
the app; small enough to bound memory per connection."""
REFUSAL_LOG_SECONDS = 60.0


HEAD, BODY, IDLE = "head", "body", "idle"
"""What a connection's one deadline is waiting for."""
EVICTED = "closed the oldest connection that had sent no complete request, to admit a new one"
RESTED = "closed the connection that had rested longest (idle, or not reading), to admit a new one"
MADE_WAY = (
    "the server is at its connection cap and closed this connection, which had sent no complete "
    "request, for a newer one; retry"
)

_TABLES: weakref.WeakKeyDictionary[object, ConnectionTable[BoundedHttpTools]] = (
    weakref.WeakKeyDictionary()
)
"""One table per uvicorn server (its `server_state`, shared by all its connections)."""


class BoundedHttpTools(HttpToolsProtocol):
    """uvicorn's httptools protocol with the bounds of the module docstring, and whitespace
    around header values trimmed as h11 does. A server subclasses it with its own `limits`
    (`bounded_protocol`) and its own `error_body`.

    httptools keeps whatever head a client sends (h11 had a limit, httptools has none), so the
    bytes of a head still incomplete after each read are counted here, and past the bound the
    connection is answered and closed. The count can exceed the real head by at most one read
    when a pipelined request starts in the same read as the previous body ends.

    httptools also keeps the whitespace after a header value, which RFC 9110 (5.5) excludes from
    the value: `X-API-Token: <token> ` would otherwise be a wrong token.

    Each connection has one deadline at a time: the head's (from the connection, or from a new
    request's first byte), the body's (from the head, set once the head has been read and the body
    has not), or the idle one (from the last response). Only the start of a new request head moves
    it; no other byte does, so a trickle cannot keep a connection.
    """

    limits = ConnectionLimits()
    error_body = staticmethod(error_body)
    head_too_large = f"request head exceeds {MAX_HEAD_BYTES} bytes"
    # Refused and displaced connections, logged at most once per REFUSAL_LOG_SECONDS whatever a
    # flood sends.
    _refused_since_log = 0
    _refusal_logged_at = -math.inf

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_bytes = 0
        self._reading_head = False
        self._reading_body = False
        self._sent_a_request = False
        self._resting = False
        self._checks_owner = False
        self._owner: int | None = None
        self._waiting_for: str | None = None
        self._deadline_at = math.inf
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = math.inf
        table = _TABLES.get(self.server_state)
        if table is None:
            table = _TABLES[self.server_state] = ConnectionTable()
        self._table = table

    def peer_key(self) -> str | None:
        """The key this connection counts under (module docstring); None: the client has gone.
        A loopback owner is asked once, here, and given to each request (OWNER_SCOPE_KEY)."""
        client, server = self.client, self.server
        address = literal_address(client[0]) if client else None
        if client is None or server is None or address is None or not address.is_loopback:
            return address_key(client)
        self._checks_owner = True
        owner = peer_owner((client[0], client[1]), (server[0], server[1] or 0))
        if owner is Unknown.GONE:
            return None
        if isinstance(owner, int):
            self._owner = owner
            return f"loopback:uid={owner}"
        return "loopback"

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        key = self.peer_key()
        if key is None:
            self._log_refusal("closed a loopback connection whose client had already closed")
            self.transport.abort()
            return
        limits = self.limits
        admission = self._table.admit(
            self, key, max_total=limits.max_connections, max_per_key=limits.max_per_address
        )
        for older in admission.evicted:
            older._make_way()
        if admission.refusal is not None:
            self._log_refusal(admission.refusal)
            refusal = admission.refusal
            self._answer_and_close(503, "Service Unavailable", "too_many_connections", refusal)
            return
        self._arm(HEAD, self.limits.head_timeout)

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_timer()
        self._table.discard(self)
        super().connection_lost(exc)

    def handle_websocket_upgrade(self) -> None:
        # The connection leaves uvicorn's count here, and this protocol never sees it close.
        self._stop_timer()
        self._table.discard(self)
        super().handle_websocket_upgrade()

    def _log_refusal(self, reason: str) -> None:
        counts = type(self)
        counts._refused_since_log += 1
        now = self.loop.time()
        if now - counts._refusal_logged_at >= REFUSAL_LOG_SECONDS:
            self.logger.warning(
                "refused or closed %d connection(s) since the last such line; the latest: %s",
                counts._refused_since_log,
                reason,
            )
            counts._refused_since_log = 0
            counts._refusal_logged_at = now

    def _make_way(self) -> None:
        if not self._sent_a_request:
            self._log_refusal(EVICTED)
            self._answer_and_close(503, "Service Unavailable", "too_many_connections", MADE_WAY)
            return
        # Nothing is owed between requests; a client not reading would never flush a close.
        self._log_refusal(RESTED)
        if self.transport.get_write_buffer_size():
            self.transport.abort()
        else:
            self.transport.close()

    def _rest(self) -> None:
        if not self._resting:
            self._resting = True
            self._table.resting(self)

    def _work(self) -> None:
        if self._resting:
            self._resting = False
            self._table.working(self)

    def pause_writing(self) -> None:
        # The client does not read what it asked for: it holds its connection for nothing.
        super().pause_writing()
        self._rest()

    def resume_writing(self) -> None:
        super().resume_writing()
        if self.cycle is not None and not self.cycle.response_complete:
            self._work()

    def _answer_and_close(self, status: int, reason: str, code: str, message: str) -> None:
        self.transport.write(raw_response(status, reason, self.error_body(code, message)))
        self.transport.close()

    # The deadline is a time and what it waits for; one timer per connection checks it. Moving the
    # deadline later (every request does) costs no timer: the timer, when it fires early, waits
    # again for what is left. Only a deadline earlier than the timer reschedules it.
    def _arm(self, waiting_for: str, seconds: float) -> None:
        self._waiting_for = waiting_for
        self._deadline_at = deadline = self.loop.time() + seconds
        if self._timer is None or deadline < self._timer_at:
            self._schedule(deadline)

    def _disarm(self) -> None:
        self._waiting_for = None

    def _schedule(self, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = when
        self._timer = self.loop.call_at(when, self._deadline_passed)

    def _stop_timer(self) -> None:
        self._waiting_for = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _deadline_passed(self) -> None:
        self._timer = None
        waiting_for = self._waiting_for
        if waiting_for is None or self.transport.is_closing():
            return
        if self.loop.time() < self._deadline_at:
            self._schedule(self._deadline_at)
            return
        self._waiting_for = None
        if waiting_for == BODY:
            # The app is waiting for this body; closing ends its wait (http.disconnect).
            if not self.cycle.response_started:
                self.logger.warning("closed a request whose body did not arrive in time")
                self._answer_and_close(
                    408,
                    "Request Timeout",
                    "request_timeout",
                    f"the request body did not arrive within {self.limits.body_timeout:g} s",
                )
            else:
                self.transport.close()
        elif self.cycle is None or self.cycle.response_complete:
            # No request is being answered: nothing is lost by closing, and a half-sent head or
            # an idle connection must not keep its file forever.
            self.transport.close()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._checks_owner:
            self.scope[OWNER_SCOPE_KEY] = self._owner  # type: ignore[literal-required]
        self._reading_head = True
        self._head_bytes = 0
        if self._waiting_for != HEAD:  # the first head's deadline runs from the connection
            self._arm(HEAD, self.limits.head_timeout)

    def on_header(self, name: bytes, value: bytes) -> None:
        super().on_header(name, value.strip(b" \t"))

    def on_headers_complete(self) -> None:
        self._reading_head = False
        self._reading_body = True
        self._disarm()
        if not self._sent_a_request:
            self._sent_a_request = True
            self._table.working(self)
        self._work()
        repeated = repeated_header(self.headers)
        if repeated is None:
            super().on_headers_complete()
            return
        # The request is answered 400 by uvicorn's own cycle, so pipelining and the body that
        # may follow are handled as for any other request.
        app = self.app
        self.app = refusing(self.error_body("bad_request", f"the {repeated} header is repeated"))
        try:
            super().on_headers_complete()
        finally:
            self.app = app

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._reading_body = False
        if self._waiting_for == BODY:
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.transport.is_closing():
            return
        if self._reading_head:
            # The next head began while this response was under way: its deadline, if it passed
            # meanwhile, starts again.
            self._rest()
            if self._waiting_for is None:
                self._arm(HEAD, self.limits.head_timeout)
        elif self.cycle.response_complete:
            # Nothing is being answered: the idle deadline, which the rest of a body the app did
            # not wait for cannot move.
            self._rest()
            self._arm(IDLE, self.limits.idle_timeout)
        elif self._reading_body:
            # A pipelined request now runs, its body still to come.
            self._arm(BODY, self.limits.body_timeout)
        else:
            self._disarm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.transport.is_closing():
            return
        if self._reading_body:
            if self._waiting_for is None and not self.pipeline:
                self._arm(BODY, self.limits.body_timeout)
            return
        if not self._reading_head:
            return
        self._head_bytes += len(data)
        if self._head_bytes > MAX_HEAD_BYTES:
            self.logger.warning("refused a request head over %d bytes", MAX_HEAD_BYTES)
            self._answer_and_close(
                431,
                "Request Header Fields Too Large",
                "headers_too_large",
                self.head_too_large,
            )


def bounded_protocol(
    base: type[BoundedHttpTools], limits: ConnectionLimits
) -> type[BoundedHttpTools]:
    """`base` with these limits: what a server passes to uvicorn as its `http` class."""
    return type(base.__name__, (base,), {"limits": limits})


class OneWriteHttpTools(BoundedHttpTools):
    """BoundedHttpTools writing each response's head with its body (HeadWithBody), by giving
    uvicorn's request cycle that transport and flushing it when the response completes."""

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        cycle = self.cycle
        if cycle is None:
            return
        # Per cycle: with pipelining, self.cycle is already the next request's when this one
        # completes.
        one_write = HeadWithBody(self.transport)
        cycle.transport = one_write  # type: ignore[assignment]
        completed = cycle.on_response

        def on_response() -> None:
            one_write.flush()
            completed()

        cycle.on_response = on_response


class StopOnSignalServer(uvicorn.Server):
    """A uvicorn server whose stop on SIGINT or SIGTERM is the end of the service: the signals
    start the graceful stop, as uvicorn's own handler does, and are not raised again after it
    (uvicorn re-raises them once stopped: exit 143 and a traceback). uvicorn offers no setting
    for it, so its `capture_signals` is replaced (tests/architecture/test_fences.py)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        previous = {sig: signal.signal(sig, self.handle_exit) for sig in STOP_SIGNALS}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
