"""At most so many open connections per client address (``FOURCORNER_HTTP_CONNECTIONS_PER_ADDRESS``).

A connection costs the server a file descriptor and a little memory from its opening to its
close, whatever it sends; descriptors are shared with the database's connections and the
files the service opens. Without a bound per address, one client could open connections until
the process has none left to accept another client with, or to reach its database. Each
connection's head has a bound of time (``FOURCORNER_HTTP_IDLE_SECONDS``), so such a client
must keep opening connections: this bounds how many it holds at once.

Counted by the TCP peer's address (``throttle.address_key``: an IPv6 one by its /64), in each
process on its own. The connections of a reverse proxy listed in ``FOURCORNER_TRUSTED_PROXIES``
are not counted: it carries many clients' requests, and bounds its clients itself. Behind a
proxy that is not listed, every connection is the proxy's: set the limit above what it opens,
or 0 (none).
"""

from __future__ import annotations

import json

from multidict import CIMultiDict

from fourcorner.entrypoints.http import errors as http_errors
from fourcorner.entrypoints.http.proxy import TrustedProxies
from fourcorner.entrypoints.http.throttle import address_key

RETRY_AFTER = 5
"""Seconds a refused client is told to wait (``Retry-After``) before it connects again."""


class ConnectionLimit:
    """Open connections per client address; ``limit`` 0 counts nothing and refuses nothing.

    An address has an entry only while it has a connection open, so memory is bounded by the
    connections open, whatever addresses come and go."""

    def __init__(self, limit: int = 0, proxies: TrustedProxies | None = None) -> None:
        if limit < 0:
            raise ValueError("limit >= 0")
        self.limit = limit
        self._proxies = proxies if proxies is not None else TrustedProxies()
        self._open: dict[str, int] = {}

    def __len__(self) -> int:
        """How many addresses have a connection open (counted)."""
        return len(self._open)

    def open(self, peer: str | None) -> str | None:
        """Count a new connection from ``peer`` (its TCP peer address): the key to give
        ``close`` when it ends, "" when it is not counted (no limit; a listed proxy), or
        ``None`` when ``peer`` has ``limit`` open already: the connection is to be refused,
        and it is not counted."""
        if not self.limit or self._proxies.trusts_peer(peer):
            return ""
        key = address_key(peer)
        count = self._open.get(key, 0)
        if count >= self.limit:
            return None
        self._open[key] = count + 1
        return key

    def close(self, key: str) -> None:
        """A connection counted under ``key`` (``open``'s) has ended."""
        if not key:
            return
        count = self._open.get(key, 0) - 1
        if count > 0:
            self._open[key] = count
        else:
            self._open.pop(key, None)

    def refusal(self, headers: CIMultiDict[str]) -> bytes:
        """The whole answer to a connection refused for its address's limit, with ``headers``
        (those every answer carries) added: 503 in the API's error shape, with
        ``Retry-After``, ending the connection. Written before the request is read: the
        client reads it as the answer to its first request."""
        error = http_errors.TooManyConnections(limit=self.limit, retry_after=RETRY_AFTER)
        body = json.dumps({"code": error.code, "error": error.message()}).encode()
        head = CIMultiDict(headers)
        head["Content-Type"] = "application/json; charset=utf-8"
        head["Content-Length"] = str(len(body))
        head["Retry-After"] = str(RETRY_AFTER)
        head["Connection"] = "close"
        lines = "".join(f"{name}: {value}\r\n" for name, value in head.items())
        return f"HTTP/1.1 503 Service Unavailable\r\n{lines}\r\n".encode("latin-1") + body
