"""What every test shares: no test writes the real user's state directory."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session", autouse=True)
def temporary_state_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """XDG_STATE_HOME in a temporary directory for the whole run, inherited by every process a
    test starts (the gateway keeps its token there when SVC_MCP_GATEWAY_TOKEN is unset)."""
    saved = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(tmp_path_factory.mktemp("state-home"))
    yield
    if saved is None:
        os.environ.pop("XDG_STATE_HOME", None)
    else:
        os.environ["XDG_STATE_HOME"] = saved
