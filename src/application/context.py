"""What every use case needs: storage, the reference data, time, ids and the network ports."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime

import attrs

from application.ports import CertificateInspector, DirectoryPublisher, KeySealer, SmpRegistrar
from application.storage import UnitOfWorkFactory
from domain.catalogue import Catalogue


def system_clock() -> datetime:
    return datetime.now(UTC)


@attrs.frozen
class Network:
    """The ports and settings of the network side (SMP, certificates, access points)."""

    smp: SmpRegistrar
    certificates: CertificateInspector
    sealer: KeySealer
    directory: DirectoryPublisher
    ap_host: str  # apUrl = <ap_host>/<orgId>/<apId>


@attrs.frozen
class Context:
    uow: UnitOfWorkFactory
    catalogue: Catalogue
    network: Network | None = None
    clock: Callable[[], datetime] = system_clock
    new_id: Callable[[], uuid.UUID] = uuid.uuid4

    @property
    def net(self) -> Network:
        assert self.network is not None, "the container wires the network ports"
        return self.network
