"""A delivery worker's places (``application.places``): whatever claims and finishes come, an
endpoint never holds more than its room, nor a host more than its own, a claim leaves out the
webhooks of full endpoints and the full hosts, and nothing is kept once nothing is in flight."""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from fourcorner.application.delivery import DeliverySettings
from fourcorner.application.places import NO_ENDPOINT, Endpoint, Places
from fourcorner.entrypoints.config import Settings
from fourcorner.entrypoints.container import build_container

ORGS, HOSTS, HOOKS = 4, 3, 3  # webhooks: HOOKS of each organisation at each host

# a delivery: its organisation, host and webhook there; an organisation -1: its webhook is gone
rows = st.tuples(st.integers(-1, ORGS - 1), st.integers(0, HOSTS - 1), st.integers(0, HOOKS - 1))
steps = st.lists(
    st.one_of(
        st.tuples(st.just("claim"), st.lists(rows, max_size=12)),
        st.tuples(st.just("finish"), st.integers(0, 10_000)),
    ),
    max_size=60,
)


def place(org: int, host: int, hook: int) -> tuple[Endpoint, uuid.UUID | None]:
    if org < 0:
        return NO_ENDPOINT, None
    hook_id = uuid.UUID(int=1 + (org * HOSTS + host) * HOOKS + hook)
    return (uuid.UUID(int=10_000 + org), (f"h{host}.example.com", 443)), hook_id


@given(st.integers(1, 4), st.integers(1, 6), steps)
def test_claims_and_finishes_keep_both_bounds_and_leave_nothing_behind(
    endpoint_room: int, host_room: int, script: list[tuple[str, object]]
) -> None:
    places = Places(endpoint_room, host_room)
    flying: list[Endpoint] = []  # the deliveries leased and not finished, by endpoint
    for op, arg in script:
        if op == "claim":
            assert isinstance(arg, list)
            left_out, hosts_out = places.full(), places.full_hosts()
            claim = places.claim()
            by_endpoint = Counter(flying)
            by_host = Counter(e[1] for e in flying)
            crowded: set[tuple[Endpoint, uuid.UUID]] = set()
            for endpoint, hook_id in (place(*row) for row in arg):
                if hook_id in left_out or (hook_id is not None and endpoint[1] in hosts_out):
                    continue  # the outbox's query leaves it out
                room = hook_id is None or (
                    by_endpoint[endpoint] < endpoint_room and by_host[endpoint[1]] < host_room
                )
                assert claim.take(endpoint, hook_id) == room
                if room:
                    by_endpoint[endpoint] += 1
                    by_host[endpoint[1]] += 1
                    flying.append(endpoint)
                else:
                    assert hook_id is not None
                    crowded.add((endpoint, hook_id))
            assert claim.blocked == bool(crowded)
            places.took(claim)
            for endpoint, hook_id in crowded:  # the next claim leaves them out
                assert hook_id in places.full() or endpoint[1] in places.full_hosts()
        elif flying:
            assert isinstance(arg, int)
            endpoint = flying.pop(arg % len(flying))
            assert places.finish(endpoint) == (endpoint not in flying)
        real = [e for e in flying if e != NO_ENDPOINT]
        assert all(n <= endpoint_room for n in Counter(real).values())
        assert all(n <= host_room for n in Counter(e[1] for e in real).values())
        assert places.by_endpoint == Counter(flying)
        assert places.by_host == Counter(e[1] for e in flying)
        assert set(places.hooks_of) <= set(places.by_endpoint)
        assert places.full_hosts() == {
            h for h, n in Counter(e[1] for e in real).items() if n >= host_room
        }
    while flying:
        places.finish(flying.pop())
    assert (places.by_endpoint, places.by_host, places.hooks_of) == ({},) * 3
    assert places.full_hosts() == set()


def test_a_full_host_is_one_name_to_leave_out_whatever_its_webhooks() -> None:
    """Any number of organisations' webhooks at one full host: a claim leaves their
    deliveries due, and the next leaves out the host, not each webhook (nothing is kept of
    them), until a delivery there has finished."""
    slow = ("slow.example.com", 443)
    places = Places(endpoint_room=2, host_room=1)
    first = places.claim()
    assert first.take((uuid.UUID(int=1), slow), uuid.UUID(int=1))
    places.took(first)
    claim = places.claim()
    for n in range(3000):
        org = uuid.UUID(int=2 + n)
        assert not claim.take((org, slow), org)  # left due: the host is full
    places.took(claim)
    assert places.full_hosts() == {slow}
    assert places.full() == set()  # their endpoints are not full
    assert sum(len(h) for h in places.hooks_of.values()) == 1
    assert places.finish((uuid.UUID(int=1), slow))
    assert places.full_hosts() == set()
    assert (places.by_endpoint, places.by_host, places.hooks_of) == ({},) * 3


def test_a_host_holds_at_most_half_of_the_workers_places_unless_set(tmp_path: Path) -> None:
    assert DeliverySettings().host_places == 64
    assert DeliverySettings(concurrency=7).host_places == 3
    assert DeliverySettings(concurrency=1).host_places == 1  # one at least
    assert DeliverySettings(concurrency=7, per_host=5).host_places == 5
    built = build_container(Settings(data_dir=tmp_path)).delivery_settings()
    assert (built.concurrency, built.host_places) == (256, 128)
    environ = {"FOURCORNER_WEBHOOK_PER_HOST": "40", "FOURCORNER_DATABASE_URL": "memory://"}
    loaded = Settings.load(environ)
    assert build_container(loaded).delivery_settings().host_places == 40
