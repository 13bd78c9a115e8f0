"""The count of open connections per client address: one over the limit refused and not
counted, given back when a counted one ends, an entry only while an address has one open,
a listed proxy's never counted, 0 no limit; the refusal is a whole HTTP answer in the API's
error shape."""

from __future__ import annotations

import ipaddress
import json
from collections import Counter

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from multidict import CIMultiDict

from client_addresses import ADDRESSES
from fourcorner.entrypoints.http.connections import RETRY_AFTER, ConnectionLimit
from fourcorner.entrypoints.http.proxy import TrustedProxies

# peers with the client each counts as; "proxy": a listed proxy, never counted
PEERS = (*ADDRESSES, ("192.0.2.7", "proxy"))
PROXIES = TrustedProxies([ipaddress.ip_network("192.0.2.0/24")])


class OpenConnections(RuleBasedStateMachine):
    @initialize(limit=st.integers(0, 4))
    def start(self, limit: int) -> None:
        self.limit = ConnectionLimit(limit, PROXIES)
        self.open: list[tuple[str, str]] = []  # (client, key) of each connection admitted

    @rule(peer=st.sampled_from(PEERS))
    def connect(self, peer: tuple[str | None, str]) -> None:
        address, client = peer
        counted = Counter(c for c, k in self.open if k)
        key = self.limit.open(address)
        counts = self.limit.limit and client != "proxy"
        if counts and counted[client] >= self.limit.limit:
            assert key is None  # refused, not counted
            return
        assert key is not None and bool(key) == bool(counts)
        self.open.append((client, key))

    @rule(data=st.data())
    def disconnect(self, data: st.DataObject) -> None:
        if not self.open:
            return
        _client, key = self.open.pop(data.draw(st.integers(0, len(self.open) - 1)))
        self.limit.close(key)

    @invariant()
    def an_entry_only_while_an_address_has_one_counted(self) -> None:
        assert len(self.limit) == len({c for c, k in self.open if k})

    @invariant()
    def no_address_past_the_limit(self) -> None:
        counted = Counter(c for c, k in self.open if k)
        assert all(n <= self.limit.limit for n in counted.values())


TestOpenConnections = OpenConnections.TestCase


def test_the_refusal_is_a_whole_answer_in_the_error_shape() -> None:
    headers: CIMultiDict[str] = CIMultiDict({"X-Content-Type-Options": "nosniff"})
    answer = ConnectionLimit(7).refusal(headers)
    head, _, body = answer.partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    fields = dict(line.split(": ", 1) for line in lines)
    assert status == "HTTP/1.1 503 Service Unavailable"
    assert fields["Retry-After"] == str(RETRY_AFTER) and fields["Connection"] == "close"
    assert fields["X-Content-Type-Options"] == "nosniff"
    assert int(fields["Content-Length"]) == len(body)
    error = json.loads(body)
    assert error["code"] == "AT-1506" and "7 connections open" in error["error"]
