"""Leases against the timeouts of the work they hold (``entrypoints.lease_checks``): a lease
that a send or a webhook delivery may outlive is refused at start in one line naming the
lease and the timeouts, since another worker would claim the record while its send still
runs and the document (or the webhook) would go out twice."""

from __future__ import annotations

import math
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fourcorner.adapters.smp.client import MAX_REQUESTS, REVOCATION_WAITS
from fourcorner.application import sml_worker
from fourcorner.entrypoints.config import ConfigError, Settings
from fourcorner.entrypoints.container import build_container, resolve
from fourcorner.entrypoints.lease_checks import (
    HEADROOM,
    SML_CALLS,
    delivery_turns,
    locator_lease,
)

seconds = st.floats(0.01, 100_000) | st.integers(1, 600).map(float)
discoveries = st.sampled_from(["fixed", "sml"])
policies = st.sampled_from(["off", "soft", "hard"])
revocation_waits = st.floats(0, 60) | st.integers(0, 60).map(float)


def refusals(settings: Settings, lease: str) -> list[str]:
    return [p for p in settings.problems() if p.startswith(f"FOURCORNER_{lease}=")]


@pytest.mark.parametrize("discovery", ["fixed", "sml"])
def test_the_defaults_pass(discovery: str) -> None:
    assert Settings(discovery=discovery).problems() == []


@given(seconds, seconds, seconds, seconds, discoveries, policies, revocation_waits)
def test_an_accepted_send_lease_outlasts_all_a_send_may_wait(
    lease: float,
    as4: float,
    smp: float,
    dns: float,
    discovery: str,
    policy: str,
    revocation_wait: float,
) -> None:
    """The AS4 exchange, each SMP request of the lookup, (with sml discovery) the SML's DNS
    answer and (unless revocation is off) each wait of the lookup for a certificate's
    revocation list are each bounded by their setting: a lease is accepted only when it is at
    least ``HEADROOM`` times all of them together (room for the work between them), and
    refused in one line naming the lease and each setting it must outlast."""
    settings = Settings(
        send_lease_seconds=lease,
        as4_timeout=as4,
        smp_timeout=smp,
        dns_timeout=dns,
        discovery=discovery,
        revocation=policy,
        revocation_wait_seconds=revocation_wait,
    )
    waited = REVOCATION_WAITS * revocation_wait if policy != "off" else 0.0
    waits = as4 + MAX_REQUESTS * smp + (dns if discovery == "sml" else 0.0) + waited
    refused = refusals(settings, "SEND_LEASE_SECONDS")
    if refused:
        assert lease < HEADROOM * waits
        [line] = refused
        named = {"AS4_TIMEOUT", "SMP_TIMEOUT"} | ({"DNS_TIMEOUT"} if discovery == "sml" else set())
        named |= {"REVOCATION_WAIT_SECONDS"} if waited else set()
        every = ("AS4_TIMEOUT", "SMP_TIMEOUT", "DNS_TIMEOUT", "REVOCATION_WAIT_SECONDS")
        assert {n for n in every if n in line} == named
        assert "\n" not in line
    else:
        assert lease > waits
        assert lease >= HEADROOM * waits * (1 - 1e-9)


@given(seconds, seconds)
def test_an_accepted_webhook_lease_outlasts_a_delivery_and_its_turn(
    lease: float, timeout: float
) -> None:
    """A claimed delivery may wait for its turn behind the deliveries claimed to its endpoint
    before its own send, each within ``FOURCORNER_WEBHOOK_TIMEOUT``: a lease is accepted only
    when it outlasts that (``HEADROOM`` times), and refused naming both settings."""
    settings = Settings(webhook_lease_seconds=lease, webhook_timeout=timeout)
    waits = delivery_turns() * timeout
    refused = refusals(settings, "WEBHOOK_LEASE_SECONDS")
    if refused:
        assert lease < HEADROOM * waits
        [line] = refused
        assert "FOURCORNER_WEBHOOK_TIMEOUT=" in line and "\n" not in line
    else:
        assert lease > 2 * timeout  # its turn, then its own send
        assert lease >= HEADROOM * waits * (1 - 1e-9)


@given(seconds, seconds, discoveries)
def test_a_lease_no_longer_than_one_timeout_is_always_refused(
    lease: float, more: float, discovery: str
) -> None:
    """Whatever the other values: a lease that a single AS4 exchange, or a single webhook
    call, may outlast is refused."""
    as4 = Settings(send_lease_seconds=lease, as4_timeout=lease + more, discovery=discovery)
    assert refusals(as4, "SEND_LEASE_SECONDS")
    hook = Settings(webhook_lease_seconds=lease, webhook_timeout=lease + more)
    assert refusals(hook, "WEBHOOK_LEASE_SECONDS")


def test_the_turns_weighed_are_those_of_the_worker_the_container_builds(tmp_path: Path) -> None:
    worker = build_container(Settings(data_dir=tmp_path)).delivery_settings()
    assert delivery_turns(worker) == delivery_turns() == 2
    assert delivery_turns() == 1 + math.ceil(worker.per_endpoint_waiting / worker.per_endpoint)


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"SEND_LEASE_SECONDS": "60"}, "FOURCORNER_SEND_LEASE_SECONDS=60 is too short"),
        (
            {"SEND_LEASE_SECONDS": "30", "AS4_TIMEOUT": "20", "SMP_TIMEOUT": "2"},
            "FOURCORNER_SEND_LEASE_SECONDS=30 is too short: one send may wait 41 s",
        ),
        (
            {"SEND_LEASE_SECONDS": "120"},  # the default before the revocation lists' waits
            "FOURCORNER_SEND_LEASE_SECONDS=120 is too short: one send may wait 105 s on the "
            "network (FOURCORNER_AS4_TIMEOUT=60, 3 × FOURCORNER_SMP_TIMEOUT=10, "
            "3 × FOURCORNER_REVOCATION_WAIT_SECONDS=5)",
        ),
        ({"WEBHOOK_LEASE_SECONDS": "30"}, "FOURCORNER_WEBHOOK_LEASE_SECONDS=30 is too short"),
        ({"WEBHOOK_TIMEOUT": "30"}, "FOURCORNER_WEBHOOK_LEASE_SECONDS=60 is too short"),
        ({"AS4_TIMEOUT": "0"}, "FOURCORNER_AS4_TIMEOUT=0 must be more than 0 seconds"),
        ({"DNS_TIMEOUT": "-1"}, "FOURCORNER_DNS_TIMEOUT=-1 must be more than 0 seconds"),
    ],
)
def test_a_short_lease_stops_the_start_in_one_line(env: dict[str, str], says: str) -> None:
    with pytest.raises(ConfigError) as e:
        Settings.load({f"FOURCORNER_{k}": v for k, v in env.items()})
    assert str(e.value).startswith(says) and "\n" not in str(e.value)


@pytest.mark.parametrize(
    "env",
    [
        # the end-to-end tests' own (tests/e2e/test_crash.py, tests/e2e/test_workers.py)
        {
            "SEND_LEASE_SECONDS": "18",
            "AS4_TIMEOUT": "8",
            "SMP_TIMEOUT": "2",
            "REVOCATION_WAIT_SECONDS": "0",
        },
        {"WEBHOOK_LEASE_SECONDS": "5", "WEBHOOK_TIMEOUT": "2"},
        {"SEND_LEASE_SECONDS": "320", "AS4_TIMEOUT": "200", "DISCOVERY": "sml"},
        {"SEND_LEASE_SECONDS": "120", "REVOCATION": "off"},  # no list is waited for
    ],
)
def test_a_lease_raised_with_its_timeouts_passes(env: dict[str, str]) -> None:
    Settings.load({f"FOURCORNER_{k}": v for k, v in env.items()})


async def test_the_timeouts_reach_the_adapters(tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path,
        database_url="memory://",
        discovery="sml",
        as4_timeout=7,
        smp_timeout=3,
        dns_timeout=2,
        send_lease_seconds=30,
    )
    container = build_container(settings)
    transport = await resolve(container.ap_transport)
    lookup = await resolve(container.participant_lookup)
    try:
        assert transport._timeout.total == 7
        assert lookup._client._timeout == 3
        assert container.discovery()._timeout == 2
    finally:
        await container.shutdown_resources()


@given(st.floats(0.01, 600))
def test_the_sml_lease_outlasts_what_a_task_may_wait_on_the_sml(timeout: float) -> None:
    """A task makes at most ``SML_CALLS`` calls, each within ``FOURCORNER_SML_TIMEOUT`` (up to
    600 s): the workers' lease on it is never shorter than ``HEADROOM`` times those, nor than
    the workers' own ``LEASE``."""
    lease = locator_lease(Settings(sml_timeout=timeout)).total_seconds()
    assert lease >= HEADROOM * SML_CALLS * timeout
    assert lease >= sml_worker.LEASE.total_seconds()
    assert lease == max(sml_worker.LEASE.total_seconds(), math.ceil(HEADROOM * SML_CALLS * timeout))


async def test_the_sml_workers_hold_their_tasks_by_the_lease_derived(tmp_path: Path) -> None:
    for timeout, lease in ((600, timedelta(seconds=1500)), (30, sml_worker.LEASE)):
        settings = Settings(data_dir=tmp_path, database_url="memory://", sml_timeout=timeout)
        container = build_container(settings)
        try:
            assert (await resolve(container.locator_worker))._lease == lease
        finally:
            await container.shutdown_resources()
