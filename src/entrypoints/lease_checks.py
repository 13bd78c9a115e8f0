"""Whether each lease outlasts the work it holds (part of ``Settings.problems``).

A worker's claim on a document to send, or on a webhook delivery, holds a lease: once the
lease runs out, any worker (of another process, or this one) claims the record again. A send
or a delivery still running then goes out a second time: the same document posted twice to
the receiving access point, the same webhook called twice. So a lease must outlast the
longest its claim can take: what it waits on the network, each wait bounded by a timeout,
with room (``HEADROOM``) for the work between them (reading the document, building and
keeping its message, writing the outcome).
"""

from __future__ import annotations

import math
from datetime import timedelta
from typing import TYPE_CHECKING

from fourcorner.adapters.smp.client import MAX_REQUESTS, REVOCATION_WAITS
from fourcorner.application import sml_worker
from fourcorner.application.delivery import DeliverySettings
from fourcorner.entrypoints.setting_values import PREFIX

if TYPE_CHECKING:
    from fourcorner.entrypoints.config import Settings

HEADROOM = 1.25
"""A lease is at least this many times the longest its claim waits on the network."""

SECONDS = (
    "webhook_timeout",
    "webhook_lease_seconds",
    "send_lease_seconds",
    "as4_timeout",
    "smp_timeout",
    "dns_timeout",
)
"""The settings weighed here: seconds, each more than 0 (``setting_checks`` names one that is
not, and it is not weighed)."""


def revocation_waits(s: Settings) -> float:
    """How long the lookup of one send may wait for revocation lists, in seconds:
    ``REVOCATION_WAITS`` certificate checks, each up to ``FOURCORNER_REVOCATION_WAIT_SECONDS``
    (none with ``FOURCORNER_REVOCATION=off``)."""
    if s.revocation.strip().lower() == "off":
        return 0.0
    return REVOCATION_WAITS * s.revocation_wait_seconds


def send_waits(s: Settings) -> float:
    """The longest one send waits on the network, in seconds: the receiver's lookup (with sml
    discovery its DNS name in the SML, then at most ``MAX_REQUESTS`` requests to its SMP, and
    the revocation lists of the certificates it checks) and the AS4 exchange."""
    dns = s.dns_timeout if s.discovery_mode == "sml" else 0.0
    return dns + MAX_REQUESTS * s.smp_timeout + revocation_waits(s) + s.as4_timeout


SML_CALLS = 2
"""Calls to the SML one task makes at most: its own, and after a failure the question whether
the participant is registered all the same (``sml_tasks._judge``)."""


def locator_lease(s: Settings) -> timedelta:
    """The SML workers' lease on a task: ``sml_worker.LEASE``, or ``HEADROOM`` times what a
    task may wait on the SML where that is longer (``FOURCORNER_SML_TIMEOUT`` goes up to 600
    s): a lease that ran out under a call still waiting would let another worker make the same
    call again. Derived, not checked: no setting of its own could be wrong."""
    needs = math.ceil(HEADROOM * SML_CALLS * s.sml_timeout)  # whole seconds, rounded up
    return max(sml_worker.LEASE, timedelta(seconds=needs))


def delivery_turns(worker: DeliverySettings | None = None) -> int:
    """How many webhook timeouts one delivery may take: a worker (its settings as
    ``adapter_setup.delivery_settings`` leaves them, the defaults) claims at most
    ``per_endpoint`` sending and ``per_endpoint_waiting`` waiting deliveries to one endpoint,
    so a claimed delivery waits for its turn while at most that many rounds of sends ahead of
    it end (each within a timeout), then sends."""
    worker = worker or DeliverySettings()
    return 1 + math.ceil(worker.per_endpoint_waiting / worker.per_endpoint)


def problems(s: Settings) -> list[str]:
    """A lease too short for what its claim may wait, one line each (naming the lease and the
    timeouts it must outlast)."""
    if any(not getattr(s, name) > 0 for name in SECONDS):
        return []
    out: list[str] = []
    waits = send_waits(s)
    if _short(s.send_lease_seconds, waits):
        more = f", {PREFIX}DNS_TIMEOUT={s.dns_timeout:g}" if s.discovery_mode == "sml" else ""
        if revocation_waits(s):
            more += (
                f", {REVOCATION_WAITS} × {PREFIX}REVOCATION_WAIT_SECONDS="
                f"{s.revocation_wait_seconds:g}"
            )
        out.append(
            f"{PREFIX}SEND_LEASE_SECONDS={s.send_lease_seconds:g} is too short: one send may "
            f"wait {waits:g} s on the network ({PREFIX}AS4_TIMEOUT={s.as4_timeout:g}, "
            f"{MAX_REQUESTS} × {PREFIX}SMP_TIMEOUT={s.smp_timeout:g}{more}) and the lease must "
            f"be at least {HEADROOM:g} times that ({HEADROOM * waits:g} s), or another worker "
            "sends the document again while its send still runs; raise "
            f"{PREFIX}SEND_LEASE_SECONDS or lower the timeouts"
        )
    turns = delivery_turns()
    waits = turns * s.webhook_timeout
    if _short(s.webhook_lease_seconds, waits):
        out.append(
            f"{PREFIX}WEBHOOK_LEASE_SECONDS={s.webhook_lease_seconds:g} is too short: one "
            f"delivery may take {waits:g} s ({turns} × {PREFIX}WEBHOOK_TIMEOUT="
            f"{s.webhook_timeout:g}: its turn behind the deliveries to its endpoint, then its "
            f"own) and the lease must be at least {HEADROOM:g} times that "
            f"({HEADROOM * waits:g} s), or another worker calls the webhook again while its "
            f"delivery still runs; raise {PREFIX}WEBHOOK_LEASE_SECONDS or lower "
            f"{PREFIX}WEBHOOK_TIMEOUT"
        )
    return out


def _short(lease: float, waits: float) -> bool:
    """``lease`` is less than ``HEADROOM`` times ``waits`` (by more than rounding)."""
    return lease < HEADROOM * waits * (1 - 1e-12)
