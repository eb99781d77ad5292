"""Which local user owns the other end of a loopback TCP connection (docs: Security notes,
"Loopback is not the operator").

Every local user, every SSH-tunnel client and the gateway itself arrive from 127.0.0.1, so a
loopback address says nothing about who is calling; the kernel does know which uid created the
peer's socket. `loopback_owner` asks it with one exact `sock_diag` netlink lookup (what `ss -tnpe`
shows in its `uid:` column): the kernel finds the one socket whose local end is the peer's
address and port and whose remote end is ours, a hash lookup whatever the number of open
sockets, so it costs the same with ten or ten thousand connections. Netlink needs no file, so it
keeps working under the process's Landlock ruleset, which does not let it read `/proc/net/tcp`.

Only a full, live socket answers: one with an inode. A closed one the kernel still keeps (a
TIME_WAIT or FIN-WAIT-2 entry, an orphan still sending) or a request entry reports uid 0 and inode
0, which must never stand for root (issue 44.13). The answer is `Unknown.GONE` then, and
`Unknown.UNAVAILABLE` when netlink is (seccomp, or a systemd unit without AF_NETLINK), the peer
is not on loopback, or the owner is the overflow uid: in a user namespace of its own (systemd's
PrivateUsers=) every user it does not map reads as 65534, so that number names nobody in
particular. The caller must not guess either way.

A subordinate uid (rootless containers, /etc/subuid) is answered as its owner
(svc_serving.subordinate_uids). The servers ask once per connection, when they accept it
(svc_serving.bounded), while the client's socket is surely there, and hand the answer to the
request (`OWNER_SCOPE_KEY`).
"""

from __future__ import annotations

import enum
import errno
import socket
import struct

from svc_serving.loopback import literal_address
from svc_serving.subordinate_uids import load

OWNER_SCOPE_KEY = "svc.peer_owner"
"""The ASGI scope key under which a server passes a loopback peer's owner (int, or None when not
known) from its connection to its requests."""

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST = 1
NLMSG_ERROR = 2
NO_COOKIE = 0xFFFFFFFF
TCP_TIME_WAIT = 6
TCP_NEW_SYN_RECV = 12
OVERFLOW_UID = 65534
_NOT_A_FULL_SOCKET = frozenset({TCP_TIME_WAIT, TCP_NEW_SYN_RECV})
_SUBORDINATE = load()  # at import: before the server confines itself
_HEADER = struct.Struct("=IHHII")  # nlmsghdr: length, type, flags, sequence, port id
# inet_diag_req_v2: family, protocol, extensions, pad, states, then inet_diag_sockid: ports
# (network order), source and destination (16 bytes each), interface, cookie (two words).
_REQUEST = struct.Struct("=BBBBI2s2s16s16sIII")
# inet_diag_msg: family, state, timer, retransmits, the 48-byte id, expires, rqueue, wqueue, uid,
# inode.
_REPLY = struct.Struct("=BBBB48sIIIII")
_ERROR = struct.Struct("=i")  # nlmsgerr: the negative errno, then the request's header
_ERRORED = _HEADER.size + _ERROR.size
_TIMEOUT_SECONDS = 0.5

Endpoint = tuple[str, int]


class Unknown(enum.Enum):
    GONE = "the peer's socket is closed or not yet a socket"
    UNAVAILABLE = "the kernel cannot be asked, or its answer names nobody"


def peer_owner(peer: Endpoint, local: Endpoint) -> int | Unknown:
    """The uid that owns the peer's socket of the loopback connection `peer` -> `local` (our end),
    a subordinate uid as its owner; or why it cannot be known for certain."""
    request = _request(peer, local)
    if request is None:
        return Unknown.UNAVAILABLE
    try:
        with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG) as diag:
            diag.settimeout(_TIMEOUT_SECONDS)
            diag.sendto(request, (0, 0))
            reply = diag.recv(8192)
    except OSError:
        return Unknown.UNAVAILABLE
    owner = _owner(reply)
    return _SUBORDINATE.owner(owner) if isinstance(owner, int) else owner


def loopback_owner(peer: Endpoint, local: Endpoint) -> int | None:
    """`peer_owner`, None for any reason it is not known."""
    owner = peer_owner(peer, local)
    return owner if isinstance(owner, int) else None


def listener_owner(listening: Endpoint) -> int | None:
    """The uid that owns the socket listening on the loopback endpoint `listening`, or None. Asked
    as for a connection from nowhere (the unspecified address, port 0), which no connected socket
    matches, so the kernel answers with the listener, never with a connection still waiting in
    its accept queue (no process holds that one yet: inode 0)."""
    nowhere = "::" if ":" in listening[0] else "0.0.0.0"  # noqa: S104 (a lookup, not a bind)
    return loopback_owner(listening, (nowhere, 0))


def _request(peer: Endpoint, local: Endpoint) -> bytes | None:
    peer_address, local_address = literal_address(peer[0]), literal_address(local[0])
    if peer_address is None or local_address is None:
        return None
    if not (
        peer_address.is_loopback and (local_address.is_loopback or local_address.is_unspecified)
    ):
        return None
    if peer_address.version != local_address.version:
        return None
    family = socket.AF_INET if peer_address.version == 4 else socket.AF_INET6
    body = _REQUEST.pack(
        family,
        socket.IPPROTO_TCP,
        0,
        0,
        0xFFFFFFFF,
        struct.pack("!H", peer[1]),
        struct.pack("!H", local[1]),
        peer_address.packed.ljust(16, b"\0"),
        local_address.packed.ljust(16, b"\0"),
        0,
        NO_COOKIE,
        NO_COOKIE,
    )
    header = _HEADER.pack(_HEADER.size + len(body), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST, 1, 0)
    return header + body


def _owner(reply: bytes) -> int | Unknown:
    if len(reply) < _HEADER.size:
        return Unknown.UNAVAILABLE
    _, kind, _, _, _ = _HEADER.unpack_from(reply)
    if kind == NLMSG_ERROR:
        # ENOENT: no such socket (gone; loopback peers are all ours to see).
        (error,) = _ERROR.unpack_from(reply, _HEADER.size) if len(reply) >= _ERRORED else (0,)
        return Unknown.GONE if error == -errno.ENOENT else Unknown.UNAVAILABLE
    if kind != SOCK_DIAG_BY_FAMILY or len(reply) < _HEADER.size + _REPLY.size:
        return Unknown.UNAVAILABLE
    _, state, _, _, _, _, _, _, uid, inode = _REPLY.unpack_from(reply, _HEADER.size)
    if state in _NOT_A_FULL_SOCKET or inode == 0:
        return Unknown.GONE
    if uid == OVERFLOW_UID:
        return Unknown.UNAVAILABLE
    return int(uid)
