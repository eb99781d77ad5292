"""The registered passkeys, kept in `<db_path>.private/webauthn.json` beside the database.

The file is one JSON document (`"format": "svc.webauthn.v1"`): the operator's WebAuthn user handle
and each passkey's credential id, COSE public key, sign counter, RP id, label and times (binary
values unpadded base64url). Every change writes a complete new file atomically and mode 0600
(`write_json_atomically`); the copy in memory changes only after the file did, so a failed write
changes nothing. It is the server's only file write besides the intel intake; the database itself
stays read-only. The file and its temporary one live in the service's private folder
(`server_stub.service.private_dir`), the one folder it may create files in once confined; a
`<db_path>.webauthn` of an earlier version is moved there at start.

A file that cannot be read or is not a valid document stops start-up (`PasskeyFileCorrupt`, a
`StartupRefused`) and is left untouched: replacing it would silently forget every passkey.
"""

from __future__ import annotations

import binascii
import os
from pathlib import Path
from typing import Annotated, Any, Final, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator
from webauthn.helpers import base64url_to_bytes, bytes_to_base64url, generate_user_handle

from server_stub.files import write_json_atomically
from server_stub.service.private_dir import make_private_dir, private_dir
from server_stub.service.settings import StartupRefused

FILE_FORMAT: Final = "svc.webauthn.v1"
MAX_PASSKEYS = 32
MAX_LABEL_LENGTH = 64
MAX_SIGN_COUNT = 0xFFFFFFFF


class PasskeyFileCorrupt(StartupRefused):
    """The passkey file exists but cannot be used; the message says which file and why."""


def _canonical_base64url(value: str) -> str:
    try:
        canonical = bytes_to_base64url(base64url_to_bytes(value))
    except (binascii.Error, ValueError):
        canonical = ""
    if not value or canonical != value:
        raise ValueError("must be non-empty unpadded base64url")
    return value


Base64Url = Annotated[str, AfterValidator(_canonical_base64url)]


class Passkey(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    id: Base64Url
    public_key: Base64Url
    """The credential's COSE public key."""
    sign_count: int = Field(ge=0, le=MAX_SIGN_COUNT)
    rp_id: str
    label: str = Field(min_length=1, max_length=MAX_LABEL_LENGTH)
    created_at: str
    last_used_at: str | None = None

    def listing(self) -> dict[str, Any]:
        """What the operator sees: no key material."""
        return self.model_dump(include={"id", "label", "rp_id", "created_at", "last_used_at"})


class _PasskeyFile(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    format: Literal["svc.webauthn.v1"]
    user_handle: Base64Url
    passkeys: list[Passkey] = Field(max_length=MAX_PASSKEYS)

    @model_validator(mode="after")
    def _unique_ids(self) -> _PasskeyFile:
        if len({passkey.id for passkey in self.passkeys}) != len(self.passkeys):
            raise ValueError("a credential id appears twice")
        return self


def passkey_file(db_path: Path) -> Path:
    return private_dir(db_path) / "webauthn.json"


def open_passkey_store(db_path: Path) -> PasskeyStore:
    """The store of the database at `db_path`, its private folder made (StartupRefused when it
    cannot be used), the file of an earlier version moved into it."""
    make_private_dir(db_path)
    path = passkey_file(db_path)
    earlier = db_path.with_name(db_path.name + ".webauthn")
    if earlier.is_file() and not earlier.is_symlink() and not path.exists():
        os.replace(earlier, path)
    return PasskeyStore(path)


class PasskeyStore:
    def __init__(self, path: Path) -> None:
        """Loads `path` (a missing file is an empty store); raises PasskeyFileCorrupt."""
        self.path = path
        document = self._load()
        self.user_handle = (
            base64url_to_bytes(document.user_handle) if document else generate_user_handle()
        )
        passkeys = document.passkeys if document else []
        self._passkeys = {passkey.id: passkey for passkey in passkeys}

    def _load(self) -> _PasskeyFile | None:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise self._refusal(f"it cannot be read: {reason}") from None
        try:
            return _PasskeyFile.model_validate_json(raw)
        except ValidationError as exc:
            error = exc.errors(include_url=False, include_input=False)[0]
            where = ".".join(str(part) for part in error["loc"]) or "the document"
            raise self._refusal(f"it is corrupt: {where}: {error['msg']}") from None

    def _refusal(self, problem: str) -> PasskeyFileCorrupt:
        return PasskeyFileCorrupt(
            f"the passkey file {self.path} is unusable ({problem}); it was left untouched: "
            "repair or restore it, or move it away to forget all registered passkeys"
        )

    def __len__(self) -> int:
        return len(self._passkeys)

    @property
    def is_full(self) -> bool:
        return len(self._passkeys) >= MAX_PASSKEYS

    def passkeys(self) -> list[Passkey]:
        """In registration order."""
        return list(self._passkeys.values())

    def find(self, passkey_id: str) -> Passkey | None:
        """By credential id (unpadded base64url)."""
        return self._passkeys.get(passkey_id)

    def add(self, passkey: Passkey) -> None:
        """Raises OSError when the file cannot be written (nothing changes then)."""
        self._commit({**self._passkeys, passkey.id: passkey})

    def record_use(self, passkey: Passkey, sign_count: int, used_at: str) -> None:
        used = passkey.model_copy(update={"sign_count": sign_count, "last_used_at": used_at})
        self._commit({**self._passkeys, passkey.id: used})

    def remove(self, passkey: Passkey) -> None:
        self._commit({key: value for key, value in self._passkeys.items() if key != passkey.id})

    def _commit(self, passkeys: dict[str, Passkey]) -> None:
        document = _PasskeyFile(
            format=FILE_FORMAT,
            user_handle=bytes_to_base64url(self.user_handle),
            passkeys=list(passkeys.values()),
        )
        write_json_atomically(self.path, document.model_dump(mode="json"))
        self._passkeys = passkeys
