"""Local administration of the portal's data directory: the only code that writes it.

These run as `svc-stub admin portal ...` on the host, never behind HTTP. Trails are appended one
whole line per write under an exclusive lock; `principals.json` is replaced atomically. A new secret
is returned once to the caller and only its SHA-256 hash is stored.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from server_stub.files import TRAIL_MODE, write_json_atomically
from server_stub.portal.models import PrincipalKind, Role, iso
from server_stub.portal.store import TRAILS, DataError, load_snapshot, token_hash


class AdminError(Exception):
    """A refused admin command, with a message for the operator."""


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(8)}"


def append_record(data_dir: Path, trail: str, record: dict[str, Any]) -> None:
    audit = data_dir / "audit"
    audit.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(record, separators=(",", ":")) + "\n").encode()
    fd = os.open(audit / TRAILS[trail], os.O_WRONLY | os.O_APPEND | os.O_CREAT, TRAIL_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, line)
    finally:
        os.close(fd)


def _now() -> datetime:
    return datetime.now(UTC)


def _load(data_dir: Path) -> Any:
    try:
        return load_snapshot(data_dir)
    except DataError as exc:
        raise AdminError(str(exc)) from None


def issue_session(data_dir: Path, subject: str, ttl: timedelta, now: datetime | None = None) -> str:
    """Appends a session for `subject` and returns its token, which is not stored anywhere."""
    if subject not in _load(data_dir).principals:
        raise AdminError(f"no principal {subject!r} in principals.json")
    if ttl <= timedelta(0):
        raise AdminError("the session lifetime must be positive")
    created = now or _now()
    token = "pst_" + secrets.token_urlsafe(32)
    append_record(
        data_dir,
        "sessions",
        {
            "event": "issued",
            "id": new_id("ses"),
            "subject": subject,
            "tokenHash": token_hash(token),
            "createdAt": iso(created),
            "expiresAt": iso(created + ttl),
        },
    )
    return token


def revoke_session(data_dir: Path, session_id: str, now: datetime | None = None) -> None:
    snapshot = _load(data_dir)
    if not any(s.id == session_id for s in snapshot.session_by_hash.values()):
        raise AdminError(f"no session {session_id!r}")
    if session_id in snapshot.session_revoked_at:
        raise AdminError(f"session {session_id!r} is already revoked")
    append_record(
        data_dir, "sessions", {"event": "revoked", "id": session_id, "at": iso(now or _now())}
    )


def issue_credential(
    data_dir: Path, subject: str, issuer: str, now: datetime | None = None
) -> tuple[str, str]:
    """Appends a credential record and returns (record id, secret); the secret is shown once."""
    if subject not in _load(data_dir).principals:
        raise AdminError(f"no principal {subject!r} in principals.json")
    secret = "pcr_" + secrets.token_urlsafe(32)
    credential_id = new_id("cred")
    append_record(
        data_dir,
        "credentials",
        {
            "event": "issued",
            "id": credential_id,
            "subject": subject,
            "credentialRef": f"key:{token_hash(secret)[:12]}",
            "issuer": issuer,
            "issuedAt": iso(now or _now()),
            "secretHash": token_hash(secret),
        },
    )
    return credential_id, secret


def revoke_credential(
    data_dir: Path, credential_id: str, by: str, reason: str, now: datetime | None = None
) -> None:
    snapshot = _load(data_dir)
    credential = next((c for c in snapshot.credentials if c.id == credential_id), None)
    if credential is None:
        raise AdminError(f"no credential {credential_id!r}")
    if any(r.credentialId == credential_id for r in snapshot.credential_revokes):
        raise AdminError(f"credential {credential_id!r} is already revoked")
    append_record(
        data_dir,
        "credential-revokes",
        {
            "id": new_id("crv"),
            "at": iso(now or _now()),
            "credentialId": credential_id,
            "subject": credential.subject,
            "revokedBy": by,
            "reason": reason,
        },
    )


def _set_role(data_dir: Path, subject: str, role: Role, kind: PrincipalKind | None) -> None:
    path = data_dir / "principals.json"
    principals: list[dict[str, Any]] = json.loads(path.read_text())
    for principal in principals:
        if principal["id"] == subject:
            principal["role"] = role
            break
    else:
        if kind is None:
            raise AdminError(f"no principal {subject!r}; give --kind to create one")
        principals.append({"id": subject, "kind": kind, "role": role})
    write_json_atomically(path, principals)


def grant(
    data_dir: Path,
    subject: str,
    role: Role,
    by: str,
    kind: PrincipalKind | None = None,
    now: datetime | None = None,
) -> None:
    _load(data_dir)
    _set_role(data_dir, subject, role, kind)
    record = {"id": new_id("grt"), "at": iso(now or _now()), "subject": subject, "role": role}
    append_record(data_dir, "grants", record | {"grantedBy": by})


def revoke(
    data_dir: Path, subject: str, role: Role, by: str, reason: str, now: datetime | None = None
) -> None:
    """Takes `role` away; the principal falls back to reader, the least role there is."""
    principal = _load(data_dir).principals.get(subject)
    if principal is None:
        raise AdminError(f"no principal {subject!r}")
    if principal.role != role:
        raise AdminError(f"{subject!r} does not hold the role {role!r}")
    if role == "reader":
        raise AdminError("reader is the least role; remove the principal's sessions instead")
    _set_role(data_dir, subject, "reader", None)
    append_record(
        data_dir,
        "revokes",
        {
            "id": new_id("rvk"),
            "at": iso(now or _now()),
            "subject": subject,
            "role": role,
            "revokedBy": by,
            "reason": reason,
        },
    )
