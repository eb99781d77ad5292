"""Wheels of what this test environment has installed, for uv to install from offline.

`uv tool install .` resolves svc-mcp's dependencies afresh (it reads no lock), so offline it needs
their index pages in uv's cache, which the quick start (`uv run --locked`, which installs from the
lock without asking the index) never fetched. The same versions are installed here: each is packed
again as a wheel (its files as installed, with a fresh RECORD) into a folder uv reads as
`--find-links`, so a test resolves and installs without reaching beyond this machine.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import importlib.metadata
import io
import zipfile
from pathlib import Path

_LEFT_OUT = frozenset({"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"})


def _tag(wheel_file: str) -> str:
    """The wheel's compressed tag set (`py3-none-any`), from its WHEEL file's `Tag:` lines."""
    tags = [line.split(":", 1)[1].strip().split("-") for line in wheel_file.splitlines()
            if line.startswith("Tag:")]  # fmt: skip
    return "-".join(".".join(sorted({tag[part] for tag in tags})) for part in range(3))


def pack(dist: importlib.metadata.Distribution, folder: Path) -> Path | None:
    """`dist` as a wheel in `folder` (None for a distribution installed without a WHEEL file)."""
    files = [file for file in dist.files or [] if ".." not in file.parts]
    info = next((f for f in files if f.name == "WHEEL" and f.parts[0].endswith(".dist-info")), None)
    if info is None:
        return None
    dist_info = info.parts[0]
    name = dist.metadata["Name"].replace("-", "_").replace(".", "_").lower()
    wheel = (
        folder / f"{name}-{dist.version}-{_tag(Path(str(dist.locate_file(info))).read_text())}.whl"
    )
    record = io.StringIO()
    rows = csv.writer(record, lineterminator="\n")
    # Stored, not deflated: uv reads them once, on this machine; compressing 100 MB took 30 s.
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_STORED) as archive:
        for file in files:
            path = Path(str(dist.locate_file(file)))
            if file.name in _LEFT_OUT or file.suffix == ".pyc" or not path.is_file():
                continue
            data = path.read_bytes()
            archive.writestr(str(file), data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            rows.writerow((str(file), f"sha256={digest.decode()}", len(data)))
        rows.writerow((f"{dist_info}/RECORD", "", ""))
        archive.writestr(f"{dist_info}/RECORD", record.getvalue())
    return wheel


def wheelhouse(folder: Path, *, leave_out: frozenset[str] = frozenset({"svc-mcp"})) -> Path:
    """Every distribution of this environment (but `leave_out`) as a wheel in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    for dist in importlib.metadata.distributions():
        if dist.metadata["Name"] not in leave_out:
            pack(dist, folder)
    return folder
