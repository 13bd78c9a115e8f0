"""Records the storage tests build by hand."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime

from fourcorner.adapters.system import random_id, system_clock_ns
from fourcorner.application.context import Context
from fourcorner.application.storage import Storage
from fourcorner.domain.catalogue import Catalogue
from fourcorner.domain.certificates import Certificate, CertificateEnvironment, Service
from fourcorner.domain.network_services import Environment
from fourcorner.domain.organisation import Organisation, UserRef
from fourcorner.domain.roles import Role
from fourcorner.domain.sml import LocatorOperation, LocatorTask
from fourcorner.domain.user import User
from fourcorner.domain.webhook import Webhook

T0 = datetime(2026, 1, 2, 10, 0, tzinfo=UTC)


def user(ident: str = "u-1", name: str = "Ann") -> User:
    me = UserRef(ident)
    return User(
        id=ident,
        email=f"{ident}@example.com",
        name=name,
        role=Role.USER,
        terms_accepted_at=T0,
        created_at=T0,
        created_by=me,
        last_modified_at=T0,
        last_modified_by=me,
    )


def organisation(ident: uuid.UUID | None = None, by: str = "u") -> Organisation:
    """ACME, of Sweden, made by ``by`` at ``T0``."""
    return Organisation(
        id=ident or uuid.uuid4(),
        legal_name="ACME",
        country_code="SE",
        legal_identifier="2120000787",
        legal_identifier_code="SE:ORGNR",
        legal_key="0007:2120000787",
        created_at=T0,
        created_by=UserRef(by),
        last_modified_at=T0,
        last_modified_by=UserRef(by),
    )


def certificate(ident: uuid.UUID, sealed: str) -> Certificate:
    """A certificate record (no certificate in it) whose private key is ``sealed``."""
    return Certificate(
        id=ident,
        org_id=uuid.UUID(int=1),
        name=f"cert {ident}",
        service=Service.AP,
        environment=CertificateEnvironment.TEST,
        transport_profile="peppol-transport-as4-v2_0",
        cert_pem="",
        ca_chain_pem="",
        valid_from=T0,
        valid_until=T0,
        subject="CN=POP000001",
        fingerprint=ident.hex,
        sealed_key=sealed,
        created_at=T0,
        created_by=UserRef("u"),
        last_modified_at=T0,
        last_modified_by=UserRef("u"),
    )


def webhook(ident: uuid.UUID, sealed: str) -> Webhook:
    """A webhook whose signing secret is ``sealed``."""
    return Webhook(
        id=ident,
        org_id=uuid.UUID(int=1),
        url="https://hooks.example.com/0",
        events=("webhook.test",),
        is_enabled=True,
        sealed_secret=sealed,
        created_at=T0,
        created_by=UserRef("u"),
        last_modified_at=T0,
        last_modified_by=UserRef("u"),
    )


def locator_task(ident: uuid.UUID, sealed: str) -> LocatorTask:
    """An SML task: a migration with the key ``sealed``, or (empty) a creation."""
    return LocatorTask(
        id=ident,
        environment=Environment.TEST,
        operation=LocatorOperation.MIGRATE if sealed else LocatorOperation.CREATE,
        subject=f"0088:{ident.int % 10**13:013d}",
        created_at=T0,
        last_modified_at=T0,
        sealed_key=sealed,
    )


def context(storage: Storage, clock: Callable[[], datetime]) -> Context:
    """The use cases' context over ``storage``, with an empty catalogue."""
    return Context(
        uow=storage.unit_of_work,
        reader=storage.reader,
        catalogue=Catalogue("test", (), (), (), ()),
        clock=clock,
        clock_ns=system_clock_ns,
        new_id=random_id,
    )
