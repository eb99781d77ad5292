"""Reads the portal's data directory. Never opens anything for writing.

Layout: `catalog.json`, `page.json`, `principals.json` and, under `audit/`, the append-only JSON
Lines trails. A `Snapshot` is one consistent, validated reading of all of them. `PortalStore` hands
out the current snapshot and re-reads the directory when a file's size or modification time
changes; a re-read that fails keeps the last good snapshot (never a mix of old and new files) and
is logged.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from server_stub.portal.models import (
    CredentialIssued,
    CredentialRevoke,
    GatewayAccess,
    Grant,
    Page,
    Principal,
    Revoke,
    SessionIssued,
    SessionRevoked,
    Surface,
)

log = logging.getLogger("server_stub.portal")

TRAILS = {
    "sessions": "sessions.jsonl",
    "credentials": "credentials.jsonl",
    "credential-revokes": "credential-revokes.jsonl",
    "grants": "grants.jsonl",
    "revokes": "revokes.jsonl",
    "gateway-access": "gateway-access.jsonl",
}
DOCUMENTS = ("catalog.json", "page.json", "principals.json")

M = TypeVar("M", bound=BaseModel)
SessionEvent = SessionIssued | SessionRevoked
_session_event: TypeAdapter[SessionEvent] = TypeAdapter(SessionEvent)


class DataError(Exception):
    """The data directory is missing a file or holds one that does not validate."""


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class Snapshot:
    surfaces: list[Surface]
    page: Page
    principals: dict[str, Principal]
    sessions: list[SessionEvent]
    credentials: list[CredentialIssued]
    credential_revokes: list[CredentialRevoke]
    grants: list[Grant]
    revokes: list[Revoke]
    gateway_access: list[GatewayAccess]
    session_by_hash: dict[str, SessionIssued] = field(init=False)
    session_revoked_at: dict[str, datetime] = field(init=False)
    principal_by_email: dict[str, Principal] = field(init=False)
    _memo: dict[Hashable, Any] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        by_hash = {e.tokenHash: e for e in self.sessions if isinstance(e, SessionIssued)}
        revoked: dict[str, datetime] = {}
        for event in self.sessions:
            if isinstance(event, SessionRevoked):
                revoked.setdefault(event.id, event.at)
        by_email = {p.email.lower(): p for p in self.principals.values() if p.email}
        object.__setattr__(self, "session_by_hash", by_hash)
        object.__setattr__(self, "session_revoked_at", revoked)
        object.__setattr__(self, "principal_by_email", by_email)

    def memo(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """A value derived from this snapshot alone, computed once."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def trails(self) -> dict[str, list[Any]]:
        return {
            "sessions": self.sessions,
            "credentials": self.credentials,
            "credential-revokes": self.credential_revokes,
            "grants": self.grants,
            "revokes": self.revokes,
            "gateway-access": self.gateway_access,
        }


def _read_json(path: Path) -> Any:
    try:
        with path.open("rb") as handle:
            return json.load(handle)
    except FileNotFoundError:
        raise DataError(f"{path.name}: missing from the data directory") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{path.name}: not readable JSON ({exc})") from None


def _validate(model: TypeAdapter[M] | type[M], value: Any, where: str) -> M:
    try:
        if isinstance(model, TypeAdapter):
            return model.validate_python(value)
        return model.model_validate(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        location = ".".join(str(part) for part in first["loc"]) or "(root)"
        raise DataError(f"{where}: {location}: {first['msg']}") from None


def _read_trail(path: Path, parse: Callable[[Any, str], M]) -> list[M]:
    """Every line must parse; a bad line is reported with its number, never skipped."""
    if not path.exists():
        return []
    records: list[M] = []
    try:
        with path.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                if not raw.strip():
                    continue
                where = f"audit/{path.name}:{number}"
                try:
                    value = json.loads(raw)
                except (UnicodeDecodeError, json.JSONDecodeError):
                    raise DataError(f"{where}: not a JSON object") from None
                records.append(parse(value, where))
    except OSError as exc:
        raise DataError(f"audit/{path.name}: not readable ({exc.strerror})") from None
    return records


def _parser(model: TypeAdapter[M] | type[M]) -> Callable[[Any, str], M]:
    return lambda value, where: _validate(model, value, where)


def load_snapshot(data_dir: Path) -> Snapshot:
    if not data_dir.is_dir():
        raise DataError(f"data directory {data_dir} does not exist")
    catalog_raw = _read_json(data_dir / "catalog.json")
    if not isinstance(catalog_raw, list):
        raise DataError("catalog.json: must be a JSON array of surfaces")
    surfaces = [_validate(Surface, s, f"catalog.json[{i}]") for i, s in enumerate(catalog_raw)]
    _require_unique((s.id for s in surfaces), "catalog.json", "surface id")
    page = _validate(Page, _read_json(data_dir / "page.json"), "page.json")
    principals_raw = _read_json(data_dir / "principals.json")
    if not isinstance(principals_raw, list):
        raise DataError("principals.json: must be a JSON array of principals")
    principals = [
        _validate(Principal, p, f"principals.json[{i}]") for i, p in enumerate(principals_raw)
    ]
    _require_unique((p.id for p in principals), "principals.json", "principal id")
    audit = data_dir / "audit"
    return Snapshot(
        surfaces=surfaces,
        page=page,
        principals={p.id: p for p in principals},
        sessions=_read_trail(audit / TRAILS["sessions"], _parser(_session_event)),
        credentials=_read_trail(audit / TRAILS["credentials"], _parser(CredentialIssued)),
        credential_revokes=_read_trail(
            audit / TRAILS["credential-revokes"], _parser(CredentialRevoke)
        ),
        grants=_read_trail(audit / TRAILS["grants"], _parser(Grant)),
        revokes=_read_trail(audit / TRAILS["revokes"], _parser(Revoke)),
        gateway_access=_read_trail(audit / TRAILS["gateway-access"], _parser(GatewayAccess)),
    )


def _require_unique(values: Iterable[str], where: str, what: str) -> None:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise DataError(f"{where}: duplicate {what} {value!r}")
        seen.add(value)


def _watched_files(data_dir: Path) -> list[str]:
    paths = [data_dir / name for name in DOCUMENTS]
    paths += [data_dir / "audit" / name for name in TRAILS.values()]
    return [os.fspath(path) for path in paths]


Fingerprint = tuple[tuple[int, int], ...]


def _fingerprint(files: list[str]) -> Fingerprint:
    marks = []
    for path in files:
        try:
            stat = os.stat(path)
        except OSError:
            marks.append((-1, -1))
        else:
            marks.append((stat.st_mtime_ns, stat.st_size))
    return tuple(marks)


class PortalStore:
    """The current snapshot of a data directory, re-read when its files change."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._files = _watched_files(data_dir)
        self._lock = threading.Lock()
        self._fingerprint = _fingerprint(self._files)
        self._snapshot = load_snapshot(data_dir)  # DataError here stops start-up
        self._failed_fingerprint: Fingerprint | None = None

    def snapshot(self) -> Snapshot:
        current = _fingerprint(self._files)
        if current == self._fingerprint or current == self._failed_fingerprint:
            return self._snapshot
        with self._lock:
            if current != self._fingerprint:
                self._reload(current)
        return self._snapshot

    def _reload(self, current: Fingerprint) -> None:
        try:
            snapshot = load_snapshot(self.data_dir)
        except DataError as exc:
            if current != self._failed_fingerprint:
                log.error(
                    "data directory changed but does not load; serving the last good data: %s", exc
                )
            self._failed_fingerprint = current
            return
        if _fingerprint(self._files) != current:
            return  # changed again while being read: maybe a mix; keep the last good, retry later
        self._snapshot = snapshot
        self._fingerprint = current
        self._failed_fingerprint = None
        log.info("data directory reloaded from %s", os.fspath(self.data_dir))
