"""Writing the few files the stubs' own commands (and the passkey store) write."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


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
