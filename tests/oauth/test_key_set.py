"""The gateway's token verifier and its key-set reader against issuers on loopback, on an
injected clock: a real oidc-provider (rotation without restart, no network per token, an outage
that locks out no token of a known key), and a scriptable hostile issuer (a withdrawn key, a
key set dripped a byte a second or of any size, made-up key ids before a rotation)."""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

import anyio
import pytest

from svc_mcp.serve.oauth.discovery import FETCH_DEADLINE_SECONDS, MAX_DOCUMENT_BYTES
from svc_mcp.serve.oauth.keys import IssuerUnavailable, KeyTimes
from svc_mcp.serve.oauth.tokens import LEEWAY_SECONDS
from tests.oauth.conftest import auth_server, service_client, signing_key
from tests.oauth.hostile_issuer import RESOURCE, hostile_issuer
from tests.oauth.keyset_harness import Clock, running_verifier, subject

TIMES = KeyTimes()


def test_rotation_and_no_network_per_token(idp_root: Path) -> None:
    clock = Clock()
    with auth_server(idp_root, [RESOURCE], [service_client("ci")], "k1") as (idp, _):

        async def scenario() -> None:
            async with running_verifier(idp.issuer, RESOURCE, clock) as (verifier, lines):
                first = idp.token("ci", resource=RESOURCE)
                assert await subject(verifier, first) == "ci"
                assert lines == [f"OAuth: 1 signing keys read from {idp.issuer}"]
                # Rotation: the new key signs, the old one is still published.
                k1 = idp.jwks[0]
                _, k2 = signing_key("k2")
                idp.restart([k2, k1])
                second = idp.token("ci", resource=RESOURCE)
                assert await subject(verifier, second) == "ci"
                # Another rotation at once: the new kid is read for, a spacing later.
                _, k3 = signing_key("k3")
                idp.restart([k3, k2])
                third = idp.token("ci", resource=RESOURCE)
                assert await subject(verifier, third) == "ci"
                # The server gone: tokens already seen, and new ones of known keys, still pass.
                fourth = idp.token("ci", resource=RESOURCE)
                idp.stop()
                assert await subject(verifier, second) == "ci"
                assert await subject(verifier, fourth) == "ci"
                # Until they expire (beyond the leeway), by the injected clock.
                clock.now = time.time() + 600 + LEEWAY_SECONDS + 1
                assert await subject(verifier, fourth) is None

        anyio.run(scenario)


def test_a_token_during_the_first_read_waits_for_that_read_only() -> None:
    clock = Clock()
    with hostile_issuer("k1") as issuer:
        issuer.delay_seconds = 0.5

        async def scenario() -> None:
            async with running_verifier(issuer.issuer, RESOURCE, clock) as (verifier, _):
                await anyio.sleep(0.2)  # the read at start is under way
                started = clock.now
                assert await subject(verifier, issuer.token("k1")) == "alice"
                assert issuer.key_reads == 1
                assert clock.now == started  # no spacing waited for a read of its own

        anyio.run(scenario)


def test_a_withdrawn_key_stops_working_cached_or_not() -> None:
    clock = Clock()
    with hostile_issuer("k1", "k2") as issuer:

        async def scenario() -> None:
            async with running_verifier(issuer.issuer, RESOURCE, clock) as (verifier, _):
                # A thief's token: the stolen key k2, made to last a year less a day.
                stolen = issuer.token("k2", exp=int(time.time()) + 20 * 3600)
                honest = issuer.token("k1")
                assert await subject(verifier, stolen) == "alice"
                assert await subject(verifier, honest) == "alice"
                issuer.withdraw("k2")
                # Within the key set's age, the kept set still holds k2 (no read per token).
                assert await subject(verifier, stolen) == "alice"
                clock.now += TIMES.max_age
                reads = issuer.key_reads
                # Past it, the set is read again without holding this request up.
                assert await subject(verifier, stolen) == "alice"
                # (a read asked for from now: the one the age started, or the next)
                assert await verifier.keys.next_read()
                assert issuer.key_reads > reads
                # The remembered token is dropped: its key left the set.
                assert await subject(verifier, stolen) is None
                assert await subject(verifier, issuer.token("k2")) is None
                assert await subject(verifier, honest) == "alice"

        anyio.run(scenario)


def test_tokens_outside_rfc_9068_are_refused() -> None:
    clock = Clock()
    with hostile_issuer("k1") as issuer:

        async def scenario() -> None:
            async with running_verifier(issuer.issuer, RESOURCE, clock) as (verifier, _):
                now = int(time.time())
                refused = {
                    "exp in the year 9999": issuer.token("k1", exp=253402300799),
                    "exp 1e20": issuer.token("k1", exp=10**20),
                    "exp a day and more ahead": issuer.token("k1", exp=now + 86400 + 120),
                    "no typ": issuer.token("k1", typ=None),
                    "typ JWT": issuer.token("k1", typ="JWT"),
                    "typ of an ID token": issuer.token("k1", typ="id_token+jwt"),
                    "empty sub": issuer.token("k1", sub=""),
                    "iat a day ahead": issuer.token("k1", iat=now + 86400),
                }
                for what, token in refused.items():
                    assert await subject(verifier, token) is None, what
                accepted = {
                    "typ application/at+jwt": issuer.token("k1", typ="application/at+jwt"),
                    "iat within the leeway": issuer.token("k1", iat=now + 10),
                    "exp a day ahead": issuer.token("k1", exp=now + 86000),
                }
                for what, token in accepted.items():
                    assert await subject(verifier, token) == "alice", what

        anyio.run(scenario)
        # The bound is a setting.

        async def shorter() -> None:
            async with running_verifier(
                issuer.issuer, RESOURCE, clock, max_token_lifetime=3600
            ) as (verifier, _):
                assert (
                    await subject(verifier, issuer.token("k1", exp=int(time.time()) + 7200)) is None
                )
                assert await subject(verifier, issuer.token("k1")) == "alice"

        anyio.run(shorter)


def test_made_up_kids_before_a_rotation_do_not_hold_up_the_new_key() -> None:
    clock = Clock()
    with hostile_issuer("k1") as issuer:

        async def scenario() -> None:
            async with running_verifier(issuer.issuer, RESOURCE, clock) as (verifier, _):
                assert await subject(verifier, issuer.token("k1")) == "alice"
                started, reads = clock.now, issuer.key_reads
                # A stranger's made-up kid, just before the rotation: it costs one read.
                assert await subject(verifier, issuer.token("made-up")) is None
                # The same one again and again is refused without another read.
                for _ in range(50):
                    assert await subject(verifier, issuer.token("made-up")) is None
                assert issuer.key_reads == reads + 1
                # The rotation: the first token of the new key passes, at once.
                issuer.add_key("k2")
                assert await subject(verifier, issuer.token("k2")) == "alice"
                assert clock.now - started <= 2 * TIMES.spacing
                # 200 made-up kids at once share a read or two; in a row, one per spacing.
                reads = issuer.key_reads
                async with anyio.create_task_group() as group:
                    for n in range(200):
                        group.start_soon(subject, verifier, issuer.token(f"flood-{n}"))
                assert issuer.key_reads - reads <= 2
                started, reads = clock.now, issuer.key_reads
                for n in range(30):
                    assert await subject(verifier, issuer.token(f"row-{n}")) is None
                assert issuer.key_reads - reads <= (clock.now - started) / TIMES.spacing + 1
                # And still the next rotation passes on its first token.
                issuer.add_key("k3")
                assert await subject(verifier, issuer.token("k3")) == "alice"

        anyio.run(scenario)


def test_a_key_set_dripped_a_byte_a_second_blocks_no_known_key() -> None:
    clock = Clock()
    times = KeyTimes(patience=1.0)
    with hostile_issuer("k1") as issuer:

        async def scenario() -> None:
            async with running_verifier(issuer.issuer, RESOURCE, clock, times) as (verifier, _):
                known = issuer.token("k1")
                assert await subject(verifier, known) == "alice"
                issuer.drip_seconds = 1.0
                issuer.add_key("k2")
                started = time.monotonic()
                # A new kid waits for the read at most its patience, then 503 (not 401).
                with pytest.raises(IssuerUnavailable):
                    await verifier.verify_token(issuer.token("k2"))
                assert time.monotonic() - started < times.patience + 2
                # Meanwhile the read goes on; a known key's new token passes at once, each time.
                for _ in range(5):
                    began = time.monotonic()
                    assert await subject(verifier, issuer.token("k1")) == "alice"
                    assert time.monotonic() - began < 0.5  # a held-up one waits 5 s
                # The read gives up at its deadline.
                with anyio.fail_after(FETCH_DEADLINE_SECONDS + 3):
                    while verifier.keys.problem is None:  # noqa: ASYNC110 (the reader's state)
                        await anyio.sleep(0.05)
                assert "no whole answer within" in str(verifier.keys.problem)
                assert time.monotonic() - started < FETCH_DEADLINE_SECONDS + 2
                issuer.drip_seconds = 0.0
                assert await subject(verifier, issuer.token("k2")) == "alice"

        anyio.run(scenario)


def test_a_huge_key_set_is_refused_past_the_cap_in_bounded_memory() -> None:
    clock = Clock()
    with hostile_issuer("k1") as issuer:
        issuer.padding = 300 << 20

        async def scenario() -> None:
            async with running_verifier(issuer.issuer, RESOURCE, clock) as (verifier, lines):
                with pytest.raises(IssuerUnavailable):
                    await verifier.verify_token(issuer.token("k1"))
                assert verifier.keys.problem == f"larger than {MAX_DOCUMENT_BYTES} bytes"
                assert "cannot be read (larger than" in lines[0]

        tracemalloc.start()
        try:
            anyio.run(scenario)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 8 << 20, peak
        assert issuer.sent_bytes < 32 << 20  # it stopped reading, and the issuer stopped writing
