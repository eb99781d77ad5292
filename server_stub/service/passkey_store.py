"""The registered passkeys, kept in `<db_path>.webauthn` beside the database (spec 2).

The file is one JSON document (`"format": "svc.webauthn.v1"`): the operator's WebAuthn user handle
and each passkey's credential id, COSE public key, sign counter, RP id, label and times (binary
values unpadded base64url); empty until the first passkey is registered. It is created (mode
0600) at start, before the service is confined, and granted to it by name: a confined service may
create nothing in the folder that holds the database. So every change rewrites it in place, whole
across a crash (`server_stub.service.in_place`: an undo journal, `webauthn.journal`, in the
service's private folder `<db_path>.private/`); the copy in memory changes only after the file did,
so a failed write changes nothing. It is the server's only file write besides the intel intake;
the database itself stays read-only. The `<db_path>.private/webauthn.json` of the previous
version is moved into it at start.

A file that cannot be read or is not a valid document stops start-up (`PasskeyFileCorrupt`, a
`StartupRefused`) and is left untouched: replacing it would silently forget every passkey.
"""

from __future__ import annotations

import binascii
import json
import os
import stat
from pathlib import Path
from typing import Annotated, Any, Final, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator
from webauthn.helpers import base64url_to_bytes, bytes_to_base64url, generate_user_handle

from server_stub.service.in_place import recover, write_in_place
from server_stub.service.private_dir import make_private_dir, passkey_file
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


def open_passkey_store(db_path: Path) -> PasskeyStore:
    """The store of the database at `db_path`, its file and private folder made (StartupRefused
    when either cannot be used), an interrupted write undone, the previous version's file moved in.
    Called before confinement."""
    folder = make_private_dir(db_path)
    path = passkey_file(db_path)
    _create_private_file(path)
    store = PasskeyStore(path, folder / "webauthn.journal")
    previous = folder / "webauthn.json"
    if not len(store) and previous.is_file() and not previous.is_symlink():
        try:
            store.take_over(PasskeyStore(previous, folder / "webauthn.json.journal"))
            previous.unlink()
        except OSError as exc:
            raise StartupRefused(
                f"cannot move the passkeys of {previous} into {path}: {exc.strerror}"
            ) from None
    return store


def _create_private_file(path: Path) -> None:
    """`path` as a regular file of this user's, mode 0600, made empty if missing."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise StartupRefused(f"cannot create the passkey file {path}: {exc.strerror}") from None
    try:
        state = os.fstat(descriptor)
        if not stat.S_ISREG(state.st_mode) or state.st_uid != os.geteuid():
            raise StartupRefused(f"the passkey file {path} must be a regular file of this user's")
        if stat.S_IMODE(state.st_mode) & 0o077:
            os.fchmod(descriptor, 0o600)
    finally:
        os.close(descriptor)


class PasskeyStore:
    def __init__(self, path: Path, journal: Path) -> None:
        """Loads `path` (a missing or empty file is an empty store), first undoing a write that
        `journal` shows was interrupted; raises PasskeyFileCorrupt."""
        self.path, self._journal = path, journal
        try:
            recover(path, journal)
        except OSError as exc:
            raise self._refusal(f"an interrupted write cannot be undone: {exc.strerror}") from None
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
        if not raw:
            return None
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

    def take_over(self, other: PasskeyStore) -> None:
        """Keeps `other`'s user handle and passkeys from now on (written here; OSError changes
        nothing)."""
        own_handle, self.user_handle = self.user_handle, other.user_handle
        try:
            self._commit({passkey.id: passkey for passkey in other.passkeys()})
        except OSError:
            self.user_handle = own_handle
            raise

    def remove(self, passkey: Passkey) -> None:
        self._commit({key: value for key, value in self._passkeys.items() if key != passkey.id})

    def _commit(self, passkeys: dict[str, Passkey]) -> None:
        document = _PasskeyFile(
            format=FILE_FORMAT,
            user_handle=bytes_to_base64url(self.user_handle),
            passkeys=list(passkeys.values()),
        )
        text = json.dumps(document.model_dump(mode="json"), indent=2) + "\n"
        write_in_place(self.path, self._journal, text.encode())
        self._passkeys = passkeys
