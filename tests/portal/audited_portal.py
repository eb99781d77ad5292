"""Runs `svc-stub` with a write audit: every file opened for writing is printed as `WRITE: ...`."""

from __future__ import annotations

import sys

from server_stub.cli import main
from tests.write_audit import writes_in


def report(event: str, args: tuple[object, ...]) -> None:
    found = writes_in(event, args)
    if found is not None:
        print(f"WRITE: {found}", file=sys.__stderr__, flush=True)


if __name__ == "__main__":
    sys.addaudithook(report)
    print("write audit active", file=sys.__stderr__, flush=True)
    main()
