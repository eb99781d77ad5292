"""The `svc.intel.v1` envelope: shape, canonical form, HMAC signature and freshness.

`sig` is the base64url (unpadded) HMAC-SHA256 over the RFC 8785 canonical JSON of the envelope
without `sig`. The signature covers the document as received, not a re-serialisation of the model,
so key order and white space never matter and nothing the model might coerce goes unsigned.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

import rfc8785
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from svc_serving.contracts import INTEL_SCHEMA_TAG
from svc_serving.secrets_check import guessable

SCHEMA_TAG = INTEL_SCHEMA_TAG
MIN_KEY_BYTES = 32
MAX_CLOCK_SKEW = timedelta(minutes=5)
MAX_AGE_WITHOUT_EXPIRY = timedelta(hours=24)
TIMESTAMP_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$"
SIG_PATTERN = r"^[A-Za-z0-9_-]{43}$"
MAX_BODY_DEPTH = 32


def _real_time(text: str) -> str:
    """The pattern admits `0000-13-45T99:...`; only a time that exists is one."""
    try:
        datetime.fromisoformat(text)
    except ValueError:
        raise ValueError("not a valid UTC time") from None
    return text


Timestamp = Annotated[str, Field(pattern=TIMESTAMP_PATTERN), AfterValidator(_real_time)]


class IntelRejected(Exception):
    """An envelope refused, with the HTTP status and a stable code. Never carries the key."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


class IntelEnvelope(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True, frozen=True)

    schema_tag: Literal["svc.intel.v1"] = Field(alias="schema")
    id: str = Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9._:-]+$")
    issued_at: Timestamp
    expires_at: Timestamp | None = None
    source: str = Field(min_length=1, max_length=128)
    kind: str = Field(min_length=1, max_length=64)
    body: dict[str, Any]
    sig: str = Field(pattern=SIG_PATTERN)


def json_schema() -> dict[str, Any]:
    """The envelope's JSON Schema, as published in `docs/schemas/svc.intel.v1.schema.json`."""
    schema = IntelEnvelope.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "svc.intel.v1"
    schema["title"] = "svc.intel.v1 envelope"
    return schema


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def format_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def key_bytes(secret: str) -> bytes:
    key = secret.encode()
    if len(key) < MIN_KEY_BYTES:
        raise ValueError(f"the intel signing secret must be at least {MIN_KEY_BYTES} bytes")
    if reason := guessable(secret):
        raise ValueError(f"the intel signing secret {reason}")
    return key


def canonical_bytes(document: Mapping[str, Any]) -> bytes:
    unsigned = {name: value for name, value in document.items() if name != "sig"}
    try:
        return rfc8785.dumps(unsigned)
    except (rfc8785.CanonicalizationError, TypeError) as exc:
        raise IntelRejected(400, "invalid_envelope", f"not canonicalisable JSON: {exc}") from None


def signature(document: Mapping[str, Any], key: bytes) -> str:
    digest = hmac.new(key, canonical_bytes(document), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def nesting_depth(value: Any) -> int:
    """Levels of objects and arrays in `value` (0 for a scalar), counted without recursion."""
    depth, level = 0, [value]
    while level := [item for item in level if isinstance(item, dict | list)]:
        depth += 1
        level = [
            child for item in level for child in (item.values() if isinstance(item, dict) else item)
        ]
    return depth


def validate_shape(document: Any) -> IntelEnvelope:
    if not isinstance(document, dict):
        raise IntelRejected(400, "invalid_envelope", "the envelope must be a JSON object")
    if document.get("schema") != SCHEMA_TAG:
        raise IntelRejected(400, "unknown_schema", f"the schema tag must be {SCHEMA_TAG!r}")
    if "sig" not in document:
        raise IntelRejected(400, "missing_signature", "the envelope has no sig")
    if nesting_depth(document.get("body")) > MAX_BODY_DEPTH:
        # Readers (JSON encoders, the MCP client's models) recurse per level; a body hundreds of
        # levels deep would be stored fine and then break every reader of the inbox.
        raise IntelRejected(
            422, "too_deep", f"body nests objects or arrays more than {MAX_BODY_DEPTH} levels deep"
        )
    try:
        envelope = IntelEnvelope.model_validate(document)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(root)"
        raise IntelRejected(400, "invalid_envelope", f"{where}: {first['msg']}") from None
    if envelope.expires_at is not None and parse_time(envelope.expires_at) <= parse_time(
        envelope.issued_at
    ):
        raise IntelRejected(400, "invalid_envelope", "expires_at must be after issued_at")
    return envelope


def check_signature(document: Mapping[str, Any], key: bytes) -> None:
    # Compared as text, not as decoded bytes: the last of the 43 characters carries two spare bits,
    # so four spellings decode to the same digest; only the canonical one is the signature.
    expected = signature(document, key).encode()
    given = str(document.get("sig", "")).encode("utf-8", "surrogatepass")
    if not hmac.compare_digest(expected, given):
        raise IntelRejected(422, "bad_signature", "the signature does not match the envelope")


def check_freshness(envelope: IntelEnvelope, now: datetime) -> None:
    issued = parse_time(envelope.issued_at)
    if issued > now + MAX_CLOCK_SKEW:
        raise IntelRejected(422, "not_yet_valid", "issued_at is more than 5 minutes in the future")
    if envelope.expires_at is not None:
        if now >= parse_time(envelope.expires_at):
            raise IntelRejected(422, "expired", "the envelope has expired")
    elif now - issued > MAX_AGE_WITHOUT_EXPIRY:
        raise IntelRejected(422, "expired", "issued more than 24 hours ago and has no expires_at")


def verify(document: Any, key: bytes, now: datetime) -> IntelEnvelope:
    """The envelope if its shape, signature and freshness hold; otherwise IntelRejected."""
    envelope = validate_shape(document)
    check_signature(document, key)
    check_freshness(envelope, now)
    return envelope


def sign(draft: Mapping[str, Any], key: bytes, now: datetime) -> dict[str, Any]:
    """Completes a draft (schema tag, `id`, `issued_at` when absent) and signs it."""
    if "sig" in draft:
        raise IntelRejected(400, "already_signed", "the draft already has a sig; remove it first")
    document = {"schema": SCHEMA_TAG, **draft}
    document.setdefault("id", f"intel-{uuid.uuid4().hex}")
    document.setdefault("issued_at", format_time(now))
    document["sig"] = signature(document, key)
    validate_shape(document)
    return document
