"""A software WebAuthn authenticator for tests: ES256 (P-256), attestation "none", built by hand.

It produces the PublicKeyCredential JSON a browser would send (binary values in unpadded base64url),
from the options JSON the server returned, and lets a test bend any part of it: the origin in the
client data, the RP id hashed into the authenticator data, the user-presence flag, the signature
counter, the signature itself.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import struct
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from webauthn.helpers import bytes_to_base64url, encode_cbor

FLAG_USER_PRESENT = 0x01
FLAG_USER_VERIFIED = 0x04
FLAG_ATTESTED_DATA = 0x40
AAGUID = bytes(16)


class SoftwareAuthenticator:
    def __init__(self, *, counts: bool = True) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.credential_id = secrets.token_bytes(16)
        self.sign_count = 0
        self.counts = counts
        """False: an authenticator without a counter (always reports 0)."""

    @property
    def id(self) -> str:
        return bytes_to_base64url(self.credential_id)

    def cose_public_key(self) -> bytes:
        numbers = self.key.public_key().public_numbers()
        # kty EC2, alg ES256, crv P-256, x, y
        return encode_cbor(
            {
                1: 2,
                3: -7,
                -1: 1,
                -2: numbers.x.to_bytes(32, "big"),
                -3: numbers.y.to_bytes(32, "big"),
            }
        )

    def _authenticator_data(self, rp_id: str, flags: int, counter: int, attested: bool) -> bytes:
        data = hashlib.sha256(rp_id.encode()).digest() + bytes([flags]) + struct.pack(">I", counter)
        if attested:
            data += AAGUID + struct.pack(">H", len(self.credential_id)) + self.credential_id
            data += self.cose_public_key()
        return data

    def _next_counter(self, counter: int | None) -> int:
        if counter is not None:
            return counter
        if self.counts:
            self.sign_count += 1
            return self.sign_count
        return 0

    @staticmethod
    def _client_data(kind: str, options: dict[str, Any], origin: str) -> bytes:
        return json.dumps(
            {
                "type": kind,
                "challenge": options["challenge"],
                "origin": origin,
                "crossOrigin": False,
            }
        ).encode()

    def attest(
        self,
        options: dict[str, Any],
        origin: str,
        *,
        rp_id: str | None = None,
        user_present: bool = True,
    ) -> dict[str, Any]:
        """The answer to navigator.credentials.create() for these creation options."""
        flags = FLAG_ATTESTED_DATA | FLAG_USER_VERIFIED | (FLAG_USER_PRESENT if user_present else 0)
        auth_data = self._authenticator_data(
            rp_id or options["rp"]["id"], flags, self.sign_count, attested=True
        )
        attestation = encode_cbor({"fmt": "none", "attStmt": {}, "authData": auth_data})
        return {
            "id": self.id,
            "rawId": self.id,
            "type": "public-key",
            "response": {
                "clientDataJSON": bytes_to_base64url(
                    self._client_data("webauthn.create", options, origin)
                ),
                "attestationObject": bytes_to_base64url(attestation),
                "transports": ["internal"],
            },
            "authenticatorAttachment": "platform",
            "clientExtensionResults": {},
        }

    def assertion(
        self,
        options: dict[str, Any],
        origin: str,
        *,
        rp_id: str | None = None,
        user_present: bool = True,
        counter: int | None = None,
        corrupt_signature: bool = False,
    ) -> dict[str, Any]:
        """The answer to navigator.credentials.get() for these request options."""
        flags = FLAG_USER_VERIFIED | (FLAG_USER_PRESENT if user_present else 0)
        auth_data = self._authenticator_data(
            rp_id or options["rpId"], flags, self._next_counter(counter), attested=False
        )
        client_data = self._client_data("webauthn.get", options, origin)
        signature = self.key.sign(
            auth_data + hashlib.sha256(client_data).digest(), ec.ECDSA(hashes.SHA256())
        )
        if corrupt_signature:
            signature = signature[:-1] + bytes([signature[-1] ^ 0x01])
        return {
            "id": self.id,
            "rawId": self.id,
            "type": "public-key",
            "response": {
                "clientDataJSON": bytes_to_base64url(client_data),
                "authenticatorData": bytes_to_base64url(auth_data),
                "signature": bytes_to_base64url(signature),
                "userHandle": None,
            },
            "authenticatorAttachment": "platform",
            "clientExtensionResults": {},
        }
