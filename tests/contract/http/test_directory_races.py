"""The directory's copy of a business card when a participant's deletion races the indexing
of its card (``request-pd-publish``, or a changed card asked for again): whatever the
interleaving, a participant that is gone has no card left in its environment's directory.
``participants.delete_many`` deletes only while the publication it read (and withdrew) is
still the one held, and whoever asked the directory to index a card withdraws it when it
then finds the participant gone (``directory_cards.withdraw_left``). A participant made again
with that identifier and published as that withdrawal is made keeps its card: the withdrawal
marks it, and its card is indexed again.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from directory_indexer import SCHEME
from fourcorner.application import directory_cards
from fourcorner.application.collections import PARTICIPANTS
from fourcorner.domain.participant import Participant
from fourcorner.entrypoints.container import resolve

from .stored import record
from .test_directory_environments import BACKENDS, served
from .test_participants import BOB, gln, participant, whitelabel

ROUNDS = 20


# reproduced on PostgreSQL, where the two requests' units of work overlap (with SQLite's,
# one at a time, the interleaving is rarer)
@pytest.mark.parametrize("backend", [pytest.param("postgres", marks=pytest.mark.postgres)])
async def test_a_participant_deleted_while_its_card_is_published_has_no_card_left(
    start_api: Any, aiohttp_server: Any, backend: str
) -> None:
    api, indexers = await served(start_api, aiohttp_server, backend)
    org = await whitelabel(api, BOB, legal_id="5560360793")
    base = f"/orgs/{org['id']}/participants"
    left = []
    for n in range(ROUNDS):
        ident = f"0088:{gln(990 + n)}"
        status, p = await participant(api, org["id"], ident, who=BOB)
        assert status == 201, p
        if n % 2:  # in the directory already: the deletion withdraws it
            status, body = await api.call(
                "POST", f"{base}/request-pd-publish", as_=BOB, json={"ids": [p["id"]]}
            )
            assert status == 200, body
        (published, _), (deleted, body) = await asyncio.gather(
            api.call("POST", f"{base}/request-pd-publish", as_=BOB, json={"ids": [p["id"]]}),
            api.call("POST", f"{base}/batch-delete", as_=BOB, json={"ids": [p["id"]]}),
        )
        assert deleted == 200, (n, body)
        if f"{SCHEME}::{ident}" in indexers["test"].cards:
            left.append((n, published))
    assert not left, f"cards left of deleted participants (round, publish answer): {left}"


async def _published(api: Any, org_id: str, n: int) -> tuple[str, str]:
    """A participant whose card is in the TEST directory: (its id, its card's key there)."""
    ident = f"0088:{gln(n)}"
    status, p = await participant(api, org_id, ident, who=BOB)
    assert status == 201, p
    publish = f"/orgs/{org_id}/participants/request-pd-publish"
    status, body = await api.call("POST", publish, as_=BOB, json={"ids": [p["id"]]})
    assert status == 200, body
    return p["id"], f"{SCHEME}::{ident}"


async def _read_then_deleted(api: Any, org_id: str, n: int) -> tuple[Participant, str]:
    """A published participant as read before its deletion, and its card's key."""
    pid, full = await _published(api, org_id, n)
    read: Participant = await record(api, PARTICIPANTS, pid)
    delete = f"/orgs/{org_id}/participants/batch-delete"
    status, body = await api.call("POST", delete, as_=BOB, json={"ids": [pid]})
    assert status == 200, body
    return read, full


async def _indexing(start_api: Any, aiohttp_server: Any, backend: str) -> tuple[Any, ...]:
    """The service, an organisation's id, the context, the network's ports, and the TEST
    directory, which indexes what it is asked for, as it would before the SMP entry went."""
    api, indexers = await served(start_api, aiohttp_server, backend)
    org_id = (await whitelabel(api, BOB, legal_id="5560360793"))["id"]
    ctx = await resolve(api.container.context)
    net = await resolve(api.container.network)
    indexers["test"].smp = ""
    return api, org_id, ctx, net, indexers["test"]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_card_indexed_again_for_a_participant_deleted_meanwhile_is_withdrawn(
    start_api: Any, aiohttp_server: Any, backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    """``directory_cards.ask`` (a changed card indexed again, by the change or a worker) of a
    participant read before its deletion: the directory indexes the card after the deletion
    withdrew it, so it is withdrawn again. A card that a participant made since with the same
    identifier asked for stays; a directory that does not answer keeps it, said in an error."""
    api, org_id, ctx, net, test = await _indexing(start_api, aiohttp_server, backend)
    p, full = await _read_then_deleted(api, org_id, 1100)
    assert full not in test.cards
    assert await directory_cards.ask(ctx, net, p) is None
    assert test.calls[-2:] == [("PUT", full), ("DELETE", full)] and full not in test.cards
    # made again and published: that participant's card stays
    p, full = await _read_then_deleted(api, org_id, 1101)
    _, again = await _published(api, org_id, 1101)
    assert again == full
    assert await directory_cards.ask(ctx, net, p) is None
    assert test.calls[-1] == ("PUT", full) and full in test.cards
    # the directory does not answer: the card may stay, and an error says so
    p, full = await _read_then_deleted(api, org_id, 1102)
    test.refuse = 503
    with caplog.at_level(logging.ERROR, logger="fourcorner.directory"):
        assert await directory_cards.ask(ctx, net, p) is None
    assert test.calls[-1] == ("DELETE", full)
    [said] = [r for r in caplog.records if getattr(r, "event", "") == "directory.withdraw"]
    assert said.participant == full.removeprefix(f"{SCHEME}::")  # type: ignore[attr-defined]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_card_published_while_its_participant_is_deleted_is_withdrawn_again(
    start_api: Any, aiohttp_server: Any, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """batch-delete withdraws the card, then deletes the participant, held: a request-pd-publish
    that indexed the card again and recorded it in between is seen then, and the card is
    withdrawn again before the deletion. Published again after each withdrawal, the deletion
    gives up (503) and deletes nothing; repeated, it goes through."""
    api, indexers = await served(start_api, aiohttp_server, backend)
    org_id = (await whitelabel(api, BOB, legal_id="5560360793"))["id"]
    net = await resolve(api.container.network)
    withdraw, publishing = net.directory.withdraw, [0]

    async def then_published(environment: Any, participant: str) -> None:
        await withdraw(environment, participant)
        if publishing[0]:
            publishing[0] -= 1
            publish = f"/orgs/{org_id}/participants/request-pd-publish"
            status, body = await api.call("POST", publish, as_=BOB, json={"ids": [pid]})
            assert status == 200, body

    monkeypatch.setattr(net.directory, "withdraw", then_published)
    delete = f"/orgs/{org_id}/participants/batch-delete"
    test = indexers["test"]
    pid, full = await _published(api, org_id, 1110)
    publishing[0] = 1
    status, body = await api.call("POST", delete, as_=BOB, json={"ids": [pid]})
    assert status == 200, body
    assert [m for m, _ in test.calls[-3:]] == ["DELETE", "PUT", "DELETE"]
    assert full not in test.cards
    pid, full = await _published(api, org_id, 1111)
    publishing[0] = 3
    status, body = await api.call("POST", delete, as_=BOB, json={"ids": [pid]})
    assert status == 503 and body["code"] == "AT-1507", body
    assert "published again" in body["error"] and full in test.cards
    status, body = await api.call("POST", delete, as_=BOB, json={"ids": [pid]})
    assert status == 200 and full not in test.cards


async def _state(api: Any, org_id: str, pid: str) -> str:
    status, got = await api.call("GET", f"/orgs/{org_id}/participants/{pid}", as_=BOB)
    assert status == 200, got
    return str(got["directory"]["state"])


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_card_published_again_just_before_the_old_one_is_withdrawn_is_indexed_again(
    start_api: Any, aiohttp_server: Any, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``withdraw_left`` finds no participant of the identifier in the directory, then
    withdraws: a participant made again and published in between (here, as the withdrawal
    starts) loses its card to the withdrawal, and has it indexed again."""
    api, org_id, ctx, net, test = await _indexing(start_api, aiohttp_server, backend)
    p, full = await _read_then_deleted(api, org_id, 1120)
    withdraw, made = net.directory.withdraw, []

    async def published_then_withdrawn(environment: Any, participant: str) -> None:
        if not made:
            made.append((await _published(api, org_id, 1120))[0])
        await withdraw(environment, participant)

    monkeypatch.setattr(net.directory, "withdraw", published_then_withdrawn)
    assert await directory_cards.ask(ctx, net, p) is None
    assert [m for m, _ in test.calls[-4:]] == ["PUT", "PUT", "DELETE", "PUT"]
    assert full in test.cards
    assert await _state(api, org_id, made[0]) == "PUBLISHED"


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_card_indexed_but_not_yet_recorded_when_the_old_one_is_withdrawn_is_indexed_again(
    start_api: Any, aiohttp_server: Any, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request-pd-publish of a participant made again has the directory index its card,
    then, before it records that, ``withdraw_left`` of the deleted participant of the same
    identifier withdraws it: the request finds the revision moved on, records the card as
    outdated and has it indexed again."""
    api, org_id, ctx, net, test = await _indexing(start_api, aiohttp_server, backend)
    p, full = await _read_then_deleted(api, org_id, 1121)
    status, made = await participant(api, org_id, p.participant_identifier, who=BOB)
    assert status == 201, made
    publish, armed = net.directory.publish, [True]

    async def indexed_then_withdrawn(environment: Any, participant: str) -> None:
        await publish(environment, participant)
        if armed[0]:
            armed[0] = False
            await directory_cards.withdraw_left(ctx, net, [p])

    monkeypatch.setattr(net.directory, "publish", indexed_then_withdrawn)
    path = f"/orgs/{org_id}/participants/request-pd-publish"
    status, body = await api.call("POST", path, as_=BOB, json={"ids": [made["id"]]})
    assert status == 200, body
    assert [m for m, _ in test.calls[-3:]] == ["PUT", "DELETE", "PUT"]
    assert full in test.cards
    assert await _state(api, org_id, made["id"]) == "PUBLISHED"


# reproduced on PostgreSQL, where the requests' units of work overlap
@pytest.mark.parametrize("backend", [pytest.param("postgres", marks=pytest.mark.postgres)])
async def test_a_participant_made_again_while_the_old_card_is_withdrawn_keeps_its_own(
    start_api: Any, aiohttp_server: Any, backend: str
) -> None:
    """Round after round, a participant read before its deletion has its card indexed again
    (``directory_cards.ask``, which withdraws it once it finds the participant gone) while a
    participant of the same identifier is made again and published: the card is in the
    directory exactly when the new participant's publication says so."""
    api, org_id, ctx, net, test = await _indexing(start_api, aiohttp_server, backend)
    publish = f"/orgs/{org_id}/participants/request-pd-publish"
    wrong = []
    for n in range(ROUNDS * 2):
        p, full = await _read_then_deleted(api, org_id, 1200 + n)

        async def made_again(n: int = n, p: Participant = p) -> str:
            await asyncio.sleep((n % 5) / 500)  # the interleavings spread over the rounds
            status, made = await participant(api, org_id, p.participant_identifier, who=BOB)
            assert status == 201, made
            status, body = await api.call("POST", publish, as_=BOB, json={"ids": [made["id"]]})
            assert status == 200, body
            return str(made["id"])

        _, pid = await asyncio.gather(directory_cards.ask(ctx, net, p), made_again())
        state = await _state(api, org_id, pid)
        if (state != "NOT_REQUESTED") != (full in test.cards):
            wrong.append((n, state, test.calls[-4:]))
    assert not wrong, f"publication and directory disagree (round, state, calls): {wrong}"
