"""A realistic, deterministic demo data set for the portal stub.

The same seed gives the same bytes. Demo sessions are issued for tokens nobody keeps (random but
seeded, then discarded); use `svc-stub admin portal issue-session` for a session you can use.
"""

from __future__ import annotations

import hashlib
import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from server_stub.files import write_json_atomically, write_trail
from server_stub.portal.models import iso
from server_stub.portal.store import TRAILS, load_snapshot

EPOCH = datetime(2026, 11, 1, 8, 0, tzinfo=UTC)

PRINCIPALS = [
    {"id": "alice", "kind": "human", "role": "auditor", "email": "alice@example.test"},
    {"id": "bob", "kind": "human", "role": "maintainer", "email": "bob@example.test"},
    {"id": "carol", "kind": "human", "role": "reader", "email": "carol@example.test"},
    {"id": "dave", "kind": "human", "role": "reader", "email": "dave@example.test"},
    {"id": "audit-bot", "kind": "service", "role": "auditor"},
    {"id": "deploy-bot", "kind": "service", "role": "maintainer"},
    {"id": "research-agent", "kind": "agent", "role": "reader"},
]

_NAMES = [
    "billing",
    "ledger",
    "search",
    "inventory",
    "pricing",
    "risk",
    "reports",
    "alerts",
    "identity",
    "catalog",
    "shipping",
    "metrics",
    "docs",
    "tickets",
    "payroll",
    "forecast",
    "audit-log",
    "feature-flags",
    "notifications",
    "exports",
    "onboarding",
    "quotes",
]
_STATES = ["approved"] * 5 + ["internal", "draft", "review", "deprecated"]
_VISIBILITY = ["public"] * 3 + ["internal", "restricted"]
_CHANNEL_SETS = [["mcp", "web", "cli"], ["mcp"], ["web"], ["cli"], ["mcp", "web"], ["web", "cli"]]


def _surface(rng: random.Random, name: str) -> dict[str, Any]:
    channels = rng.choice(_CHANNEL_SETS)
    version = f"{rng.randint(0, 3)}.{rng.randint(0, 12)}.{rng.randint(0, 9)}"
    surface: dict[str, Any] = {
        "id": name,
        "name": name.replace("-", " ").title(),
        "version": version,
        "channels": channels,
        "governanceState": rng.choice(_STATES),
        "visibility": rng.choice(_VISIBILITY),
    }
    if "mcp" in channels:
        surface["mcp"] = {"endpoint": f"https://mcp.example.test/{name}/mcp"}
    if "web" in channels:
        surface["web"] = {"href": f"https://portal.example.test/apps/{name}"}
    if "cli" in channels:
        registry = rng.choice(["jsr", "npm"])
        package = f"jsr:@svc/{name}" if registry == "jsr" else f"npm:@svc/{name}"
        surface["cli"] = {"package": f"{package}@{version}"}
    return surface


def _page(surfaces: list[dict[str, Any]]) -> dict[str, Any]:
    public = [s["id"] for s in surfaces if s["visibility"] == "public"][:4]
    internal = [s["id"] for s in surfaces if s["visibility"] != "public"][:3]
    return {
        "title": "Service portal",
        "cards": [
            {
                "id": "welcome",
                "title": "Welcome",
                "visibility": "public",
                "components": [
                    {"type": "text", "text": "Find every service surface in one place."},
                    {"type": "link", "label": "Status", "href": "https://status.example.test"},
                ],
            },
            {
                "id": "featured",
                "title": "Featured services",
                "visibility": "public",
                "components": [{"type": "surface", "surfaceId": sid} for sid in public + internal],
            },
            {
                "id": "operations",
                "title": "Operations",
                "visibility": "internal",
                "components": [
                    {"type": "metric", "label": "Open incidents", "value": 2},
                    {
                        "type": "link",
                        "label": "Runbooks",
                        "href": "https://wiki.example.test/runbooks",
                    },
                ],
            },
        ],
    }


def _trails(rng: random.Random, surfaces: list[str]) -> dict[str, list[dict[str, Any]]]:
    people = [p["id"] for p in PRINCIPALS]
    humans = [p["id"] for p in PRINCIPALS if p["kind"] == "human"]
    moment = EPOCH - timedelta(days=30)
    trails: dict[str, list[dict[str, Any]]] = {name: [] for name in TRAILS}

    def tick() -> datetime:
        nonlocal moment
        moment += timedelta(minutes=rng.randint(3, 90))
        return moment

    def ident(prefix: str) -> str:
        return f"{prefix}_{rng.getrandbits(64):016x}"

    def digest() -> str:
        return hashlib.sha256(rng.randbytes(32)).hexdigest()

    for _ in range(80):
        at = tick()
        sid = ident("ses")
        trails["sessions"].append(
            {
                "event": "issued",
                "id": sid,
                "subject": rng.choice(people),
                "tokenHash": digest(),
                "createdAt": iso(at),
                "expiresAt": iso(at + timedelta(hours=rng.choice([8, 12, 24]))),
            }
        )
        if rng.random() < 0.2:
            revoked_at = at + timedelta(minutes=rng.randint(5, 300))
            trails["sessions"].append({"event": "revoked", "id": sid, "at": iso(revoked_at)})
        if rng.random() < 0.5:
            cid = ident("cred")
            subject = rng.choice(people)
            trails["credentials"].append(
                {
                    "event": "issued",
                    "id": cid,
                    "subject": subject,
                    "credentialRef": f"key:{digest()[:12]}",
                    "issuer": rng.choice(["portal-admin", "ci-issuer"]),
                    "issuedAt": iso(tick()),
                    "secretHash": digest(),
                }
            )
            if rng.random() < 0.25:
                trails["credential-revokes"].append(
                    {
                        "id": ident("crv"),
                        "at": iso(tick()),
                        "credentialId": cid,
                        "subject": subject,
                        "revokedBy": "alice",
                        "reason": rng.choice(["rotated", "leaked in a log", "owner left"]),
                    }
                )
        if rng.random() < 0.3:
            subject, role = rng.choice(people), rng.choice(["reader", "maintainer", "auditor"])
            trails["grants"].append(
                {
                    "id": ident("grt"),
                    "at": iso(tick()),
                    "subject": subject,
                    "role": role,
                    "grantedBy": "alice",
                }
            )
            if role != "reader" and rng.random() < 0.4:
                trails["revokes"].append(
                    {
                        "id": ident("rvk"),
                        "at": iso(tick()),
                        "subject": subject,
                        "role": role,
                        "revokedBy": "alice",
                        "reason": rng.choice(["role change", "audit finding"]),
                    }
                )
        for _ in range(rng.randint(1, 4)):
            allowed = rng.random() < 0.8
            trails["gateway-access"].append(
                {
                    "id": ident("gw"),
                    "at": iso(tick()),
                    "subject": rng.choice(people + humans),
                    "surface": rng.choice(surfaces),
                    "decision": "allowed" if allowed else "denied",
                    "reason": "grant matched"
                    if allowed
                    else rng.choice(["no grant", "surface not approved", "expired grant"]),
                }
            )
    return trails


def write_demo_data(data_dir: Path, seed: int = 7) -> dict[str, int]:
    """Writes the data set into `data_dir` (created if needed); returns record counts."""
    rng = random.Random(seed)
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "audit").mkdir(exist_ok=True)
    surfaces = [_surface(rng, name) for name in _NAMES]
    write_json_atomically(data_dir / "catalog.json", surfaces)
    write_json_atomically(data_dir / "page.json", _page(surfaces))
    write_json_atomically(data_dir / "principals.json", PRINCIPALS)
    trails = _trails(rng, [s["id"] for s in surfaces])
    for name, records in trails.items():
        lines = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records)
        write_trail(data_dir / "audit" / TRAILS[name], lines)
    load_snapshot(data_dir)  # what we wrote must load
    return {"surfaces": len(surfaces)} | {name: len(records) for name, records in trails.items()}
