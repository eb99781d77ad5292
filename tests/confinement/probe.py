"""Confines itself with one of the real policies, then tries what that process must not do.

`python -m tests.confinement.probe POLICY TARGET CANARY PORT [ARG]` prints one JSON object:
each attempt -> "ok" or the errno name it failed with. POLICY is `portal` (ARG: data folder),
`service` (ARG: database file), `stdio` or `gateway`. TARGET is a folder holding the files `existing`
(to write, truncate, rename and link) and `doomed` (to remove); PORT a listening loopback port to connect to.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path

from server_stub.confinement import SETTING as STUB_SETTING
from server_stub.confinement import portal_policy, service_policy
from svc_mcp.serve.confinement import SETTING as MCP_SETTING
from svc_mcp.serve.confinement import gateway_policy, stdio_policy
from svc_serving.confine import confine


def outcome(attempt: Callable[[], object]) -> str:
    try:
        attempt()
    except OSError as exc:
        return errno.errorcode.get(exc.errno or 0, str(exc))
    return "ok"


def write_forms(folder: Path) -> dict[str, str]:
    existing = folder / "existing"

    def open_for_writing() -> None:
        os.close(os.open(existing, os.O_WRONLY | os.O_APPEND))

    def create() -> None:
        os.close(os.open(folder / "created", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))

    return {
        "open for writing": outcome(open_for_writing),
        "create": outcome(create),
        "truncate": outcome(lambda: os.truncate(existing, 0)),
        "mkdir": outcome(lambda: os.mkdir(folder / "made")),
        "symlink": outcome(lambda: os.symlink(existing, folder / "symlinked")),
        "hard link": outcome(lambda: os.link(existing, folder / "linked")),
        "rename": outcome(lambda: os.rename(existing, folder / "renamed")),
        "unlink": outcome(lambda: os.unlink(folder / "doomed")),
    }


def connect(port: int) -> str:
    def attempt() -> None:
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass

    return outcome(attempt)


def main(argv: list[str]) -> None:
    name, target, canary, port, *rest = argv
    policies = {
        "portal": lambda: (portal_policy(Path(rest[0]), 0), STUB_SETTING),
        "service": lambda: (service_policy(Path(rest[0]), 0), STUB_SETTING),
        "stdio": lambda: (stdio_policy(), MCP_SETTING),
        "gateway": lambda: (gateway_policy(), MCP_SETTING),
    }
    policy, setting = policies[name]()
    confine(policy, setting)
    results = {
        **write_forms(Path(target)),
        "read canary": outcome(lambda: Path(canary).read_bytes()),
        "connect elsewhere": connect(int(port)),
    }
    if name == "service":
        results |= {
            f"beside the database: {k}": v for k, v in write_forms(Path(rest[0]).parent).items()
        }
    if name in ("stdio", "gateway"):
        results["connect to a backend"] = connect(int(rest[0]))
    print(json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1:])
