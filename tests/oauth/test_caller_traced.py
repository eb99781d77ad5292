"""The caller of an OAuth call on its span (subject and client id), and the token on none of the
spans, metrics or log lines, with the gateway exporting to an OTLP receiver on loopback."""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx

from svc_mcp.demo.trace import otel_env, receiving
from tests.mcp.conftest import PortalStub
from tests.oauth.conftest import auth_server, service_client, start_gateway
from tests.support import reserved_port


def test_the_span_names_the_caller_and_never_carries_the_token(
    portal: PortalStub, idp_root: Path, tmp_path: Path
) -> None:
    with reserved_port() as port:
        url = f"http://127.0.0.1:{port}/mcp"
        trace_id, span_id = os.urandom(16).hex(), os.urandom(8).hex()
        with (
            receiving() as receiver,
            auth_server(idp_root, [url], [service_client("nightly-report")], "k1") as (idp, _),
            start_gateway(
                portal, tmp_path / "gateway.log", idp.issuer, port, **otel_env(receiver, "gw")
            ) as gateway,
        ):
            token = idp.token("nightly-report", resource=url)
            answer = httpx.post(
                url,
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {
                        "name": "portal_catalog",
                        "arguments": {},
                        "_meta": {"traceparent": f"00-{trace_id}-{span_id}-01"},
                    },
                },
                headers={
                    "Authorization": f"Bearer {token}",
                    "Content-Type": "application/json",
                    "Accept": "application/json, text/event-stream",
                    "MCP-Protocol-Version": "2025-06-18",
                },
            )
            assert answer.status_code == 200, answer.text
            receiver.wait_for(lambda r: any(s.kind == "server" for s in r.trace(trace_id)))
            receiver.wait_for(lambda r: "mcp.server.operation.duration" in r.metrics)
            log = gateway.log()
        (span,) = [s for s in receiver.trace(trace_id) if s.kind == "server"]
        assert span.attributes["enduser.id"] == "nightly-report"
        assert span.attributes["oauth.client_id"] == "nightly-report"
        exported = b"".join(receiver.bodies)  # every OTLP request the gateway made, as sent
        for secret in (token, token.split(".")[2]):
            assert secret.encode() not in exported
            assert secret not in log
        # Metrics are not keyed by caller: a subject per series would grow without bound.
        assert "nightly-report" not in json.dumps(receiver.metrics, default=str)
