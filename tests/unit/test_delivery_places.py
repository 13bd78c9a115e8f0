"""A delivery worker's places (``application.places``): whatever claims and finishes come, an
endpoint never holds more than its room, nor a host more than its own, a claim leaves out the
webhooks of those that are full, and nothing is kept once nothing is in flight."""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from fourcorner.application.delivery import DeliverySettings
from fourcorner.application.places import HOST_HOOKS_MOST, NO_ENDPOINT, Endpoint, Places
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
            left_out = places.full()
            claim = places.claim()
            by_endpoint = Counter(flying)
            by_host = Counter(e[1] for e in flying)
            crowded: set[uuid.UUID] = set()
            for endpoint, hook_id in (place(*row) for row in arg):
                if hook_id in left_out:
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
                    crowded.add(hook_id)
            assert claim.blocked == bool(crowded)
            places.took(claim)
            assert crowded <= places.full()  # the next claim leaves them out
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
        assert set(places.hooks_at) <= set(places.by_host)
    while flying:
        places.finish(flying.pop())
    assert (places.by_endpoint, places.by_host, places.hooks_of, places.hooks_at) == ({},) * 4


def test_the_webhooks_kept_at_full_hosts_are_at_most_so_many() -> None:
    """Any number of organisations' webhooks at one full host: a claim leaves their
    deliveries due, and the worker keeps at most ``HOST_HOOKS_MOST`` of them to leave out."""
    slow = ("slow.example.com", 443)
    places = Places(endpoint_room=2, host_room=1)
    first = places.claim()
    assert first.take((uuid.UUID(int=1), slow), uuid.UUID(int=1))
    places.took(first)
    for round_ in range(3):
        claim = places.claim()
        for n in range(HOST_HOOKS_MOST // 2 + 7):
            org = uuid.UUID(int=2 + round_ * HOST_HOOKS_MOST + n)
            assert not claim.take((org, slow), org)  # left due: the host is full
        places.took(claim)
    assert len(places.hooks_at[slow]) == HOST_HOOKS_MOST
    assert len(places.full()) == HOST_HOOKS_MOST
    assert places.finish((uuid.UUID(int=1), slow))
    assert (places.by_endpoint, places.by_host, places.hooks_of, places.hooks_at) == ({},) * 4


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
