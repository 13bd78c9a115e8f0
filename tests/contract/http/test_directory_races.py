"""The directory's copy of a business card when a participant's deletion races the indexing
of its card (``request-pd-publish``, or a changed card asked for again): whatever the
interleaving, a participant that is gone has no card left in its environment's directory.
``participants.delete_many`` deletes only while the publication it read (and withdrew) is
still the one held, and whoever asked the directory to index a card withdraws it when it
then finds the participant gone (``directory_cards.withdraw_left``).
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


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_card_indexed_again_for_a_participant_deleted_meanwhile_is_withdrawn(
    start_api: Any, aiohttp_server: Any, backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    """``directory_cards.ask`` (a changed card indexed again, by the change or a worker) of a
    participant read before its deletion: the directory indexes the card after the deletion
    withdrew it, so it is withdrawn again. A card that a participant made since with the same
    identifier asked for stays; a directory that does not answer keeps it, said in an error."""
    api, indexers = await served(start_api, aiohttp_server, backend)
    org_id = (await whitelabel(api, BOB, legal_id="5560360793"))["id"]
    ctx = await resolve(api.container.context)
    net = await resolve(api.container.network)
    test = indexers["test"]
    test.smp = ""  # indexes what it is asked for, as it would before the SMP entry went
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
