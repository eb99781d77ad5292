"""Proxy trust (spec 2, section 5, rule 7): which address the guard counts a request under."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from server_stub.service.client_ip import client_address, normalize_address
from tests.service.conftest import BEARER, WRONG, MakeService

PROXY = "10.9.8.7"


def resolve(*headers: str, hops: int = 1, trust: bool = True, peer: str = PROXY) -> str:
    return client_address(peer, list(headers), trust_proxy=trust, hops=hops)


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("203.0.113.9", "203.0.113.9"),
        ("  203.0.113.9\t", "203.0.113.9"),
        ("203.0.113.9:51234", "203.0.113.9"),
        ("2001:db8::1", "2001:db8::1"),
        ("2001:DB8:0:0:0:0:0:1", "2001:db8::1"),
        ("[2001:db8::1]", "2001:db8::1"),
        ("[2001:db8::1]:443", "2001:db8::1"),
        ("::ffff:203.0.113.9", "203.0.113.9"),
        ("[::ffff:cb00:7109]:80", "203.0.113.9"),
        ("fe80::1%eth0", "fe80::1"),
        ("unknown", None),
        ("", None),
        ("203.0.113", None),
        ("203.0.113.999", None),
        ("010.0.0.1", None),
        ("203.0.113.9:", None),
        ("203.0.113.9:port", None),
        ("[2001:db8::1", None),
        ("[2001:db8::1]x", None),
        ("_hidden", None),
        ("<script>", None),
        ("1.2.3.4 5.6.7.8", None),
    ],
)
def test_entries_are_normalised_or_rejected(entry: str, expected: str | None) -> None:
    assert normalize_address(entry) == expected


def test_spoofed_left_most_entries_are_ignored() -> None:
    assert resolve("1.1.1.1, 2.2.2.2, 203.0.113.9") == "203.0.113.9"
    assert resolve("127.0.0.1, 203.0.113.9") == "203.0.113.9"


def test_hops_count_from_the_right() -> None:
    chain = "1.1.1.1, 203.0.113.9, 10.0.0.2"
    assert resolve(chain, hops=1) == "10.0.0.2"
    assert resolve(chain, hops=2) == "203.0.113.9"
    assert resolve(chain, hops=3) == "1.1.1.1"


def test_more_hops_than_the_chain_falls_back_to_the_peer() -> None:
    assert resolve("203.0.113.9, 10.0.0.2", hops=3) == PROXY
    assert resolve("203.0.113.9", hops=2) == PROXY


def test_several_headers_form_one_chain_in_order() -> None:
    assert resolve("1.1.1.1", "203.0.113.9, 10.0.0.2", hops=1) == "10.0.0.2"
    assert resolve("1.1.1.1", "203.0.113.9, 10.0.0.2", hops=2) == "203.0.113.9"
    assert resolve("1.1.1.1", "203.0.113.9, 10.0.0.2", hops=3) == "1.1.1.1"
    assert resolve("1.1.1.1, 2.2.2.2", "203.0.113.9", hops=1) == "203.0.113.9"


def test_whitespace_ports_ipv6_and_mapped_addresses_in_a_chain() -> None:
    assert resolve(" 1.1.1.1 ,\t203.0.113.9:4711 ") == "203.0.113.9"
    assert resolve("1.1.1.1, [2001:db8::7]:8443") == "2001:db8::/64"
    assert resolve("1.1.1.1, 2001:db8::7") == "2001:db8::/64"
    assert resolve("1.1.1.1, ::ffff:203.0.113.9") == "203.0.113.9"
    assert resolve("203.0.113.9,,  ,") == "203.0.113.9"  # empty list elements are not entries


def test_ipv6_clients_are_counted_per_64_and_mapped_ones_as_ipv4() -> None:
    assert resolve("2001:db8:1:2::1") == "2001:db8:1:2::/64"
    assert resolve("2001:db8:1:2:ffff:ffff:ffff:ffff") == "2001:db8:1:2::/64"
    assert resolve("[2001:db8:1:2:a:b:c:d]:443") == "2001:db8:1:2::/64"
    assert resolve("2001:db8:1:3::1") == "2001:db8:1:3::/64"
    assert resolve("::ffff:203.0.113.9") == resolve("203.0.113.9") == "203.0.113.9"
    assert resolve(trust=False, peer="::1") == "loopback"
    assert resolve(trust=False, peer="2001:db8:1:2::99") == "2001:db8:1:2::/64"
    assert resolve(trust=False, peer="::ffff:192.0.2.1") == "192.0.2.1"


def test_one_64_shares_one_failure_budget(make_service: MakeService) -> None:
    service = make_service(trust_proxy=True)
    proxy = service.client(PROXY)

    def system(source: str, headers: dict[str, str]) -> int:
        forwarded = {"X-Forwarded-For": source}
        return proxy.get("/api/v1/system", headers={**headers, **forwarded}).status_code

    wrong = {"Authorization": f"Bearer {WRONG}"}
    # Eight addresses of one /64, one guess each: the eighth locks the whole /64.
    assert [system(f"2001:db8:1:2::{n + 1:x}", wrong) for n in range(8)] == [401] * 7 + [429]
    assert system("2001:db8:1:2:ffff::1", BEARER) == 429
    assert system("2001:db8:1:3::1", BEARER) == 200  # the neighbouring /64 is someone else
    service.clock.advance(15 * 60)
    assert system("2001:db8:1:2::1", BEARER) == 200
    # An IPv4-mapped spelling is the IPv4 address: the two share one budget.
    assert [system("::ffff:203.0.113.9", wrong) for _ in range(7)] == [401] * 7
    assert system("203.0.113.9", wrong) == 429
    assert system("203.0.113.10", BEARER) == 200


def test_the_loopback_range_is_one_address_keyed_by_its_local_user() -> None:
    def owned_by(uid: int | None) -> Callable[[], int | None]:
        return lambda: uid

    def peer_key(peer: str, uid: int | None) -> str:
        return client_address(peer, [], trust_proxy=False, hops=1, loopback_owner=owned_by(uid))

    for peer in (
        "127.0.0.1",
        "127.0.0.2",
        "127.1.2.3",
        "127.255.255.254",
        "::1",
        "::ffff:127.0.0.9",
    ):
        assert peer_key(peer, 4242) == "loopback:uid=4242"
        assert peer_key(peer, 0) == "loopback:uid=0"
        assert peer_key(peer, None) == "loopback"  # owner unknown: one shared bucket, no guess
        assert resolve(trust=False, peer=peer) == "loopback"
    assert peer_key("192.0.2.1", 4242) == "192.0.2.1"  # only loopback peers have a local user
    # A forwarded loopback entry names the proxy's host, whose users we cannot see.
    assert resolve("127.0.0.5") == resolve("127.0.0.6") == resolve("::1") == "loopback"


def test_the_owner_is_asked_only_when_the_peer_key_is_used() -> None:
    asked: list[int] = []

    def owner() -> int | None:
        asked.append(1)
        return 4242

    def key(*headers: str) -> str:
        return client_address(
            "127.0.0.1", list(headers), trust_proxy=True, hops=1, loopback_owner=owner
        )

    assert key("203.0.113.9") == "203.0.113.9"
    assert asked == []
    assert key() == "loopback:uid=4242"
    assert asked == [1]


def test_garbage_never_becomes_a_bucket_key() -> None:
    for garbage in ("unknown", "evil", "203.0.113.9.1", "[::1", "x" * 200, "1.2.3.4:99999x"):
        assert resolve(f"203.0.113.9, {garbage}") == PROXY


def test_missing_header_uses_the_proxy_peer() -> None:
    assert resolve() == PROXY
    assert resolve("") == PROXY
    assert resolve(" , ") == PROXY


def test_trust_off_ignores_the_header_entirely() -> None:
    assert resolve("203.0.113.9", trust=False) == PROXY
    assert resolve("garbage", trust=False, hops=5) == PROXY
    assert resolve(trust=False, peer="::ffff:192.0.2.1") == "192.0.2.1"


def test_behind_a_proxy_spoofing_does_not_escape_or_frame_others(make_service: MakeService) -> None:
    service = make_service(trust_proxy=True, hops=1)
    proxy = service.client(PROXY)
    # The attacker rotates the left-most entry; the proxy appends the real address each time.
    for index in range(8):
        proxy.get(
            "/api/v1/system",
            headers={
                "Authorization": f"Bearer {WRONG}",
                "X-Forwarded-For": f"192.0.2.{index}, 203.0.113.66",
            },
        )
    locked = proxy.get("/api/v1/system", headers={**BEARER, "X-Forwarded-For": "203.0.113.66"})
    assert locked.status_code == 429
    # Another user behind the same proxy, and the victim the attacker wrote in, are not locked.
    assert (
        proxy.get(
            "/api/v1/system", headers={**BEARER, "X-Forwarded-For": "203.0.113.67"}
        ).status_code
        == 200
    )
    assert (
        proxy.get("/api/v1/system", headers={**BEARER, "X-Forwarded-For": "192.0.2.0"}).status_code
        == 200
    )


def test_behind_a_proxy_a_missing_header_means_one_shared_bucket(make_service: MakeService) -> None:
    service = make_service(trust_proxy=True)
    proxy = service.client(PROXY)
    for _ in range(8):
        proxy.get("/api/v1/system", headers={"X-API-Token": WRONG})
    # Everyone arriving through the proxy without the header shares the proxy's bucket (fail closed).
    assert proxy.get("/api/v1/system", headers=BEARER).status_code == 429
    assert service.auth.guard.retry_after(PROXY) is not None
    # A request whose header names a client is counted under that client instead.
    assert (
        proxy.get(
            "/api/v1/system", headers={**BEARER, "X-Forwarded-For": "203.0.113.5"}
        ).status_code
        == 200
    )


def test_with_trust_off_the_header_cannot_move_the_bucket(make_service: MakeService) -> None:
    service = make_service(trust_proxy=False)
    client = service.client("203.0.113.50")
    for index in range(8):
        client.get(
            "/api/v1/system",
            headers={"X-API-Token": WRONG, "X-Forwarded-For": f"192.0.2.{index}"},
        )
    assert (
        client.get(
            "/api/v1/system", headers={**BEARER, "X-Forwarded-For": "192.0.2.99"}
        ).status_code
        == 429
    )
    assert service.auth.guard.retry_after("203.0.113.50") is not None
    assert service.auth.guard.retry_after("192.0.2.0") is None


def test_hops_two_behind_two_proxies(make_service: MakeService) -> None:
    service = make_service(trust_proxy=True, hops=2)
    inner = service.client("10.0.0.3")
    for _ in range(8):
        inner.get(
            "/api/v1/system",
            headers={"X-API-Token": WRONG, "X-Forwarded-For": "6.6.6.6, 203.0.113.80, 10.0.0.2"},
        )
    assert service.auth.guard.retry_after("203.0.113.80") is not None
    assert service.auth.guard.retry_after("10.0.0.2") is None
    assert service.auth.guard.retry_after("6.6.6.6") is None
