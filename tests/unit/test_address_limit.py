"""The count of requests in flight per client address: refused over the limit, given back
however a request ends, an entry only while an address has one in flight, 0 no limit."""

from __future__ import annotations

import asyncio
from collections import Counter
from contextlib import AbstractContextManager

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from client_addresses import ADDRESSES
from fourcorner.application.sending import Exchange
from fourcorner.domain.errors import MalformedBody
from fourcorner.entrypoints.config import Settings
from fourcorner.entrypoints.http.address_limit import SPOOL_SHARE, AddressLimit, spool_share
from fourcorner.entrypoints.http.errors import AddressBusy

# how a request ends, as the block of ``held`` sees it: an answer, an error, a cancellation
# (the handler's task cancelled, at shutdown or by a timeout), the client gone
ENDINGS = (None, MalformedBody(), asyncio.CancelledError(), ConnectionResetError())


class InFlight(RuleBasedStateMachine):
    """Requests from the addresses above begin and end in any order, each ending in any way;
    the counts agree with a model of the requests in flight."""

    def __init__(self) -> None:
        super().__init__()
        self.limit = AddressLimit(0)
        self.open: list[tuple[str, AbstractContextManager[None]]] = []
        self.model: Counter[str] = Counter()

    @initialize(limit=st.integers(0, 3))
    def start(self, limit: int) -> None:
        self.limit = AddressLimit(limit)

    @rule(address=st.sampled_from(ADDRESSES))
    def begin(self, address: tuple[str | None, str]) -> None:
        remote, sender = address
        held = self.limit.held(remote)
        if self.limit.limit and self.model[sender] >= self.limit.limit:
            with pytest.raises(AddressBusy) as refused:
                held.__enter__()
            assert refused.value.limit == self.limit.limit and refused.value.retry_after >= 1
            return
        held.__enter__()
        self.open.append((sender, held))
        self.model[sender] += 1

    @precondition(lambda self: self.open)
    @rule(data=st.data(), ending=st.sampled_from(ENDINGS))
    def end(self, data: st.DataObject, ending: BaseException | None) -> None:
        sender, held = self.open.pop(data.draw(st.integers(0, len(self.open) - 1)))
        if ending is None:
            held.__exit__(None, None, None)
        else:  # the error goes on through (``held`` suppresses none)
            assert not held.__exit__(type(ending), ending, None)
        self.model[sender] -= 1

    @invariant()
    def counts_agree(self) -> None:
        counted = self.limit.limit > 0
        for remote, sender in ADDRESSES:
            assert self.limit.in_flight(remote) == (self.model[sender] if counted else 0)
        # an entry for each sender with a request in flight, none for the others
        assert len(self.limit) == (sum(1 for n in self.model.values() if n) if counted else 0)

    def teardown(self) -> None:
        while self.open:
            self.open.pop()[1].__exit__(None, None, None)
        assert len(self.limit) == 0


TestInFlight = InFlight.TestCase


async def test_a_request_cancelled_while_it_waits_gives_its_count_back():
    """A handler's task cancelled while it waits inside the block (for a place, its body, the
    gate) leaves the block as a cancellation: the count is given back."""
    limit = AddressLimit(1)
    entered, never = asyncio.Event(), asyncio.Event()

    async def request() -> None:
        with limit.held("192.0.2.1"):
            entered.set()
            await never.wait()

    task = asyncio.create_task(request())
    await entered.wait()
    with pytest.raises(AddressBusy):
        limit.held("192.0.2.1").__enter__()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(limit) == 0
    with limit.held("192.0.2.1"):
        assert limit.in_flight("192.0.2.1") == 1


def test_the_default_lets_a_burst_of_this_services_own_sender_through():
    """A peer running this service sends up to ``Exchange.concurrency`` messages at once, each
    refusal costing it one of its attempts: the default limit is not below that."""
    sent_at_once = attrs.fields(Exchange).concurrency.default
    assert Settings().as4_inbound_per_address >= sent_at_once


def test_the_limit_and_wait_must_be_usable():
    for limit, wait in ((-1, 5), (1, 0)):
        with pytest.raises(ValueError, match="limit >= 0"):
            AddressLimit(limit, retry_after=wait)


@given(st.integers(1, 4096), st.integers(0, 4096))
def test_an_address_holds_at_most_a_quarter_of_the_places_on_disk(
    spools: int, per_address: int
) -> None:
    """Where addresses are counted, each may hold at least one place on disk, never more than
    it may have in flight, and (given four places or more) never more than a quarter of them:
    four addresses at their share leave none of the others' large messages waiting alone; with
    the limit off (0), nothing is counted."""
    share = spool_share(spools, per_address)
    if per_address == 0:
        assert share == 0
        return
    assert 1 <= share <= per_address
    if spools >= SPOOL_SHARE:
        assert share * SPOOL_SHARE <= spools
    assert share == min(per_address, max(1, spools // SPOOL_SHARE))
