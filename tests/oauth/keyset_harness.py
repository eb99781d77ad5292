"""The gateway's token verifier with its key-set reader running, on an injected clock whose sleep
moves the clock instead of waiting, against an issuer on loopback."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.lowlevel
import httpx

from svc_mcp.serve.oauth.keys import KeySet, KeyTimes
from svc_mcp.serve.oauth.settings import OAuthSettings
from svc_mcp.serve.oauth.tokens import JwtVerifier


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        await anyio.lowlevel.checkpoint()


@asynccontextmanager
async def running_verifier(
    issuer: str, resource: str, clock: Clock, times: KeyTimes | None = None, **settings: Any
) -> AsyncIterator[tuple[JwtVerifier, list[str]]]:
    """The verifier, and the lines its reader announced."""
    lines: list[str] = []
    async with httpx.AsyncClient() as http:
        keys = KeySet(
            issuer, http, clock, times or KeyTimes(), sleep=clock.sleep, announce=lines.append
        )
        verifier = JwtVerifier(OAuthSettings(issuer, resource, **settings), http, clock, keys)
        async with anyio.create_task_group() as group:
            group.start_soon(verifier.run)
            yield verifier, lines
            group.cancel_scope.cancel()


async def subject(verifier: JwtVerifier, token: str) -> str | None:
    access = await verifier.verify_token(token)
    return access.subject if access is not None else None
