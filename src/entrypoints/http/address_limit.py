"""At most so many requests in flight at once from one client address: the inbound AS4
endpoint's bound per sender (``FOURCORNER_AS4_INBOUND_PER_ADDRESS``).

The endpoint's places for bodies being taken in (``as4_readers`` in memory, ``as4_spools`` on
disk) and its gate are shared by every sending access point; without a bound per address,
one address could hold all of them with many slow connections, each until the bounds of time
of its body (``spooling.Pace``) end it, and keep every other sender's message waiting
meanwhile. Counted by ``throttle.address_key`` (an IPv6 client by its /64, which one host
usually holds whole), in each process on its own, of the client's address as
``proxy.client_address`` has it: behind a reverse proxy listed in
``FOURCORNER_TRUSTED_PROXIES``, the one the proxy forwards. Behind one that is not listed,
every request has the proxy's address: there the limit is 0 (none), and the proxy bounds its
clients.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from fourcorner.entrypoints.http.errors import AddressBusy
from fourcorner.entrypoints.http.throttle import address_key

RETRY_AFTER = 5
"""Seconds a refused sender is told to wait (``Retry-After``): time enough for its messages in
flight to be answered when it sends at a usual pace (a message of 10 KB is taken in and
answered in tens of milliseconds; one of 1 MB over 16 Mbit/s in about a second), so one that
honours it finds room. A sender that holds its places by sending slowly frees none sooner
however long it is told; one that asks again too early is refused again, unread."""


SPOOL_SHARE = 4
"""One client address holds at most a quarter of the places on disk (``spool_share``)."""


def spool_share(spools: int, per_address: int) -> int:
    """How many of the ``spools`` places on disk one client address may hold at once: a
    ``SPOOL_SHARE``-th of them (at least one), never more than it may have in flight
    (``per_address``), and no bound where that limit is off (0: behind a proxy that is not
    listed, every request has one address). Large messages (announced so, of no announced
    length, or compressed) wait for one of few places, each up to the bounds of time of its
    body; the limit in flight alone (16 by default, as many as the places on disk) would let
    one address hold them all, so that every other sender's large message waited unread."""
    if per_address == 0:
        return 0
    return min(per_address, max(1, spools // SPOOL_SHARE))


class AddressLimit:
    """Requests in flight per client address; ``limit`` 0 counts nothing and refuses nothing.

    Memory is bounded by what is in flight, whatever addresses come and go: an address has an
    entry (its key and a count) only while it has a request in flight, removed with the last,
    so there are never more entries than requests being served."""

    def __init__(self, limit: int, *, retry_after: int = RETRY_AFTER, large: bool = False) -> None:
        if limit < 0 or retry_after < 1:
            raise ValueError("limit >= 0 and retry_after >= 1")
        self.limit = limit
        self._retry_after = retry_after
        self._large = large  # what it counts, as its refusal says: large messages on disk
        self._in_flight: dict[str, int] = {}

    def __len__(self) -> int:
        """How many addresses have a request in flight."""
        return len(self._in_flight)

    def in_flight(self, remote: str | None) -> int:
        """How many requests the address of ``remote`` has in flight."""
        return self._in_flight.get(address_key(remote), 0)

    @contextlib.contextmanager
    def held(self, remote: str | None) -> Iterator[None]:
        """The block as one request of ``remote`` (a client address: ``client_address``) in
        flight, given up however it ends: an answer, an error, the client gone, a
        cancellation. With ``limit`` held by that address already, ``AddressBusy`` is raised
        and the block not run. The count is taken and checked with no ``await`` between: one
        event loop's requests cannot both see room for one."""
        if not self.limit:
            yield
            return
        key = address_key(remote)
        counts = self._in_flight
        held = counts.get(key, 0)
        if held >= self.limit:
            raise AddressBusy(limit=self.limit, retry_after=self._retry_after, large=self._large)
        counts[key] = held + 1
        try:
            yield
        finally:
            left = counts[key] - 1
            if left:
                counts[key] = left
            else:
                del counts[key]
