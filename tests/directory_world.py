"""A whitelabel organisation with participants whose business cards go to the directory of
each environment, in memory (``InMemoryDirectory``), on the storage of the given settings:
the world of the directory's tests (``test_directory_environments``, ``test_directory_retries``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs

from fourcorner.adapters.memory.smp import InMemoryDirectory
from fourcorner.adapters.pki import ensure_test_pki
from fourcorner.application import (
    operator_setup,
    organisations,
    participants,
    services_to_use,
    users,
)
from fourcorner.application.access import Principal
from fourcorner.application.identity import Identity
from fourcorner.domain.checkdigits import gs1_check_digit
from fourcorner.domain.network_services import Environment
from fourcorner.domain.organisation import Contact, ContactType, Mode
from fourcorner.domain.participant import BusinessCard, Participant
from fourcorner.domain.smp import EntityCard
from fourcorner.entrypoints.config import Settings
from fourcorner.entrypoints.container import build_container, resolve


def module_pki(tmp_path_factory: Any) -> Path:
    """A test PKI for a module's tests (link it into each data dir): RSA keys are slow to
    make."""
    data = tmp_path_factory.mktemp("pki")
    ensure_test_pki(data)
    return Path(data / "pki")


def gln(n: int) -> str:
    payload = f"730001{n:06d}"
    return payload + str(gs1_check_digit(payload))


@attrs.define
class World:
    ctx: Any
    net: Any
    owner: Principal
    org_id: Any
    directory: InMemoryDirectory
    container: Any = None

    async def participant(self, ident: str, env: Environment, legal_name: str) -> Participant:
        smps = (await services_to_use.smps_to_use(self.ctx, self.owner, self.org_id)).items
        aps = (await services_to_use.aps_to_use(self.ctx, self.owner, self.org_id)).items
        smp = next(s for s in smps if s.environment is env)
        ap = next(a for a in aps if a.environment is env)
        cmd = participants.CreateParticipant(
            f"{legal_name} ({env.value})",
            ident,
            smp.id,
            ap.id,
            business_card=BusinessCard(legal_name=legal_name, country_code="SE"),
        )
        made = await participants.create(self.ctx, self.net, self.owner, self.org_id, cmd)
        assert made.environment is env
        return made

    async def publish(self, *made: Participant) -> None:
        ids = [p.id for p in made]
        await participants.request_publication(self.ctx, self.net, self.owner, self.org_id, ids)

    async def delete(self, *made: Participant) -> None:
        ids = [p.id for p in made]
        await participants.delete_many(self.ctx, self.net, self.owner, self.org_id, ids)

    async def get(self, made: Participant) -> Participant:
        return await participants.get(self.ctx, self.owner, self.org_id, made.id)

    async def update(self, made: Participant, **changes: Any) -> Participant:
        cmd = participants.UpdateParticipant(**changes)
        return await participants.update(self.ctx, self.net, self.owner, self.org_id, made.id, cmd)

    async def update_org(self, **changes: Any) -> None:
        cmd = organisations.UpdateOrganisation(**changes)
        await organisations.update(self.ctx, self.net, self.owner, self.org_id, cmd)

    async def served(self, made: Participant) -> EntityCard | None:
        """The business card the participant's SMP serves."""
        async with self.ctx.uow() as uow:
            reg = await self.net.smp.lookup(uow, made.environment, made.identifier_key)
        return reg.business_card if reg is not None else None


@asynccontextmanager
async def directory_world(settings: Settings, **overrides: Any) -> AsyncIterator[World]:
    """The world on ``settings`` (its data dir holding the test PKI), the directory of each
    environment in memory; ``overrides``: more container providers to replace."""
    directory = InMemoryDirectory()
    container = build_container(settings, directory=directory, **overrides)
    await container.init_resources()
    try:
        ctx, net = await resolve(container.context), await resolve(container.network)
        await operator_setup.ensure_operator(ctx, net, container.operator_environments())
        root = Principal(
            user=await users.sign_in(ctx, Identity("root", "r@x.com", superadmin=True))
        )
        owner = Principal(user=await users.sign_in(ctx, Identity("owner", "o@x.com")))
        business = Contact(name="B", email="b@x.com", contact_type=ContactType.BUSINESS)
        org = await organisations.create(
            ctx,
            owner,
            organisations.CreateOrganisation(
                "2120000787", "ACME AB", "SE", "SE:ORGNR", contacts=(business,)
            ),
        )
        wish = organisations.UpdateOrganisation(mode_change_request=Mode.WHITELABEL)
        await organisations.update(ctx, net, owner, org.id, wish)
        grant = organisations.UpdateOrganisation(organisation_mode=Mode.WHITELABEL)
        await organisations.update(ctx, net, root, org.id, grant)
        yield World(ctx, net, owner, org.id, directory, container)
    finally:
        await container.shutdown_resources()
