"""What every use case takes (``Context``: its units of work, the reference data, time and
ids), and the network's ports (``Network``), which only the use cases that reach the network
take, as a parameter of their own.

A use case's signature says what it uses beyond the ``Context``: ``net: Network`` for the
SMP registrar, the SML, the directory, the certificate inspector and the access points' base
URL (participants, access points, certificates, the SML's tasks, the operator's set-up), a
``KeySealer`` alone where only a secret is sealed or opened (webhooks, sending, receiving,
the workers that deliver and send), a ``CertificateInspector`` alone where only certificates
are read. Nothing is optional: a use case cannot be called without a port it needs.

Time and ids are ports like the others: the use cases read the time from ``clock`` (and
``clock_ns``, to the nanosecond) and make ids with ``new_id``, never from the system
themselves, so a test decides both; the container gives the system's (``adapters.system``)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Hashable
from datetime import datetime, timedelta

import attrs

from fourcorner.application.locator import NoLocator, ServiceLocator
from fourcorner.application.ports import (
    CertificateInspector,
    DirectoryPublisher,
    KeySealer,
    SmpRegistrar,
)
from fourcorner.application.storage import UnitOfWork, UnitOfWorkFactory
from fourcorner.domain.catalogue import Catalogue

# the waits before the directory is asked again for an OUTDATED card, the last repeated: the
# one place they are written (FOURCORNER_DIRECTORY_RETRY_DELAYS's default and the API's
# description follow it; test_docs checks that the guides cite the same figures)
DIRECTORY_DELAYS = (timedelta(seconds=30), timedelta(minutes=5), timedelta(minutes=30))
# the unanswered attempts after which the workers stop asking for an OUTDATED card (the
# change's own asking is the first): the 50th is about a day after the change with the
# delays above (FOURCORNER_DIRECTORY_ATTEMPTS's default follows it)
DIRECTORY_ATTEMPTS = 50


@attrs.frozen
class Network:
    """The ports and settings of the network side (SMP, SML, certificates, directory, access
    points), for the use cases that reach the network."""

    smp: SmpRegistrar
    certificates: CertificateInspector
    sealer: KeySealer
    directory: DirectoryPublisher
    ap_host: str  # apUrl = <ap_host>/<orgId>/<apId>
    # the network's SML, where our SMP registers its participants (application.sml)
    locator: ServiceLocator = attrs.field(factory=NoLocator)
    # the waits before the directory is asked again for an OUTDATED card (directory_cards)
    directory_delays: tuple[timedelta, ...] = DIRECTORY_DELAYS
    # the unanswered attempts after which the workers stop asking (directory_cards)
    directory_attempts: int = DIRECTORY_ATTEMPTS


@attrs.frozen
class Context:
    """``uow``: units of work that read and write; ``reader``: units of work that only read,
    possibly from recently committed records kept in memory (``Storage.reader``; ``uow`` when
    not given). Use ``reads()`` for a request that changes nothing; ``stamp``: the storage's
    ``read_stamp``, which tells when what ``reads()`` answered may have changed. ``clock``: now;
    ``clock_ns``: now in nanoseconds since the epoch; ``new_id``: a new random id."""

    uow: UnitOfWorkFactory
    catalogue: Catalogue
    clock: Callable[[], datetime] = attrs.field(kw_only=True)
    clock_ns: Callable[[], int] = attrs.field(kw_only=True)
    new_id: Callable[[], uuid.UUID] = attrs.field(kw_only=True)
    reader: UnitOfWorkFactory | None = None
    stamp: Callable[[], Hashable | None] | None = None

    def reads(self) -> UnitOfWork:
        return (self.reader or self.uow)()

    def read_stamp(self) -> Hashable | None:
        """``Storage.read_stamp``: equal while what ``reads()`` answers stays the same (at most
        ``STAMP_MAX_AGE`` seconds); ``None``: keep nothing."""
        return self.stamp() if self.stamp is not None else None
