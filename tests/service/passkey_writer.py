"""Opens the passkey store of a database as the data service does, confines itself with the
service's own `confine_service`, then rewrites the file without end: one passkey, then two, ...

`python -m tests.service.passkey_writer DB PORT` prints `ready` once the first write is done;
the test kills it (SIGKILL) at some moment of some later write.
"""

from __future__ import annotations

import sys
from pathlib import Path

from server_stub.confinement import confine_service
from server_stub.service.passkey_store import Passkey, open_passkey_store

ONE = Passkey(
    id="b25l",
    public_key="pQECAyYgASFYIA",
    sign_count=0,
    rp_id="localhost",
    label="one",
    created_at="2025-07-01T12:00:00Z",
)
TWO = ONE.model_copy(update={"id": "dHdv", "label": "two " + "x" * 60})
"""A longer label: the file grows and shrinks with each write."""


def main(db: Path, port: int) -> None:
    store = open_passkey_store(db)
    confine_service(db, port)
    store.add(ONE)
    print("ready", flush=True)
    while True:
        store.add(TWO)
        store.remove(TWO)


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]))
