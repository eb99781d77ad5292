"""`svc-mcp` exactly as a host runs it, plus one look right after it confines itself: can it
read the file SVC_TEST_CANARY names? It says so on stderr, `canary: <errno name or "read">`."""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable
from pathlib import Path

from svc_mcp.serve import confinement


def then_try_the_canary(confine: Callable[..., None]) -> Callable[..., None]:
    def confine_and_try(*args: object) -> None:
        confine(*args)
        try:
            Path(os.environ["SVC_TEST_CANARY"]).read_bytes()
            result = "read"
        except OSError as exc:
            result = errno.errorcode.get(exc.errno or 0, str(exc))
        print(f"canary: {result}", file=sys.stderr, flush=True)

    return confine_and_try


# Before svc_mcp.cli.main imports the server or the gateway, which take these by name.
confinement.confine_stdio_server = then_try_the_canary(confinement.confine_stdio_server)
confinement.confine_gateway = then_try_the_canary(confinement.confine_gateway)

if __name__ == "__main__":
    from svc_mcp.cli.main import main

    main()
