"""`submit_intel` end to end against a real `svc-stub service`: signed by the operator's signer,
forwarded by a real `svc-mcp` (stdio and CLI), listed by `get_intel`; the intake under concurrent
load; and the MCP package never reading SERVICE_INTEL_HMAC."""

from __future__ import annotations

import asyncio
import json
import os
import random
import sqlite3
import subprocess
from collections.abc import Iterator, MutableMapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from unittest import mock

import httpx
import pytest
from mcp import Client, ClientSession, StdioServerParameters, stdio_client

from server_stub.intel.envelope import format_time, key_bytes, nesting_depth, sign, signature
from svc_mcp.cli import main as svc_mcp_cli
from svc_mcp.core.client import new_http_client
from svc_mcp.serve.server import build_server
from svc_mcp.tools.table import TOOLS
from tests.e2e import e2e_fixture
from tests.mcp.conftest import (
    INTEL_KEY,
    SVC_MCP,
    SVC_STUB,
    ServiceStub,
    process_env,
    run_in_process,
    service_stub,
)


@e2e_fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceStub]:
    with service_stub(tmp_path_factory.mktemp("intel-service")) as stub:
        yield stub


def signed(**fields: Any) -> dict[str, Any]:
    draft = {"source": "desk-7", "kind": "note", "body": {"symbol": "ABC", "view": "long"}}
    return sign(draft | fields, key_bytes(INTEL_KEY), datetime.now(UTC))


def inbox(db: Path) -> list[str]:
    with sqlite3.connect(db) as connection:
        return [row[0] for row in connection.execute("SELECT id FROM intel_inbox")]


async def submit_and_list(variables: dict[str, str], envelope: dict[str, Any]) -> dict[str, Any]:
    server = StdioServerParameters(command=SVC_MCP, args=[], env=process_env(variables))
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        first = await session.call_tool("submit_intel", {"envelope": envelope})
        again = await session.call_tool("submit_intel", {"envelope": envelope})
        unsigned = {k: v for k, v in envelope.items() if k != "sig"} | {"id": "never-sent"}
        refused = await session.call_tool("submit_intel", {"envelope": unsigned})
        tampered = await session.call_tool(
            "submit_intel", {"envelope": envelope | {"id": "tampered-1"}}
        )
        listed = await session.call_tool("get_intel", {"limit": 1000})
        return {
            "first": first,
            "again": again,
            "refused": refused,
            "tampered": tampered,
            "listed": listed,
        }


def test_sign_submit_over_stdio_then_list(service: ServiceStub, tmp_path: Path) -> None:
    draft = tmp_path / "draft.json"
    draft.write_text(json.dumps({"source": "desk-9", "kind": "alert", "body": {"text": "é ✓"}}))
    signer = subprocess.run(
        [SVC_STUB, "intel", "sign", "--file", str(draft)],
        env={**os.environ, "SERVICE_INTEL_HMAC": INTEL_KEY},
        capture_output=True,
        text=True,
        check=True,
    )
    envelope = json.loads(signer.stdout)
    results = asyncio.run(submit_and_list(service.env(), envelope))

    assert not results["first"].is_error, results["first"].content
    assert results["first"].structured_content["duplicate"] is False
    assert results["again"].structured_content["duplicate"] is True
    assert results["refused"].is_error
    assert "sig" in results["refused"].content[0].text
    assert results["tampered"].is_error
    assert "bad_signature" in results["tampered"].content[0].text

    listed = results["listed"].structured_content["result"]
    mine = [item for item in listed if item["id"] == envelope["id"]]
    assert len(mine) == 1
    for field in ("schema", "source", "kind", "issued_at", "body"):
        assert mine[0][field] == envelope[field]
    ids = inbox(service.db)
    assert "never-sent" not in ids
    assert "tampered-1" not in ids
    posts = [line for line in service.log_path.read_text().splitlines() if '"POST"' in line]
    assert len(posts) == 3, "the unsigned envelope was refused before anything was sent"


def test_submit_from_the_cli_by_file_and_stdin(service: ServiceStub, tmp_path: Path) -> None:
    path = tmp_path / "envelope.json"
    envelope = signed()
    path.write_text(json.dumps(envelope))
    by_file = run_in_process(svc_mcp_cli.main, ["submit_intel", "--file", str(path)], service.env())
    assert by_file.returncode == 0, by_file.stderr
    assert json.loads(by_file.stdout)["id"] == envelope["id"]
    again = subprocess.run(
        [SVC_MCP, "submit_intel", "--file", "-"],
        input=json.dumps(envelope),
        env=process_env(service.env()),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["duplicate"] is True
    missing = run_in_process(
        svc_mcp_cli.main, ["submit_intel", "--file", str(tmp_path / "nope")], service.env()
    )
    assert missing.returncode == 2
    assert "cannot read" in missing.stderr


async def _flood(
    base_url: str, headers: dict[str, str], envelopes: list[dict[str, Any]]
) -> list[int]:
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    for item in envelopes:
        queue.put_nowait(item)
    statuses: list[int] = []

    async def worker() -> None:
        async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=30) as client:
            while not queue.empty():
                item = queue.get_nowait()
                response = await client.post("/api/v1/intel", json=item)
                statuses.append(response.status_code)

    await asyncio.gather(*(worker() for _ in range(50)))
    return statuses


@pytest.mark.e2e
def test_concurrent_submissions_keep_every_envelope_once(tmp_path: Path) -> None:
    envelopes = [signed(id=f"load-{index:04d}") for index in range(1000)]
    replays = random.Random(5).sample(envelopes, 200)
    mixed = envelopes + replays
    random.Random(6).shuffle(mixed)
    with service_stub(tmp_path) as stub:
        statuses = asyncio.run(_flood(stub.base_url, stub.headers(), mixed))
        ids = inbox(stub.db)
    assert len(statuses) == 1200
    assert statuses.count(201) == 1000
    assert statuses.count(200) == 200
    assert sorted(ids) == sorted(e["id"] for e in envelopes)


class RecordingEnviron(MutableMapping[str, str]):
    """os.environ, recording every variable whose value is read."""

    def __init__(self, real: MutableMapping[str, str]) -> None:
        self.real = real
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> str:
        self.read.add(key)
        return self.real[key]

    def __setitem__(self, key: str, value: str) -> None:
        self.real[key] = value

    def __delitem__(self, key: str) -> None:
        del self.real[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.real)

    def __len__(self) -> int:
        return len(self.real)

    # What the test harness (mock.patch.dict, run_in_process) does to set the scene, unrecorded.
    def copy(self) -> dict[str, str]:
        return dict(self.real)

    def clear(self) -> None:
        self.real.clear()

    def pop(self, key: str, *default: Any) -> Any:
        return self.real.pop(key, *default)


async def _serve_in_process(envelope: dict[str, Any]) -> None:
    async with new_http_client() as http, Client(build_server(TOOLS, http)) as client:
        assert not (await client.call_tool("get_system", {})).is_error
        assert not (await client.call_tool("submit_intel", {"envelope": envelope})).is_error
        await client.call_tool("portal_catalog", {})


def test_the_mcp_package_never_reads_the_intel_key(service: ServiceStub, tmp_path: Path) -> None:
    recording = RecordingEnviron(os.environ)
    variables = {**service.env(), "SERVICE_INTEL_HMAC": INTEL_KEY}
    envelope_file = tmp_path / "envelope.json"
    envelope_file.write_text(json.dumps(signed()))
    with mock.patch.object(os, "environ", recording):
        assert run_in_process(svc_mcp_cli.main, ["get_system"], variables).returncode == 0
        assert run_in_process(svc_mcp_cli.main, ["tools", "--json"], variables).returncode == 0
        result = run_in_process(
            svc_mcp_cli.main, ["submit_intel", "--file", str(envelope_file)], variables
        )
        assert result.returncode == 0, result.stderr
        with mock.patch.dict(os.environ, variables):
            asyncio.run(_serve_in_process(signed()))
    assert "SERVICE_API_TOKEN" in recording.read, "the audit must see what the package reads"
    assert "SERVICE_INTEL_HMAC" not in recording.read


def nested(levels: int) -> dict[str, Any]:
    """A body whose objects nest exactly `levels` deep."""
    body: dict[str, Any] = {"leaf": True}
    for _ in range(levels - 1):
        body = {"d": body}
    return body


def signed_unchecked(body: dict[str, Any]) -> dict[str, Any]:
    """Signed without `sign`'s own shape check, as a foreign signer would."""
    document = {
        "schema": "svc.intel.v1",
        "id": f"deep-{nesting_depth(body)}",
        "issued_at": format_time(datetime.now(UTC)),
        "source": "desk-7",
        "kind": "note",
        "body": body,
    }
    return document | {"sig": signature(document, key_bytes(INTEL_KEY))}


async def read_intel_over_stdio(variables: dict[str, str]) -> Any:
    server = StdioServerParameters(command=SVC_MCP, args=[], env=process_env(variables))
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return await session.call_tool("get_intel", {"limit": 5})


@pytest.mark.e2e
def test_a_body_nested_too_deep_is_refused_and_the_inbox_stays_readable(tmp_path: Path) -> None:
    with service_stub(tmp_path) as stub:
        with httpx.Client(base_url=stub.base_url, headers=stub.headers(), timeout=30) as http:
            for levels in (33, 300):
                refused = http.post("/api/v1/intel", json=signed_unchecked(nested(levels)))
                assert refused.status_code == 422, levels
                assert refused.json()["error"] == {
                    "code": "too_deep",
                    "message": "body nests objects or arrays more than 32 levels deep",
                }
            accepted = http.post("/api/v1/intel", json=signed_unchecked(nested(32)))
            assert accepted.status_code == 201
            listed = http.get("/api/v1/intel")
            assert listed.status_code == 200
            assert [item["id"] for item in listed.json()["data"]] == ["deep-32"]
            assert listed.json()["data"][0]["body"] == nested(32)
        result = asyncio.run(read_intel_over_stdio(stub.env()))
        assert inbox(stub.db) == ["deep-32"]
    assert not result.is_error, result.content
    assert [item["id"] for item in result.structured_content["result"]] == ["deep-32"]
