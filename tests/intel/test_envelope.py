"""The envelope's canonical form, signature and freshness, by example and by property."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server_stub.intel.envelope import (
    IntelRejected,
    format_time,
    json_schema,
    key_bytes,
    sign,
    verify,
)

KEY = key_bytes("envelope-test-key-3Vn8Qw5Er2Ty7Ui4Op9As")
NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


def draft(**overrides: Any) -> dict[str, Any]:
    return {
        "source": "desk-7",
        "kind": "note",
        "body": {"symbol": "ABC", "view": "long"},
    } | overrides


def rejected_code(document: Any, now: datetime = NOW, key: bytes = KEY) -> str:
    with pytest.raises(IntelRejected) as caught:
        verify(document, key, now)
    return caught.value.code


def test_a_signed_draft_verifies_and_is_completed() -> None:
    envelope = sign(draft(), KEY, NOW)
    assert envelope["schema"] == "svc.intel.v1"
    assert envelope["issued_at"] == "2026-11-21T12:00:00Z"
    assert envelope["id"].startswith("intel-")
    assert verify(envelope, KEY, NOW).id == envelope["id"]


def test_reordered_and_respaced_json_still_verifies() -> None:
    envelope = sign(draft(body={"b": [1, 2.5, {"z": None, "a": "é"}], "a": True}), KEY, NOW)
    reordered = dict(reversed(list(envelope.items())))
    reordered["body"] = dict(reversed(list(envelope["body"].items())))
    respaced = json.loads(json.dumps(reordered, indent=7, ensure_ascii=True))
    assert verify(respaced, KEY, NOW).id == envelope["id"]


@pytest.mark.parametrize(
    ("change", "code"),
    [
        (lambda e: e | {"source": "desk-8"}, "bad_signature"),
        (lambda e: e | {"body": {"symbol": "ABD", "view": "long"}}, "bad_signature"),
        (lambda e: e | {"sig": e["sig"][:-1]}, "invalid_envelope"),
        (
            lambda e: e | {"sig": ("A" if e["sig"][0] != "A" else "B") + e["sig"][1:]},
            "bad_signature",
        ),
        (lambda e: {k: v for k, v in e.items() if k != "sig"}, "missing_signature"),
        (lambda e: e | {"schema": "svc.intel.v2"}, "unknown_schema"),
        (lambda e: e | {"extra": 1}, "invalid_envelope"),
        (lambda e: e | {"body": "not an object"}, "invalid_envelope"),
        (lambda e: e | {"issued_at": "2026-11-21 12:00:00"}, "invalid_envelope"),
        (lambda e: [e], "invalid_envelope"),
    ],
)
def test_tampering_is_refused(change: Any, code: str) -> None:
    assert rejected_code(change(sign(draft(), KEY, NOW))) == code


def test_a_wrong_key_is_refused() -> None:
    envelope = sign(draft(), key_bytes("another-test-key-6Dj1Fk8Gl3Hz5Xc0Vb7Nm"), NOW)
    assert rejected_code(envelope) == "bad_signature"


def test_freshness() -> None:
    future = sign(draft(issued_at=format_time(NOW + timedelta(minutes=6))), KEY, NOW)
    assert rejected_code(future) == "not_yet_valid"
    assert verify(
        sign(draft(issued_at=format_time(NOW + timedelta(minutes=4))), KEY, NOW), KEY, NOW
    )
    stale = sign(draft(issued_at=format_time(NOW - timedelta(hours=25))), KEY, NOW)
    assert rejected_code(stale) == "expired"
    long_lived = draft(
        issued_at=format_time(NOW - timedelta(hours=25)),
        expires_at=format_time(NOW + timedelta(hours=1)),
    )
    assert verify(sign(long_lived, KEY, NOW), KEY, NOW)
    expired = sign(
        draft(
            expires_at=format_time(NOW - timedelta(seconds=1)),
            issued_at=format_time(NOW - timedelta(hours=1)),
        ),
        KEY,
        NOW,
    )
    assert rejected_code(expired) == "expired"
    with pytest.raises(IntelRejected, match="expires_at must be after issued_at"):
        sign(draft(expires_at=format_time(NOW - timedelta(hours=2))), KEY, NOW)


def test_short_keys_and_signed_drafts_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 32 bytes"):
        key_bytes("short")
    with pytest.raises(IntelRejected, match="already has a sig"):
        sign(draft(sig="x"), KEY, NOW)


def test_the_published_schema_matches_the_model(tmp_path: Any) -> None:
    from tests.support import ROOT

    published = json.loads((ROOT / "docs" / "schemas" / "svc.intel.v1.schema.json").read_text())
    assert published == json_schema()


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53) + 1, 2**53 - 1)
    | st.text(max_size=20)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
drafts = st.fixed_dictionaries(
    {
        "source": st.text(min_size=1, max_size=30),
        "kind": st.text(min_size=1, max_size=20),
        "body": st.dictionaries(st.text(max_size=10), json_values, max_size=5),
    }
)


@settings(max_examples=200)
@given(drafts)
def test_any_signed_envelope_verifies_after_a_json_round_trip(document: dict[str, Any]) -> None:
    envelope = sign(document, KEY, NOW)
    assert verify(json.loads(json.dumps(envelope)), KEY, NOW).id == envelope["id"]


@settings(max_examples=200)
@given(drafts, st.sampled_from(["source", "kind", "body", "id", "issued_at"]), st.data())
def test_any_single_field_change_fails(
    document: dict[str, Any], field: str, data: st.DataObject
) -> None:
    envelope = sign(document, KEY, NOW)
    if field == "body":
        new_value: Any = data.draw(st.dictionaries(st.text(max_size=10), json_values, max_size=5))
    elif field == "issued_at":
        new_value = format_time(NOW - timedelta(seconds=data.draw(st.integers(1, 3600))))
    elif field == "id":
        new_value = data.draw(st.from_regex(r"[A-Za-z0-9._:-]{1,20}", fullmatch=True))
    else:
        new_value = data.draw(st.text(min_size=1, max_size=30))
    if json.dumps(new_value, sort_keys=True) == json.dumps(envelope[field], sort_keys=True):
        return  # not a change
    with pytest.raises(IntelRejected) as caught:
        verify(envelope | {field: new_value}, KEY, NOW)
    assert caught.value.code == "bad_signature"


def test_only_the_canonical_spelling_of_the_signature_verifies() -> None:
    envelope = sign(draft(), KEY, NOW)
    sig = envelope["sig"]
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    last = alphabet.index(sig[-1])
    # 43 characters hold 258 bits for a 256-bit digest: the last character's two low bits are
    # spare, so these three other spellings decode to the very same bytes.
    others = [sig[:-1] + alphabet[(last & ~0b11) | spare] for spare in range(4)]
    others.remove(sig)
    assert len(others) == 3
    for other in others:
        assert base64.urlsafe_b64decode(other + "=") == base64.urlsafe_b64decode(sig + "=")
        assert rejected_code(envelope | {"sig": other}) == "bad_signature"
    for padded in (sig + "=", sig + "=="):
        assert rejected_code(envelope | {"sig": padded}) == "invalid_envelope"
    assert verify(envelope, KEY, NOW).id == envelope["id"]


def test_a_body_nested_deeper_than_32_levels_is_refused() -> None:
    body: dict[str, Any] = {"leaf": [1]}
    for _ in range(30):
        body = {"d": body}
    assert verify(sign(draft(body=body), KEY, NOW), KEY, NOW).body == body  # 32 levels
    with pytest.raises(IntelRejected) as caught:
        sign(draft(body={"d": body}), KEY, NOW)
    assert (caught.value.status, caught.value.code) == (422, "too_deep")
