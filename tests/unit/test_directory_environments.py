"""The directory of each environment, on the in-memory adapters and without HTTP: the same
identifier as a TEST and as a PROD participant publishes its card to the TEST and to the PROD
directory, and removing one withdraws its card from its own environment's directory only. A
change of the card the SMP serves (the participant's card, the organisation's fields that feed
it) asks the directory to index it again; one that leaves the card as it was asks nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from directory_world import World, directory_world, gln, module_pki
from fourcorner.domain.errors import ServiceUnavailable
from fourcorner.domain.network_services import Environment
from fourcorner.domain.participant import BusinessCard, Participant, PublicationState
from fourcorner.entrypoints.config import Settings

TEST, PROD = Environment.TEST, Environment.PROD


@pytest.fixture(scope="module")
def pki_dir(tmp_path_factory: Any) -> Path:
    return module_pki(tmp_path_factory)


@pytest.fixture
async def world(tmp_path: Path, pki_dir: Path) -> AsyncIterator[World]:
    """A whitelabel organisation (it uses the operator's TEST and PROD SMPs and access
    points) on ``memory://``, the directory of each environment in memory."""
    (tmp_path / "pki").symlink_to(pki_dir, target_is_directory=True)
    settings = Settings(data_dir=tmp_path, database_url="memory://").check()
    async with directory_world(settings) as made:
        yield made


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


# --- a changed card is indexed again ---------------------------------------------------------

CARD = BusinessCard(legal_name="ACME", country_code="SE")


async def published_one(world: World, n: int, env: Environment = TEST) -> Participant:
    made = await world.participant(f"0088:{gln(n)}", env, "ACME")
    await world.publish(made)
    assert world.directory.published == [(env, made.identifier_key)]
    return await world.get(made)


async def test_a_changed_card_is_indexed_again_in_its_own_environments_directory(world):
    made = await published_one(world, 74, PROD)
    first = made.directory.published_at
    card = BusinessCard(legal_name="ACME Nordic", country_code="NO", website="https://acme.no")
    after = await world.update(made, business_card=card)
    assert world.directory.published == [(PROD, made.identifier_key)] * 2
    assert after.directory.state is PublicationState.PUBLISHED and after.directory.reason is None
    assert first is not None and after.directory.published_at > first
    assert await world.get(made) == after
    served = await world.served(made)
    assert served is not None and (served.name, served.country_code) == ("ACME Nordic", "NO")


@pytest.mark.parametrize(
    "changes",
    [
        {"business_card": CARD},  # the same card again
        {"name": "ACME, renamed"},  # the card has its own legal name
        {"transport_profile": "net-transport-as4-v2_0"},
    ],
    ids=["same-card", "name", "transport-profile"],
)
async def test_a_change_that_leaves_the_card_as_it_was_asks_nothing(world, changes):
    made = await published_one(world, 75)
    before = await world.served(made)
    after = await world.update(made, **changes)
    assert await world.served(made) == before
    assert world.directory.published == [(TEST, made.identifier_key)]
    assert after.directory == made.directory  # PUBLISHED, as it was


async def test_a_card_never_published_is_not_indexed_when_it_changes(world):
    made = await world.participant(f"0088:{gln(76)}", TEST, "ACME")
    after = await world.update(
        made, business_card=BusinessCard(legal_name="Other", country_code="SE")
    )
    assert (await world.served(made)).name == "Other"
    assert world.directory.published == []
    assert after.directory.state is PublicationState.NOT_REQUESTED


async def test_the_organisations_fields_that_feed_the_card_have_it_indexed_again(world):
    """A card without a legal name, country or website shows the organisation's: changing
    those changes the served card and has it indexed again; a participant whose own card
    holds all three is served the same card and not indexed again; a field of the
    organisation the card does not show changes nothing."""
    bare = await world.participant(f"0088:{gln(77)}", TEST, "ACME")
    bare = await world.update(bare, business_card=BusinessCard(tax_identifier="SE556036079301"))
    full = await world.participant(f"0088:{gln(78)}", PROD, "ACME")
    own = BusinessCard(legal_name="ACME", country_code="SE", website="https://acme.se")
    full = await world.update(full, business_card=own)
    await world.publish(bare, full)
    published = list(world.directory.published)
    await world.update_org(short_name="ACME")
    assert world.directory.published == published
    for field, value in (
        ("legal_name", "ACME Holding AB"),
        ("country_code", "NO"),
        ("website", "https://acme.example"),
    ):
        await world.update_org(**{field: value})
        published.append((TEST, bare.identifier_key))
        assert world.directory.published == published, field
        assert (await world.get(bare)).directory.state is PublicationState.PUBLISHED
    served = await world.served(bare)
    assert (served.name, served.country_code, served.websites) == (
        "ACME Holding AB",
        "NO",
        ("https://acme.example",),
    )
    assert (await world.served(full)).name == "ACME"
    # the same values again change nothing
    await world.update_org(legal_name="ACME Holding AB", country_code="NO")
    assert world.directory.published == published


async def test_a_directory_that_does_not_answer_leaves_the_card_outdated_until_asked_again(
    world,
):
    """As a first publication that fails: the change is made (the SMP serves the new card),
    the participant's directory publication says OUTDATED with what the directory said, and
    request-pd-publish asks again (503 while the directory still does not answer). An
    outdated card is withdrawn when the participant is deleted."""
    made = await published_one(world, 79)
    world.directory.down = "the directory answered 503"
    after = await world.update(
        made, business_card=BusinessCard(legal_name="New", country_code="SE")
    )
    assert (await world.served(made)).name == "New"
    state = after.directory
    assert (state.state, state.reason) == (PublicationState.OUTDATED, "the directory answered 503")
    assert state.changed_at is not None and state.published_at == made.directory.published_at
    assert await world.get(made) == after
    with pytest.raises(ServiceUnavailable):
        await world.publish(made)
    assert (await world.get(made)).directory == state
    # a further change while it is down keeps it outdated, since the newer change
    again = await world.update(
        made, business_card=BusinessCard(legal_name="Newer", country_code="SE")
    )
    assert again.directory.state is PublicationState.OUTDATED
    assert again.directory.changed_at > state.changed_at
    world.directory.down = None
    await world.publish(made)
    now = (await world.get(made)).directory
    assert (now.state, now.reason, now.changed_at) == (PublicationState.PUBLISHED, None, None)
    assert world.directory.published == [(TEST, made.identifier_key)] * 2
    # outdated again, then deleted: its card is withdrawn
    world.directory.down = "the directory cannot be reached"
    await world.update(made, business_card=BusinessCard(legal_name="Last", country_code="SE"))
    world.directory.down = None
    await world.delete(made)
    assert world.directory.withdrawn == [(TEST, made.identifier_key)]


async def test_a_card_changed_while_request_pd_publish_asks_stays_outdated(world):
    """The directory read the card before a change that could not be announced: the
    publication that asked it is not recorded over the change's OUTDATED."""
    made = await published_one(world, 80)
    asked = world.directory.publish

    async def meddling(environment: Environment, participant: str) -> None:
        await asked(environment, participant)
        world.directory.publish = asked  # once
        world.directory.down = "the directory answered 502"
        card = BusinessCard(legal_name="Changed meanwhile", country_code="SE")
        await world.update(made, business_card=card)
        world.directory.down = None

    world.directory.publish = meddling  # type: ignore[method-assign]
    await world.publish(made)
    now = (await world.get(made)).directory
    assert (now.state, now.reason) == (PublicationState.OUTDATED, "the directory answered 502")
    await world.publish(made)
    assert (await world.get(made)).directory.state is PublicationState.PUBLISHED
