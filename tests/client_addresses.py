"""Client addresses (as aiohttp and the transport give them) with the client each is counted
as by ``throttle.address_key``: an IPv4 address and its IPv6-mapped form are one; IPv6
addresses are counted by their /64."""

from __future__ import annotations

ADDRESSES: tuple[tuple[str | None, str], ...] = (
    ("127.0.0.2", "a"),
    ("::ffff:127.0.0.2", "a"),
    ("10.1.2.3", "b"),
    ("2001:db8::1", "c"),
    ("2001:db8::ffff:0:1", "c"),
    ("2001:db8:0:1::1", "d"),
    (None, "e"),  # no address (a Unix socket's peer)
)
