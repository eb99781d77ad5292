"""Both stubs in process, built once for this directory's tests (they only read the stubs' data).

schemathesis loads its schema when the test module is imported, so the stubs are module-level
values here (in a temporary directory removed at exit), not fixtures: `schemathesis.pytest.
from_fixture` fails on pytest 9.2, which no longer has `Node._nodeid`.
"""

from __future__ import annotations

import atexit
import tempfile
from pathlib import Path

_workdir = tempfile.TemporaryDirectory(prefix="svc-openapi-")
atexit.register(_workdir.cleanup)
WORKDIR = Path(_workdir.name)
