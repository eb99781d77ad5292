"""A server's connection limits: what `svc_serving.bounded` enforces, from SVC_HTTP_* where set,
kept below the process's file limit (raised to its hard limit at start)."""

from __future__ import annotations

import os
import resource
from collections.abc import Mapping
from dataclasses import dataclass, replace

MAX_HEAD_TIMEOUT_SECONDS = 10.0
MAX_IDLE_TIMEOUT_SECONDS = 300.0
MAX_BODY_TIMEOUT_SECONDS = 600.0
FILE_RESERVE = 128
"""Descriptors kept free below the file limit for everything that is not a client connection
(listening sockets, the database, log files, outgoing connections to backends)."""
HEAD_TIMEOUT_VARIABLE = "SVC_HTTP_HEAD_TIMEOUT"
MAX_CONNECTIONS_VARIABLE = "SVC_HTTP_MAX_CONNECTIONS"
MAX_PER_ADDRESS_VARIABLE = "SVC_HTTP_MAX_CONNECTIONS_PER_ADDRESS"
IDLE_TIMEOUT_VARIABLE = "SVC_HTTP_IDLE_TIMEOUT"
BODY_TIMEOUT_VARIABLE = "SVC_HTTP_BODY_TIMEOUT"


@dataclass(frozen=True)
class ConnectionLimits:
    head_timeout: float = 5.0
    max_connections: int = 4096
    max_per_address: int = 256
    idle_timeout: float = 5.0
    """uvicorn's keep-alive default, which a stray byte can no longer cancel."""
    body_timeout: float = 30.0
    """Time for the largest body these servers take (the gateway's 4 MiB) at about 1 Mbit/s."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> ConnectionLimits:
        """The limits, from SVC_HTTP_* where set; ValueError names a variable that is wrong."""
        defaults = cls()
        return cls(
            head_timeout=_seconds(
                environ, HEAD_TIMEOUT_VARIABLE, defaults.head_timeout, MAX_HEAD_TIMEOUT_SECONDS
            ),
            max_connections=_count(environ, MAX_CONNECTIONS_VARIABLE, defaults.max_connections),
            max_per_address=_count(environ, MAX_PER_ADDRESS_VARIABLE, defaults.max_per_address),
            idle_timeout=_seconds(
                environ, IDLE_TIMEOUT_VARIABLE, defaults.idle_timeout, MAX_IDLE_TIMEOUT_SECONDS
            ),
            body_timeout=_seconds(
                environ, BODY_TIMEOUT_VARIABLE, defaults.body_timeout, MAX_BODY_TIMEOUT_SECONDS
            ),
        )

    def within_file_limit(self, open_files: int) -> ConnectionLimits:
        """These limits with the total kept FILE_RESERVE below `open_files`."""
        total = max(1, min(self.max_connections, open_files - FILE_RESERVE))
        return replace(
            self, max_connections=total, max_per_address=min(self.max_per_address, total)
        )


def _seconds(environ: Mapping[str, str], name: str, default: float, maximum: float) -> float:
    text = environ.get(name, "").strip()
    try:
        seconds = float(text) if text else default
    except ValueError:
        seconds = -1.0
    if not 0 < seconds <= maximum:
        raise ValueError(f"{name} must be seconds above 0, at most {maximum:g}")
    return seconds


def _count(environ: Mapping[str, str], name: str, default: int) -> int:
    text = environ.get(name, "").strip()
    if not text:
        return default
    if not (text.isascii() and text.isdigit() and 0 < int(text) < 10**7):
        raise ValueError(f"{name} must be a whole number of connections above 0")
    return int(text)


def raise_file_limit() -> int:
    """Raises this process's soft limit of open files to its hard limit; returns the new soft
    limit. Servers call it at start, so the connection cap, not the file limit, is what a flood
    of connections meets first."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft == resource.RLIM_INFINITY:
        # Not every kernel takes "infinity" as a soft limit; a large finite one does.
        target = max(soft, 1 << 20) if hard == resource.RLIM_INFINITY else hard
    else:
        target = hard
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            return soft
        return target
    return soft


def serving_limits(environ: Mapping[str, str] = os.environ) -> ConnectionLimits:
    """What a server starts with: the file limit raised, the SVC_HTTP_* limits below it.
    ValueError for a bad SVC_HTTP_* value."""
    limits = ConnectionLimits.from_env(environ)
    return limits.within_file_limit(raise_file_limit())
