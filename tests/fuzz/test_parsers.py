# ruff: noqa: PT017 (either outcome is allowed, so the refusal is checked where it is caught)
"""Parsers of outside input, alone: each returns a valid value or raises its documented error."""

from __future__ import annotations

import ipaddress
import json
from datetime import UTC, datetime
from typing import Any

import jwt
import pytest
from hypothesis import given
from hypothesis import strategies as st

from server_stub.http import ApiError, _decode_cursor, encode_cursor
from server_stub.intel.envelope import IntelEnvelope, IntelRejected, key_bytes, sign, verify
from server_stub.portal.auth import AccessProxyConfig
from server_stub.service.client_ip import (
    bucket_key,
    client_address,
    forwarded_chain,
    normalize_address,
)
from server_stub.service.intake import parse_envelope
from tests.fuzz.conftest import FUZZ, JSON_VALUES

ADDRESS_TEXT = st.one_of(
    st.ip_addresses().map(str),
    st.ip_addresses(v=6).map(lambda a: f"[{a}]:{443}"),
    st.ip_addresses(v=4).map(lambda a: f"{a}:8080"),
    st.text(st.sampled_from("0123456789abcdef.:[]%, "), max_size=45),
    st.text(max_size=45),
)


@FUZZ
@given(ADDRESS_TEXT)
def test_normalize_address_gives_an_address_or_none(entry: str) -> None:
    normalized = normalize_address(entry)
    if normalized is not None:
        assert str(ipaddress.ip_address(normalized)) == normalized
        assert normalize_address(normalized) == normalized


@FUZZ
@given(
    peer=st.one_of(st.none(), ADDRESS_TEXT),
    headers=st.lists(st.lists(ADDRESS_TEXT, max_size=5).map(", ".join), max_size=3),
    trust=st.booleans(),
    hops=st.integers(min_value=0, max_value=40),
)
def test_the_bucket_key_is_the_peer_or_an_address_from_the_chain(
    peer: str | None, headers: list[str], trust: bool, hops: int
) -> None:
    key = client_address(peer, headers, trust_proxy=trust, hops=hops)
    peer_key = client_address(peer, [], trust_proxy=False, hops=1)
    assert isinstance(key, str)
    assert key
    if not trust:
        assert key == peer_key
    elif key != peer_key:
        chain = forwarded_chain(headers)
        address = normalize_address(chain[-hops])
        assert address is not None
        assert key == bucket_key(address)


@FUZZ
@given(st.integers(min_value=0, max_value=10**12 - 1))
def test_issued_cursors_decode_to_their_offset(offset: int) -> None:
    assert _decode_cursor(encode_cursor(offset)) == offset


@FUZZ
@given(st.text(max_size=100))
def test_any_cursor_is_an_offset_or_a_400(cursor: str) -> None:
    try:
        assert _decode_cursor(cursor) >= 0
    except ApiError as error:
        assert error.status == 400


PROXY_SECRET = "fuzz-proxy-secret-2Jd7Kf4Lg9Hs1Az6Xc3Vb8Nm5Qw0Er2Ty7Ui4Op9AsDfGh"
PROXY = AccessProxyConfig(
    header="Cf-Access-Jwt-Assertion", issuer="https://iss.test", audience="aud", secret=PROXY_SECRET
)
NOW = 1_800_000_000.0
CLAIMS = st.dictionaries(
    st.sampled_from(["iss", "aud", "exp", "nbf", "email", "sub", "iat"]),
    JSON_VALUES | st.sampled_from(["https://iss.test", "aud", NOW + 60, NOW - 60]),
    max_size=7,
)


def _token(claims: dict[str, Any], algorithm: str, key: str | None) -> str:
    # Signed by hand (PyJWS): jwt.encode refuses some claim types a hostile proxy could send.
    return jwt.api_jws.encode(json.dumps(claims).encode(), key, algorithm=algorithm)


JWTS = st.one_of(
    st.text(max_size=300),
    st.builds(_token, CLAIMS, st.sampled_from(["HS256", "HS384", "HS512"]), st.just(PROXY_SECRET)),
    st.builds(_token, CLAIMS, st.just("HS256"), st.text(min_size=32, max_size=40)),
    st.builds(_token, CLAIMS, st.just("none"), st.none()),
    st.builds(
        lambda c, cut: _token(c, "HS256", PROXY_SECRET)[:cut],
        CLAIMS,
        st.integers(min_value=0, max_value=200),
    ),
)


@FUZZ
@given(JWTS)
def test_jwts_verify_or_are_refused_with_401(token: str) -> None:
    try:
        claims = PROXY.verify(token, NOW)
    except ApiError as error:
        assert error.status == 401
    else:
        assert claims["iss"] == "https://iss.test"
        assert isinstance(claims["exp"], int | float)
        assert claims["exp"] > NOW


KEY = key_bytes("envelope-test-key-3Vn8Qw5Er2Ty7Ui4Op9As")
WHEN = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
ENVELOPE_FIELDS = {
    "schema": st.sampled_from(["svc.intel.v1", "svc.intel.v2"]) | JSON_VALUES,
    "id": st.from_regex(r"\A[A-Za-z0-9._:-]{1,20}\Z") | JSON_VALUES,
    "issued_at": st.from_regex(r"\A\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z\Z") | JSON_VALUES,
    "expires_at": st.from_regex(r"\A\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z\Z") | JSON_VALUES,
    "source": JSON_VALUES,
    "kind": JSON_VALUES,
    "body": JSON_VALUES,
    "sig": st.from_regex(r"\A[A-Za-z0-9_-]{43}\Z") | JSON_VALUES,
}
ENVELOPES = st.fixed_dictionaries({}, optional=ENVELOPE_FIELDS) | JSON_VALUES


@FUZZ
@given(ENVELOPES)
def test_any_json_envelope_verifies_or_is_refused(document: Any) -> None:
    try:
        envelope = verify(document, KEY, WHEN)
    except IntelRejected as refusal:
        assert refusal.status in (400, 422)
    else:
        assert isinstance(envelope, IntelEnvelope)


@FUZZ
@given(st.dictionaries(st.sampled_from(list(ENVELOPE_FIELDS)), JSON_VALUES, max_size=6))
def test_signed_drafts_of_any_shape_verify_or_are_refused(draft: dict[str, Any]) -> None:
    draft.pop("sig", None)
    try:
        verify(sign(draft, KEY, WHEN), KEY, WHEN)
    except IntelRejected as refusal:
        assert refusal.status in (400, 422)


@FUZZ
@given(st.binary(max_size=200) | JSON_VALUES.map(lambda v: json.dumps(v).encode()))
def test_any_body_parses_or_is_a_400(raw: bytes) -> None:
    try:
        parse_envelope(raw)
    except ApiError as error:
        assert error.status == 400


@pytest.mark.parametrize("depth", [10, 100_000])
def test_deeply_nested_bodies_are_a_400_not_a_crash(depth: int) -> None:
    raw = b"[" * depth + b"]" * depth
    try:
        parse_envelope(raw)
    except ApiError as error:
        assert error.status == 400


@pytest.mark.parametrize("moment", ["0000-00-00T00:00:00Z", "2026-02-30T12:00:00Z"])
def test_a_time_that_does_not_exist_is_an_invalid_envelope(moment: str) -> None:
    """Found by schemathesis: these matched the pattern and crashed the freshness check (500)."""
    document = sign({"source": "s", "kind": "k", "body": {}}, KEY, WHEN) | {"issued_at": moment}
    with pytest.raises(IntelRejected) as refused:
        verify(document, KEY, WHEN)
    assert (refused.value.status, refused.value.code) == (400, "invalid_envelope")
