"""Which local user owns the other end of a loopback TCP connection (docs: Security notes,
"Loopback is not the operator").

Every local user, every SSH-tunnel client and the gateway itself arrive from 127.0.0.1, so a
loopback address says nothing about who is calling; the kernel does know which uid created the
peer's socket. `loopback_owner` asks it with one exact `sock_diag` netlink lookup (what `ss -tnpe`
shows in its `uid:` column): the kernel finds the one socket whose local end is the peer's
address and port and whose remote end is ours, a hash lookup whatever the number of open
sockets, so it costs the same with ten or ten thousand connections. Netlink needs no file, so it
keeps working under the process's Landlock ruleset, which does not let it read `/proc/net/tcp`.

The answer is None, and the caller must not guess, when the peer is not on loopback, the socket
is gone or is not a full socket a process holds: a TIME_WAIT, FIN-WAIT-2 timewait or request
entry, or an orphan its process already closed (the kernel reports uid 0 and inode 0 for those,
which must never stand for root; any local user can leave one by closing right after a request),
netlink is unavailable (seccomp, or a systemd unit without AF_NETLINK),
or the owner is the overflow uid: in a user namespace of its own (systemd's PrivateUsers=) every
user it does not map reads as 65534, so that number names nobody in particular.
"""

from __future__ import annotations

import socket
import struct

from svc_serving.loopback import ip_address, is_loopback_address

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST = 1
NLMSG_ERROR = 2
NO_COOKIE = 0xFFFFFFFF
TCP_TIME_WAIT = 6
TCP_NEW_SYN_RECV = 12
OVERFLOW_UID = 65534
_NOT_A_FULL_SOCKET = frozenset({TCP_TIME_WAIT, TCP_NEW_SYN_RECV})
_HEADER = struct.Struct("=IHHII")  # nlmsghdr: length, type, flags, sequence, port id
# inet_diag_req_v2: family, protocol, extensions, pad, states, then inet_diag_sockid: ports
# (network order), source and destination (16 bytes each), interface, cookie (two words).
_REQUEST = struct.Struct("=BBBBI2s2s16s16sIII")
# inet_diag_msg: family, state, timer, retransmits, the 48-byte id, expires, rqueue, wqueue, uid,
# inode (0 when no process holds the socket).
_REPLY = struct.Struct("=BBBB48sIIIII")
_TIMEOUT_SECONDS = 0.5

Endpoint = tuple[str, int]
LOOPBACK = "loopback"
PEER_UID = "svc.peer_uid"
"""The ASGI scope key where svc_serving.bounded puts the uid owning a loopback peer's socket (None:
not loopback, or not known), looked up when the connection was accepted, while the peer's socket
is certainly open (a request's own lookup could meet a socket its client already closed)."""


def loopback_user(uid: int | None) -> str:
    """The key a loopback peer is counted under (connections, the brute-force guard): its local
    user, `loopback:uid=N`, or `loopback`, one key for all, when the owner is not known."""
    return LOOPBACK if uid is None else f"{LOOPBACK}:uid={uid}"


def loopback_owner(peer: Endpoint, local: Endpoint) -> int | None:
    """The uid that owns the peer's socket of the loopback connection `peer` -> `local` (our end),
    or None when it cannot be known for certain."""
    if not (is_loopback_address(peer[0]) and is_loopback_address(local[0])):
        return None
    return _ask(_request(peer, local))


def listener_owner(listening: Endpoint) -> int | None:
    """The uid that owns the socket listening on the loopback endpoint `listening`, or None. Asked
    as for a connection from nowhere (the unspecified address, port 0), which no connected socket
    matches, so the kernel answers with the listener, never with a connection still waiting in
    its accept queue (no process holds that one yet: inode 0)."""
    if not is_loopback_address(listening[0]):
        return None
    nowhere = "::" if ":" in listening[0] else "0.0.0.0"  # noqa: S104 (a lookup, not a bind)
    return _ask(_request(listening, (nowhere, 0)))


def _ask(request: bytes | None) -> int | None:
    if request is None:
        return None
    try:
        with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG) as diag:
            diag.settimeout(_TIMEOUT_SECONDS)
            diag.sendto(request, (0, 0))
            reply = diag.recv(8192)
    except OSError:
        return None
    return _owner(reply)


def _request(peer: Endpoint, local: Endpoint) -> bytes | None:
    peer_address, local_address = ip_address(peer[0]), ip_address(local[0])
    if peer_address is None or local_address is None:
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


def _owner(reply: bytes) -> int | None:
    if len(reply) < _HEADER.size:
        return None
    _, kind, _, _, _ = _HEADER.unpack_from(reply)
    if kind == NLMSG_ERROR or kind != SOCK_DIAG_BY_FAMILY:
        # ENOENT: no such socket (gone, or not ours to see); nothing else is expected.
        return None
    if len(reply) < _HEADER.size + _REPLY.size:
        return None
    _, state, _, _, _, _, _, _, uid, inode = _REPLY.unpack_from(reply, _HEADER.size)
    if state in _NOT_A_FULL_SOCKET or inode == 0 or uid == OVERFLOW_UID:
        return None
    return int(uid)
