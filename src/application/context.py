"""What every use case needs: storage, the reference data, time, ids and the network ports.

Time and ids are ports like the others: the use cases read the time from ``clock`` (and
``clock_ns``, to the nanosecond) and make ids with ``new_id``, never from the system
themselves, so a test decides both; the container gives the system's (``adapters.system``)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Hashable
from datetime import datetime

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


@attrs.frozen
class Network:
    """The ports and settings of the network side (SMP, certificates, access points)."""

    smp: SmpRegistrar
    certificates: CertificateInspector
    sealer: KeySealer
    directory: DirectoryPublisher
    ap_host: str  # apUrl = <ap_host>/<orgId>/<apId>
    # the network's SML, where our SMP registers its participants (application.sml)
    locator: ServiceLocator = attrs.field(factory=NoLocator)


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
    network: Network | None = None
    reader: UnitOfWorkFactory | None = None
    stamp: Callable[[], Hashable | None] | None = None

    def reads(self) -> UnitOfWork:
        return (self.reader or self.uow)()

    def read_stamp(self) -> Hashable | None:
        """``Storage.read_stamp``: equal while what ``reads()`` answers stays the same (at most
        ``STAMP_MAX_AGE`` seconds); ``None``: keep nothing."""
        return self.stamp() if self.stamp is not None else None

    @property
    def net(self) -> Network:
        assert self.network is not None, "the container wires the network ports"
        return self.network
