"""The contracts the client and the stubs keep on either side of the wall, each written once in
`svc_serving.contracts` and held here where a side could still part from it (the intel cap and
the URL cap are held by behaviour beside their servers: tests/intel/test_intake.py,
tests/service/test_stack.py; the start-up line by tests/confinement/test_confine_line.py)."""

from __future__ import annotations

import typing

from server_stub.intel.envelope import SCHEMA_TAG, IntelEnvelope
from server_stub.telemetry import request_id
from svc_mcp.core.telemetry import backend_request
from svc_mcp.tools.service import INTEL_SCHEMA_TAG, SERVICE_TOOLS
from svc_serving import contracts


def test_the_intel_tag_is_one_on_both_sides() -> None:
    assert INTEL_SCHEMA_TAG == SCHEMA_TAG == contracts.INTEL_SCHEMA_TAG
    # The stub's model spells it as a type, the client's input schema as an enum.
    annotation = IntelEnvelope.model_fields["schema_tag"].annotation
    assert typing.get_args(annotation) == (contracts.INTEL_SCHEMA_TAG,)
    (submit,) = [spec for spec in SERVICE_TOOLS if spec.name == "submit_intel"]
    schema = submit.input_schema()["properties"]["envelope"]["properties"]["schema"]
    assert schema["enum"] == [contracts.INTEL_SCHEMA_TAG]


def test_the_stubs_log_the_request_id_the_client_sends() -> None:
    with backend_request("service", "GET", "/api/v1/system") as request:
        sent = request.headers["X-Request-Id"]
    scope = {"headers": [(b"x-request-id", sent.encode())]}
    assert request_id(scope) == sent == request.request_id
    longer = {"headers": [(b"x-request-id", sent.encode() * 3)]}
    assert request_id(longer) != sent * 3
