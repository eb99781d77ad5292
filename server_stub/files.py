"""Writing the few files the stubs' own commands (and the passkey store) write."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

TRAIL_MODE = 0o640
"""The portal's audit trails hold token hashes: the owner (the admin commands) writes them, the
group (the portal's own user) may read them, nobody else."""


def write_trail(path: Path, text: str) -> None:
    """Writes a whole audit trail with TRAIL_MODE, also when the file was there before."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, TRAIL_MODE)
    with os.fdopen(fd, "w") as handle:
        os.fchmod(fd, TRAIL_MODE)
        handle.write(text)


def write_json_atomically(path: Path, value: Any) -> None:
    """Replaces `path` with `value` as JSON: readers see the old or the new file, never a mix, also
    after a crash. The new file has mode 0600 (mkstemp creates it so)."""
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(value, handle, indent=2)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    # The rename itself survives a power loss only once the directory is synced too.
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
