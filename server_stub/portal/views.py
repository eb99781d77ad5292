"""What each caller sees: plain functions from a snapshot and a caller to an API payload."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from server_stub.portal.auth import Caller
from server_stub.portal.models import (
    ChannelKind,
    CredentialIssued,
    SessionIssued,
    Surface,
    iso,
    public_record,
)
from server_stub.portal.store import Snapshot


def can_see(surface: Surface, caller: Caller) -> bool:
    if caller.role == "anonymous":
        return surface.governanceState == "approved" and surface.visibility == "public"
    if caller.role == "reader":
        return surface.governanceState == "approved"
    return True


def catalog(snapshot: Snapshot, caller: Caller) -> list[dict[str, Any]]:
    return [s.public() for s in snapshot.surfaces if can_see(s, caller)]


def channel(snapshot: Snapshot, caller: Caller, kind: ChannelKind) -> list[dict[str, Any]]:
    return [
        s.channel_entry(kind)
        for s in snapshot.surfaces
        if kind in s.channels and can_see(s, caller)
    ]


def page(snapshot: Snapshot, caller: Caller) -> dict[str, Any]:
    visible_ids = {s.id for s in snapshot.surfaces if can_see(s, caller)}
    cards = []
    for card in snapshot.page.cards:
        if caller.role == "anonymous" and card.visibility != "public":
            continue
        components = [
            c.model_dump(exclude_none=True)
            for c in card.components
            if c.surfaceId is None or c.surfaceId in visible_ids
        ]
        cards.append(card.model_dump(exclude={"components"}) | {"components": components})
    return {"title": snapshot.page.title, "cards": cards}


def sessions(snapshot: Snapshot) -> list[dict[str, Any]]:
    records = []
    for event in snapshot.sessions:
        if isinstance(event, SessionIssued):
            record = {
                "id": event.id,
                "subject": event.subject,
                "createdAt": iso(event.createdAt),
                "expiresAt": iso(event.expiresAt),
            }
            revoked_at = snapshot.session_revoked_at.get(event.id)
            if revoked_at is not None:
                record["revokedAt"] = iso(revoked_at)
            records.append(record)
    return records


def credentials(snapshot: Snapshot) -> list[dict[str, Any]]:
    revoked: dict[str, datetime] = {}
    for revoke in snapshot.credential_revokes:
        revoked.setdefault(revoke.credentialId, revoke.at)
    records = []
    for credential in snapshot.credentials:
        record = public_record(credential)
        del record["event"]
        if credential.id in revoked:
            record["revokedAt"] = iso(revoked[credential.id])
        records.append(record)
    return records


def trail(snapshot: Snapshot, name: str) -> list[dict[str, Any]]:
    return [public_record(r) for r in snapshot.trails()[name]]


def _moment(record: Any) -> datetime:
    if isinstance(record, SessionIssued):
        return record.createdAt
    if isinstance(record, CredentialIssued):
        return record.issuedAt
    at: datetime = record.at
    return at


def audit(snapshot: Snapshot) -> list[dict[str, Any]]:
    """All trails merged oldest first; ties keep the trails' order."""
    entries = [
        (_moment(record), name, record)
        for name, records in snapshot.trails().items()
        for record in records
    ]
    entries.sort(key=lambda entry: entry[0])
    return [
        {"at": iso(moment), "trail": name, "record": public_record(record)}
        for moment, name, record in entries
    ]
