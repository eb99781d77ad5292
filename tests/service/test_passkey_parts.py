"""The passkey building blocks on their own: the relying party, the challenges, the passkey file."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from server_stub.http import ApiError
from server_stub.service.app import create_app
from server_stub.service.challenges import (
    CHALLENGE_TTL_SECONDS,
    Ceremony,
    ChallengeStore,
    ChallengeTableFull,
    Redeemed,
)
from server_stub.service.passkey_store import (
    Passkey,
    PasskeyFileCorrupt,
    PasskeyStore,
    open_passkey_store,
)
from server_stub.service.passkeys import PREFIX
from server_stub.service.private_dir import make_private_dir, passkey_file, private_dir
from server_stub.service.relying_party import RelyingParty, RelyingPartyResolver
from server_stub.service.settings import ServiceSettings, StartupRefused
from tests.service.authenticator import SoftwareAuthenticator
from tests.service.conftest import TOKEN, FakeClock, MakeService
from tests.service.test_passkeys import ORIGIN, login, register, signed_in

# --- the relying party ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scheme", "host", "expected"),
    [
        ("http", "localhost:8123", RelyingParty("localhost", "http://localhost:8123")),
        ("http", "LocalHost:8123", RelyingParty("localhost", "http://localhost:8123")),
        ("http", "localhost:80", RelyingParty("localhost", "http://localhost")),
        (
            "https",
            "svc.example.com:443",
            RelyingParty("svc.example.com", "https://svc.example.com"),
        ),
        (
            "https",
            "svc.example.com:8443",
            RelyingParty("svc.example.com", "https://svc.example.com:8443"),
        ),
        ("http", "svc-1.internal", RelyingParty("svc-1.internal", "http://svc-1.internal")),
    ],
)
def test_the_relying_party_comes_from_the_host_header(
    scheme: str, host: str, expected: RelyingParty
) -> None:
    assert RelyingPartyResolver(None, None).resolve(scheme, host) == expected


@pytest.mark.parametrize(
    "host",
    [
        None,
        "",
        "evil.example/path",
        "evil.example/",
        "user@evil.example",
        "evil.example?x=1",
        "evil.example#x",
        "evil.example:",
        "evil.example:0",
        "evil.example:99999",
        "evil.example:80:80",
        "evil.example:http",
        "ev il.example",
        "-evil.example",
        "evil..example",
        "evil.example.",
        "évil.example",
        "a" * 64 + ".example",
        "127.0.0.1:8080",
        "127.0.0.1",
        "[::1]:8080",
        "[::1]",
    ],
)
def test_a_host_header_that_is_not_a_host_name_and_port_is_refused(host: str | None) -> None:
    with pytest.raises(ApiError) as refusal:
        RelyingPartyResolver(None, None).resolve("http", host)
    assert refusal.value.status == 400


def test_an_ip_address_gets_a_message_naming_the_remedy() -> None:
    for host in ("127.0.0.1:8080", "[::1]:8080", "10.0.0.5"):
        with pytest.raises(ApiError, match="not an IP address"):
            RelyingPartyResolver(None, None).resolve("http", host)


def test_a_configured_rp_id_covers_its_subdomains_only() -> None:
    resolver = RelyingPartyResolver("Example.com", None)
    assert resolver.resolve("https", "svc.example.com") == RelyingParty(
        "example.com", "https://svc.example.com"
    )
    assert resolver.resolve("https", "example.com").rp_id == "example.com"
    for host in ("example.org", "badexample.com", "example.com.evil.org"):
        with pytest.raises(ApiError, match="SERVICE_WEBAUTHN_RP_ID"):
            resolver.resolve("https", host)


def test_a_configured_origin_ignores_the_host_header() -> None:
    resolver = RelyingPartyResolver(None, "HTTPS://Svc.Example.com:443/")
    expected = RelyingParty("svc.example.com", "https://svc.example.com")
    assert resolver.resolve("http", "127.0.0.1:8080") == expected
    assert resolver.resolve("http", None) == expected
    both = RelyingPartyResolver("example.com", "https://svc.example.com:8443")
    assert both.resolve("http", "x") == RelyingParty("example.com", "https://svc.example.com:8443")


@pytest.mark.parametrize(
    ("rp_id", "origin"),
    [
        ("https://example.com", None),
        ("example.com:443", None),
        ("example.com/path", None),
        ("192.0.2.1", None),
        (None, "ftp://example.com"),
        (None, "https://example.com/app"),
        (None, "https://user@example.com"),
        (None, "https://192.0.2.1"),
        (None, "example.com"),
        ("example.org", "https://svc.example.com"),
        ("svc.example.com", "https://example.com"),
    ],
)
def test_unusable_webauthn_settings_stop_start_up(rp_id: str | None, origin: str | None) -> None:
    with pytest.raises(StartupRefused, match="SERVICE_WEBAUTHN_"):
        RelyingPartyResolver(rp_id, origin)


SENDER = "192.0.2.7"

# --- challenges ----------------------------------------------------------------------------------


def test_a_challenge_is_redeemed_once_for_its_ceremony_before_it_expires() -> None:
    clock = FakeClock()
    store = ChallengeStore(clock)
    challenge = store.issue_login("browser-a", SENDER)
    assert len(challenge) == 32
    assert store.redeem(challenge, Ceremony.LOGIN, "browser-a") is Redeemed.VALID
    assert store.redeem(challenge, Ceremony.LOGIN, "browser-a") is Redeemed.MISSING

    registration = store.issue_registration("session-a")
    assert store.redeem(registration, Ceremony.LOGIN, "session-a") is Redeemed.MISSING
    assert store.redeem(registration, Ceremony.REGISTER, "session-a") is Redeemed.VALID
    assert store.redeem(registration, Ceremony.REGISTER, "session-a") is Redeemed.MISSING

    almost = store.issue_login("browser-a", SENDER)
    clock.advance(CHALLENGE_TTL_SECONDS - 0.001)
    assert store.redeem(almost, Ceremony.LOGIN, "browser-a") is Redeemed.VALID
    expired = store.issue_login("browser-a", SENDER)
    late = store.issue_registration("session-a")
    clock.advance(CHALLENGE_TTL_SECONDS)
    assert store.redeem(expired, Ceremony.LOGIN, "browser-a") is Redeemed.MISSING
    assert store.redeem(late, Ceremony.REGISTER, "session-a") is Redeemed.MISSING
    assert len(store) == 0


def test_a_challenge_is_redeemed_only_by_the_holder_it_was_issued_to() -> None:
    store = ChallengeStore(FakeClock())
    challenge = store.issue_login("browser-a", SENDER)
    assert store.redeem(challenge, Ceremony.LOGIN, "browser-b") is Redeemed.FOREIGN
    # Used up by the wrong holder.
    assert store.redeem(challenge, Ceremony.LOGIN, "browser-a") is Redeemed.MISSING
    no_nonce = store.issue_login("browser-a", SENDER)
    assert store.redeem(no_nonce, Ceremony.LOGIN, None) is Redeemed.FOREIGN
    # A registration is looked up by the presenting session: another one's is not even seen.
    registration = store.issue_registration("session-a")
    assert store.redeem(registration, Ceremony.REGISTER, "session-b") is Redeemed.MISSING
    assert store.redeem(registration, Ceremony.REGISTER, "session-a") is Redeemed.VALID
    assert len(store) == 0


def test_a_sender_holds_a_few_login_challenges_and_replaces_its_own_oldest() -> None:
    store = ChallengeStore(FakeClock(), per_sender=3)
    first, second, *_ = [store.issue_login("b", SENDER) for _ in range(4)]
    assert store.pending_for(SENDER) == 3
    assert store.redeem(first, Ceremony.LOGIN, "b") is Redeemed.MISSING
    assert store.redeem(second, Ceremony.LOGIN, "b") is Redeemed.VALID


def test_strangers_filling_the_table_never_push_out_a_pending_login() -> None:
    clock = FakeClock()
    store = ChallengeStore(clock, max_pending=8, per_sender=4)
    victim = store.issue_login("victim-browser", "198.51.100.1")
    # Two strangers take the other 7 slots, then keep asking from new addresses.
    for _ in range(4):
        store.issue_login("x", "203.0.113.1")
    for _ in range(3):
        store.issue_login("x", "203.0.113.2")
    refusals = []
    for stranger in range(3, 40):
        try:
            store.issue_login("x", f"203.0.113.{stranger}")
        except ChallengeTableFull as full:
            refusals.append(full.retry_after)
    assert refusals
    assert all(0 < seconds <= CHALLENGE_TTL_SECONDS for seconds in refusals)
    assert len(store) == 8
    assert store.pending_for("198.51.100.1") == 1
    assert store.redeem(victim, Ceremony.LOGIN, "victim-browser") is Redeemed.VALID
    # Once the strangers' challenges expire, everyone is served again.
    clock.advance(CHALLENGE_TTL_SECONDS)
    assert store.issue_login("y", "198.51.100.2")
    assert len(store) == 1


def test_registrations_are_apart_from_logins_one_per_session() -> None:
    store = ChallengeStore(FakeClock(), max_pending=4)
    registration = store.issue_registration("session-a")
    for stranger in range(4):
        store.issue_login("x", f"203.0.113.{stranger}")
    replaced = store.issue_registration("session-b")
    store.issue_registration("session-b")
    assert store.redeem(replaced, Ceremony.REGISTER, "session-b") is Redeemed.MISSING
    assert store.redeem(registration, Ceremony.REGISTER, "session-a") is Redeemed.VALID


# --- the passkey file ----------------------------------------------------------------------------


def sample(label: str = "laptop") -> Passkey:
    authenticator = SoftwareAuthenticator()
    return Passkey(
        id=authenticator.id,
        public_key="pQECAyYgASFYIA",
        sign_count=0,
        rp_id="localhost",
        label=label,
        created_at="2025-07-01T12:00:00Z",
    )


def test_the_file_is_spec_2s_and_rewritten_in_place_with_mode_0600(tmp_path: Path) -> None:
    """`<db_path>.webauthn`, made empty at start (before confinement); each change rewrites the
    same inode, and leaves nothing else in either folder."""
    old_umask = os.umask(0o000)
    try:
        store = open_passkey_store(tmp_path / "service.db")
    finally:
        os.umask(old_umask)
    path = passkey_file(tmp_path / "service.db")
    assert store.path == path == tmp_path / "service.db.webauthn"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_bytes() == b""  # no passkey yet
    first_inode = path.stat().st_ino
    store.add(sample("one"))
    store.add(sample("two"))
    assert path.stat().st_ino == first_inode
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "service.db.private",
        "service.db.webauthn",
    ]
    assert list(private_dir(tmp_path / "service.db").iterdir()) == []  # the journal is gone
    document = json.loads(path.read_text())
    assert document["format"] == "svc.webauthn.v1"
    assert [p["label"] for p in document["passkeys"]] == ["one", "two"]


def test_the_file_survives_a_restart_with_the_same_user_handle(tmp_path: Path) -> None:
    path, journal = tmp_path / "service.db.webauthn", tmp_path / "journal"
    store = PasskeyStore(path, journal)
    passkey = sample()
    store.add(passkey)
    again = PasskeyStore(path, journal)
    assert again.passkeys() == [passkey]
    assert again.user_handle == store.user_handle
    again.remove(passkey)
    assert PasskeyStore(path, journal).passkeys() == []


def test_an_empty_file_is_an_empty_store(tmp_path: Path) -> None:
    path = tmp_path / "service.db.webauthn"
    path.write_bytes(b"")
    assert PasskeyStore(path, tmp_path / "journal").passkeys() == []


def test_a_failed_write_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The file itself fails halfway (a full disk): its old content is put back at once."""
    path, journal = tmp_path / "service.db.webauthn", tmp_path / "private" / "journal"
    journal.parent.mkdir()
    store = PasskeyStore(path, journal)
    store.add(sample("kept"))
    before = path.read_bytes()
    pwrite = os.pwrite

    def full_disk(descriptor: int, data: bytes, offset: int) -> int:
        if b'"lost"' in bytes(data):
            pwrite(descriptor, bytes(data)[:40], offset)
            raise OSError(28, "No space left on device")
        return pwrite(descriptor, data, offset)

    monkeypatch.setattr(os, "pwrite", full_disk)
    with pytest.raises(OSError, match="No space"):
        store.add(sample("lost"))
    assert [p.label for p in store.passkeys()] == ["kept"]
    assert path.read_bytes() == before
    assert not journal.exists()


def test_a_write_cut_short_is_undone_at_the_next_start(tmp_path: Path) -> None:
    """What a crash leaves: a whole journal and a torn file (the old content comes back), or a
    journal cut short and the file untouched (kept as it is)."""
    path, journal = tmp_path / "service.db.webauthn", tmp_path / "journal"
    store = PasskeyStore(path, journal)
    store.add(sample("kept"))
    before = path.read_bytes()
    store.add(sample("torn"))
    whole_journal = b"svc.undo.v1 %d %s\n" % (
        len(before),
        hashlib.sha256(before).hexdigest().encode(),
    )
    journal.write_bytes(whole_journal + before)
    path.write_bytes(path.read_bytes()[:50])
    assert [p.label for p in PasskeyStore(path, journal).passkeys()] == ["kept"]
    assert path.read_bytes() == before
    assert not journal.exists()

    journal.write_bytes((whole_journal + b"{}")[:30])
    assert [p.label for p in PasskeyStore(path, journal).passkeys()] == ["kept"]
    assert not journal.exists()


CORRUPT_FILES = {
    "blank": b"\n",
    "not json": b"{not json",
    "a list": b"[]",
    "wrong format": b'{"format": "other", "user_handle": "AAAA", "passkeys": []}',
    "missing key": b'{"format": "svc.webauthn.v1", "passkeys": []}',
    "unknown key": b'{"format": "svc.webauthn.v1", "user_handle": "AAAA", "passkeys": [], "x": 1}',
    "bad base64": b'{"format": "svc.webauthn.v1", "user_handle": "A=A=", "passkeys": []}',
    "counter as text": json.dumps(
        {
            "format": "svc.webauthn.v1",
            "user_handle": "AAAA",
            "passkeys": [{**sample().model_dump(), "sign_count": "1"}],
        }
    ).encode(),
    "negative counter": json.dumps(
        {
            "format": "svc.webauthn.v1",
            "user_handle": "AAAA",
            "passkeys": [{**sample().model_dump(), "sign_count": -1}],
        }
    ).encode(),
    "duplicate id": json.dumps(
        {
            "format": "svc.webauthn.v1",
            "user_handle": "AAAA",
            "passkeys": [sample().model_dump()] * 2,
        }
    ).encode(),
}


@pytest.mark.parametrize("case", CORRUPT_FILES)
def test_a_corrupt_file_is_refused_and_left_alone(tmp_path: Path, case: str) -> None:
    path = tmp_path / "service.db.webauthn"
    path.write_bytes(CORRUPT_FILES[case])
    with pytest.raises(PasskeyFileCorrupt, match="unusable") as refusal:
        PasskeyStore(path, tmp_path / "journal")
    assert str(path) in str(refusal.value)
    assert path.read_bytes() == CORRUPT_FILES[case]


def test_an_unreadable_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "service.db.webauthn"
    path.mkdir()
    with pytest.raises(PasskeyFileCorrupt, match="cannot be read"):
        PasskeyStore(path, tmp_path / "journal")


# --- through the app and the command line --------------------------------------------------------


def test_registered_passkeys_survive_a_restart(make_service: MakeService, demo_db: Path) -> None:
    service = make_service()
    authenticator = SoftwareAuthenticator()
    assert register(signed_in(service), authenticator).status_code == 201
    path = passkey_file(demo_db)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    restarted = make_service()
    assert login(restarted.client(), authenticator).status_code == 200
    assert restarted.client().get("/health/live").status_code == 200


def test_a_failed_write_answers_503_and_registers_nothing(
    make_service: MakeService, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = make_service()
    operator = signed_in(service)

    def read_only_file_system(*args: object) -> None:
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(os, "fsync", read_only_file_system)
    response = register(operator, SoftwareAuthenticator())
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "unavailable"
    assert operator.get(f"{PREFIX}/credentials").json()["data"] == []


def test_the_previous_versions_file_moves_into_spec_2s_file(
    make_service: MakeService, demo_db: Path
) -> None:
    """The previous version kept the passkeys in `<db>.private/webauthn.json`."""
    authenticator = SoftwareAuthenticator()
    assert register(signed_in(make_service()), authenticator).status_code == 201
    previous = private_dir(demo_db) / "webauthn.json"
    previous.write_bytes(passkey_file(demo_db).read_bytes())
    passkey_file(demo_db).unlink()
    restarted = make_service()
    assert not previous.exists()
    assert len(json.loads(passkey_file(demo_db).read_text())["passkeys"]) == 1
    assert login(restarted.client(), authenticator).status_code == 200


def test_a_private_folder_others_may_enter_stops_start_up(demo_db: Path) -> None:
    folder = demo_db.with_name(demo_db.name + ".private")
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    settings = ServiceSettings(api_token=TOKEN, db_path=demo_db)  # type: ignore[arg-type]
    with pytest.raises(StartupRefused, match="mode 0700"):
        create_app(settings)


def test_create_app_refuses_a_corrupt_passkey_file(demo_db: Path) -> None:
    make_private_dir(demo_db)
    passkey_file(demo_db).write_text("{")
    settings = ServiceSettings(api_token=TOKEN, db_path=demo_db)  # type: ignore[arg-type]
    with pytest.raises(PasskeyFileCorrupt):
        create_app(settings)


def start_service(demo_db: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """`svc-stub service` as a real process, expected to refuse start-up."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "server_stub.service",
            "service",
            "--db",
            str(demo_db),
            "--port",
            "0",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "SERVICE_API_TOKEN": TOKEN, **env},
        timeout=30,
        check=False,
    )


@pytest.mark.e2e
def test_the_server_refuses_to_start_on_a_corrupt_passkey_file(demo_db: Path) -> None:
    make_private_dir(demo_db)
    path = passkey_file(demo_db)
    path.write_text('{"format": "svc.webauthn.v1"')
    result = start_service(demo_db)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith(f"svc-stub: the passkey file {path} is unusable")
    assert len(result.stderr.strip().splitlines()) == 1
    assert path.read_text() == '{"format": "svc.webauthn.v1"'


@pytest.mark.e2e
def test_the_server_refuses_to_start_with_an_unusable_webauthn_setting(demo_db: Path) -> None:
    result = start_service(demo_db, SERVICE_WEBAUTHN_RP_ID="https://x.example")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "SERVICE_WEBAUTHN_RP_ID must be a host name" in result.stderr


def test_the_database_stays_untouched_by_passkeys(make_service: MakeService, demo_db: Path) -> None:
    before = demo_db.read_bytes()
    service = make_service()
    authenticator = SoftwareAuthenticator()
    assert register(signed_in(service), authenticator).status_code == 201
    assert login(service.client(), authenticator, origin=ORIGIN).status_code == 200
    assert demo_db.read_bytes() == before


@pytest.mark.e2e
def test_a_confined_writer_killed_mid_write_leaves_the_file_whole(demo_db: Path) -> None:
    """SIGKILL at ten moments of a confined process rewriting the file: every time the next
    start finds one passkey or two, never a torn file."""
    journal = private_dir(demo_db) / "webauthn.journal"
    environment = {**os.environ, "SVC_STUB_CONFINEMENT": "require"}
    journals_left = 0
    for attempt in range(10):
        writer = subprocess.Popen(
            [sys.executable, "-m", "tests.service.passkey_writer", str(demo_db), "0"],
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert writer.stdout is not None
        line = writer.stdout.readline()
        assert line == "ready\n", writer.communicate()[1]
        time.sleep(0.005 * attempt)
        writer.kill()
        _, errors = writer.communicate()
        assert "confined (Landlock" in errors, errors
        journals_left += journal.exists()
        labels = [passkey.label for passkey in open_passkey_store(demo_db).passkeys()]
        assert labels in (["one"], ["one", "two " + "x" * 60]), labels
        assert not journal.exists()
    assert journals_left > 0, "no kill landed inside a write"
