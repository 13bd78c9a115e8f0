"""The directory of each environment, on the in-memory adapters and without HTTP: the same
identifier as a TEST and as a PROD participant publishes its card to the TEST and to the PROD
directory, and removing one withdraws its card from its own environment's directory only."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import pytest

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
from fourcorner.domain.participant import BusinessCard, Participant, PublicationState
from fourcorner.entrypoints.config import Settings
from fourcorner.entrypoints.container import build_container, resolve

TEST, PROD = Environment.TEST, Environment.PROD


def gln(n: int) -> str:
    payload = f"730001{n:06d}"
    return payload + str(gs1_check_digit(payload))


@pytest.fixture(scope="module")
def pki_dir(tmp_path_factory: Any) -> Path:
    """One test PKI for the module: RSA keys are slow to make."""
    data = tmp_path_factory.mktemp("pki")
    ensure_test_pki(data)
    return data / "pki"


@attrs.define
class World:
    ctx: Any
    net: Any
    owner: Principal
    org_id: Any
    directory: InMemoryDirectory

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


@pytest.fixture
async def world(tmp_path: Path, pki_dir: Path) -> AsyncIterator[World]:
    """A whitelabel organisation (it uses the operator's TEST and PROD SMPs and access
    points) on ``memory://``, the directory of each environment in memory."""
    (tmp_path / "pki").symlink_to(pki_dir, target_is_directory=True)
    directory = InMemoryDirectory()
    container = build_container(
        Settings(data_dir=tmp_path, database_url="memory://").check(), directory=directory
    )
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
        await organisations.update(ctx, owner, org.id, wish)
        grant = organisations.UpdateOrganisation(organisation_mode=Mode.WHITELABEL)
        await organisations.update(ctx, root, org.id, grant)
        yield World(ctx, net, owner, org.id, directory)
    finally:
        await container.shutdown_resources()


async def test_the_same_identifier_publishes_to_the_directory_of_each_environment(world):
    ident = f"0088:{gln(71)}"
    in_test = await world.participant(ident, TEST, "ACME test")
    in_prod = await world.participant(ident, PROD, "ACME")
    await world.publish(in_test)
    assert world.directory.published == [(TEST, ident)]
    assert (world.directory.cards(TEST), world.directory.cards(PROD)) == ({ident}, set())
    assert (await world.get(in_test)).directory.state is PublicationState.PUBLISHED
    assert (await world.get(in_prod)).directory.state is PublicationState.NOT_REQUESTED
    await world.publish(in_prod)
    assert world.directory.published == [(TEST, ident), (PROD, ident)]
    assert world.directory.cards(TEST) == world.directory.cards(PROD) == {ident}


@pytest.mark.parametrize("removed", [TEST, PROD])
async def test_removing_one_withdraws_its_card_only_from_its_own_directory(world, removed):
    ident = f"0088:{gln(72)}"
    made = {env: await world.participant(ident, env, f"ACME {env.value}") for env in (TEST, PROD)}
    await world.publish(made[TEST], made[PROD])
    await world.delete(made[removed])
    kept = PROD if removed is TEST else TEST
    assert world.directory.withdrawn == [(removed, ident)]
    assert (world.directory.cards(removed), world.directory.cards(kept)) == (set(), {ident})
    assert (await world.get(made[kept])).directory.state is PublicationState.PUBLISHED
    # the kept one's card is withdrawn from its own directory when it goes in turn
    await world.delete(made[kept])
    assert world.directory.withdrawn == [(removed, ident), (kept, ident)]
    assert world.directory.cards(TEST) == world.directory.cards(PROD) == set()


async def test_a_card_never_published_is_not_withdrawn(world):
    ident = f"0088:{gln(73)}"
    published = await world.participant(ident, PROD, "ACME")
    unpublished = await world.participant(ident, TEST, "ACME test")
    await world.publish(published)
    await world.delete(unpublished)
    assert world.directory.withdrawn == []
    assert world.directory.cards(PROD) == {ident}
