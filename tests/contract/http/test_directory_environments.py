"""Business cards in the directory of each environment, over HTTP end to end: the service
with FOURCORNER_DIRECTORY_URL_TEST and _PROD set to two test indexers on 127.0.0.1, each
reading the cards from its own environment's SMP of this very service (as the network's
directory reads them from the participant's SMP)."""

from __future__ import annotations

import asyncio
import urllib.parse
from typing import Any

import pytest
from lxml import etree

from directory_indexer import PATH, SCHEME, Indexer

from .conftest import free_port
from .test_participants import BOB, gln, participant, whitelabel

BC = "http://www.peppol.eu/schema/pd/businesscard/20180621/"
BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def legal_name(card: bytes) -> str:
    return etree.fromstring(card).findtext(f".//{{{BC}}}BusinessEntity/{{{BC}}}Name")


async def served(
    start_api: Any, aiohttp_server: Any, backend: str
) -> tuple[Any, dict[str, Indexer]]:
    """The service on a port known in advance, and the directory of each environment."""
    port = free_port()
    indexers, urls = {}, {}
    for env in ("test", "prod"):
        indexers[env] = Indexer(smp=f"http://127.0.0.1:{port}/smp/{env}")
        urls[f"directory_url_{env}"] = str(
            (await aiohttp_server(indexers[env].app())).make_url(PATH)
        )
    api = await start_api(backend, public=True, port=port, **urls)
    return api, indexers


@pytest.mark.parametrize("backend", BACKENDS)
async def test_one_identifier_has_a_card_in_each_environments_directory(
    start_api, aiohttp_server, backend
) -> None:
    api, indexers = await served(start_api, aiohttp_server, backend)
    org = await whitelabel(api, BOB, legal_id="5560360793")
    ident = f"0088:{gln(81)}"
    full = f"{SCHEME}::{ident}"
    made = {}
    for env, name in (("TEST", "ACME test"), ("PROD", "ACME")):
        card = {"legalName": name, "countryCode": "SE"}
        status, p = await participant(api, org["id"], ident, env=env, who=BOB, businessCard=card)
        assert status == 201 and p["environment"] == env, p
        made[env] = p["id"]
    # each environment's SMP serves its own participant's card
    pid = urllib.parse.quote(full, safe="")
    for env, name in (("test", "ACME test"), ("prod", "ACME")):
        resp = await api.client.get(f"/smp/{env}/businesscard/{pid}")
        assert resp.status == 200 and legal_name(await resp.read()) == name, env
    publish = f"/orgs/{org['id']}/participants/request-pd-publish"
    status, body = await api.call("POST", publish, as_=BOB, json={"ids": [made["TEST"]]})
    assert status == 200 and body == {"ids": [made["TEST"]]}, body
    assert (indexers["test"].calls, indexers["prod"].calls) == ([("PUT", full)], [])
    status, body = await api.call("POST", publish, as_=BOB, json={"ids": [made["PROD"]]})
    assert status == 200, body
    assert indexers["prod"].calls == [("PUT", full)]
    # each directory read the card of its own environment's SMP
    assert legal_name(indexers["test"].cards[full]) == "ACME test"
    assert legal_name(indexers["prod"].cards[full]) == "ACME"
    for env in ("TEST", "PROD"):
        _, got = await api.call("GET", f"/orgs/{org['id']}/participants/{made[env]}", as_=BOB)
        assert got["directory"]["state"] == "PUBLISHED", got
    # removing the TEST participant withdraws its card from the TEST directory only
    delete = f"/orgs/{org['id']}/participants/batch-delete"
    status, body = await api.call("POST", delete, as_=BOB, json={"ids": [made["TEST"]]})
    assert status == 200, body
    assert indexers["test"].calls[-1] == ("DELETE", full) and full not in indexers["test"].cards
    assert [m for m, _ in indexers["prod"].calls] == ["PUT"] and full in indexers["prod"].cards
    assert (await api.client.get(f"/smp/test/businesscard/{pid}")).status == 404
    assert (await api.client.get(f"/smp/prod/businesscard/{pid}")).status == 200
    # published again, the PROD card is read again from the PROD SMP, still there
    status, _ = await api.call("POST", publish, as_=BOB, json={"ids": [made["PROD"]]})
    assert status == 200 and legal_name(indexers["prod"].cards[full]) == "ACME"
    assert [m for m, _ in indexers["test"].calls] == ["PUT", "DELETE"]


async def test_a_directory_that_refuses_the_withdrawal_keeps_the_participant(
    start_api, aiohttp_server
) -> None:
    """Deleting a published participant whose directory does not answer is 503 and deletes
    nothing (its card would stay indexed with no SMP behind it); once the directory is back,
    the deletion goes through. The other environment's directory is not asked."""
    api, indexers = await served(start_api, aiohttp_server, "sqlite")
    org = await whitelabel(api, BOB, legal_id="5560360793")
    ident = f"0088:{gln(82)}"
    full = f"{SCHEME}::{ident}"
    status, p = await participant(api, org["id"], ident, env="PROD", who=BOB)
    assert status == 201, p
    publish = f"/orgs/{org['id']}/participants/request-pd-publish"
    status, _ = await api.call("POST", publish, as_=BOB, json={"ids": [p["id"]]})
    assert status == 200
    indexers["prod"].refuse = 503
    delete = f"/orgs/{org['id']}/participants/batch-delete"
    status, body = await api.call("POST", delete, as_=BOB, json={"ids": [p["id"]]})
    assert status == 503 and body["code"] == "AT-1500", body
    assert "the directory answered 503" in body["error"], body
    status, _ = await api.call("GET", f"/orgs/{org['id']}/participants/{p['id']}", as_=BOB)
    assert status == 200
    pid = urllib.parse.quote(full, safe="")
    assert (await api.client.get(f"/smp/prod/businesscard/{pid}")).status == 200
    indexers["prod"].refuse = None
    status, body = await api.call("POST", delete, as_=BOB, json={"ids": [p["id"]]})
    assert status == 200, body
    assert full not in indexers["prod"].cards and indexers["test"].calls == []


# --- a changed card is indexed again ---------------------------------------------------------


@pytest.fixture(params=BACKENDS)
async def cards(start_api: Any, aiohttp_server: Any, request: Any) -> Any:
    """The service with its two directories (``served``), and a whitelabel organisation."""
    api, indexers = await served(start_api, aiohttp_server, request.param)
    return api, indexers, await whitelabel(api, BOB, legal_id="5560360793")


def entity(card: bytes) -> tuple[str, str]:
    """The name and country of a business card (XML)."""
    root = etree.fromstring(card)
    return legal_name(card), root.findtext(f".//{{{BC}}}CountryCode")


async def published(api: Any, org_id: str, n: int, env: str = "TEST", **card: str) -> Any:
    """A participant of ``env`` with ``card``, its card indexed in the directory."""
    status, p = await participant(
        api, org_id, f"0088:{gln(n)}", env=env, who=BOB, businessCard=card
    )
    assert status == 201, p
    publish = f"/orgs/{org_id}/participants/request-pd-publish"
    status, body = await api.call("POST", publish, as_=BOB, json={"ids": [p["id"]]})
    assert status == 200, body
    return p


async def test_a_changed_card_is_indexed_again_and_an_unchanged_one_is_not(cards) -> None:
    api, indexers, org = cards
    p = await published(api, org["id"], 83, "PROD", legalName="ACME", countryCode="SE")
    full = f"{SCHEME}::{p['participantIdentifier']}"
    url = f"/orgs/{org['id']}/participants/{p['id']}"
    prod = indexers["prod"]
    assert prod.calls == [("PUT", full)] and entity(prod.cards[full]) == ("ACME", "SE")
    # the same card, and fields the card does not show: the directory is not asked
    for body in ({"businessCard": {"legalName": "ACME", "countryCode": "SE"}}, {"name": "x"}):
        status, got = await api.call("PUT", url, as_=BOB, json=body)
        assert status == 200 and got["directory"]["state"] == "PUBLISHED", got
    assert prod.calls == [("PUT", full)]
    # a new card: the PROD directory reads it again from the PROD SMP
    card = {"legalName": "ACME Nordic", "countryCode": "NO"}
    status, got = await api.call("PUT", url, as_=BOB, json={"businessCard": card})
    assert status == 200, got
    assert got["directory"]["state"] == "PUBLISHED" and got["directory"]["reason"] is None
    assert prod.calls == [("PUT", full)] * 2 and indexers["test"].calls == []
    assert entity(prod.cards[full]) == ("ACME Nordic", "NO")
    # the organisation's name feeds a card without one of its own
    q = await published(api, org["id"], 84, "TEST", countryCode="SE")
    q_full = f"{SCHEME}::{q['participantIdentifier']}"
    assert entity(indexers["test"].cards[q_full]) == ("ACME AB", "SE")
    status, _ = await api.call("PUT", f"/orgs/{org['id']}", as_=BOB, json={"shortName": "A"})
    assert status == 200 and len(indexers["test"].calls) == 1
    status, _ = await api.call("PUT", f"/orgs/{org['id']}", as_=BOB, json={"legalName": "Nya AB"})
    assert status == 200
    assert indexers["test"].calls == [("PUT", q_full)] * 2
    assert entity(indexers["test"].cards[q_full]) == ("Nya AB", "SE")
    assert prod.calls == [("PUT", full)] * 2  # its card has a name of its own


async def test_a_directory_that_does_not_answer_leaves_the_card_outdated_and_visible(
    cards,
) -> None:
    """The change is made (the SMP serves the new card) and answered 200; the participant's
    directory publication is OUTDATED with what the directory said; request-pd-publish asks
    again, 503 AT-1500 while the directory still refuses, as for a first publication."""
    api, indexers, org = cards
    p = await published(api, org["id"], 85, legalName="ACME", countryCode="SE")
    full = f"{SCHEME}::{p['participantIdentifier']}"
    url = f"/orgs/{org['id']}/participants/{p['id']}"
    test = indexers["test"]
    test.refuse = 503
    card = {"legalName": "ACME Nordic", "countryCode": "NO"}
    status, got = await api.call("PUT", url, as_=BOB, json={"businessCard": card})
    assert status == 200, got
    directory = got["directory"]
    assert directory["state"] == "OUTDATED", directory
    assert directory["reason"] == "the directory answered 503" and directory["changedAt"]
    status, again = await api.call("GET", url, as_=BOB)
    assert status == 200 and again["directory"] == directory
    pid = urllib.parse.quote(full, safe="")
    resp = await api.client.get(f"/smp/test/businesscard/{pid}")
    assert entity(await resp.read()) == ("ACME Nordic", "NO")
    assert entity(test.cards[full]) == ("ACME", "SE")  # what the directory still shows
    publish = f"/orgs/{org['id']}/participants/request-pd-publish"
    status, body = await api.call("POST", publish, as_=BOB, json={"ids": [p["id"]]})
    assert status == 503 and body["code"] == "AT-1500", body
    assert (await api.call("GET", url, as_=BOB))[1]["directory"] == directory
    test.refuse = None
    status, _ = await api.call("POST", publish, as_=BOB, json={"ids": [p["id"]]})
    assert status == 200
    status, got = await api.call("GET", url, as_=BOB)
    assert got["directory"]["state"] == "PUBLISHED" and got["directory"]["reason"] is None
    assert entity(test.cards[full]) == ("ACME Nordic", "NO")


async def test_concurrent_changes_leave_the_directory_asked_after_the_last(cards) -> None:
    """Rounds of changes at once to a published participant's card and to its organisation's
    name (which its card shows): each answers 200, the publication ends PUBLISHED, and the
    last call the directory received read the card the SMP serves now."""
    api, indexers, org = cards
    p = await published(api, org["id"], 86, countryCode="SE")
    full = f"{SCHEME}::{p['participantIdentifier']}"
    url = f"/orgs/{org['id']}/participants/{p['id']}"
    pid = urllib.parse.quote(full, safe="")
    test = indexers["test"]
    for n in range(12):
        calls = [
            api.call("PUT", url, as_=BOB, json={"businessCard": {"countryCode": country}})
            for country in ("NO", "DK")
        ] + [
            api.call("PUT", f"/orgs/{org['id']}", as_=BOB, json={"legalName": f"R{n}{x} AB"})
            for x in "ab"
        ]
        answers = await asyncio.gather(*calls)
        assert [status for status, _ in answers] == [200] * 4, answers
        _, got = await api.call("GET", url, as_=BOB)
        assert got["directory"]["state"] == "PUBLISHED", (n, got["directory"])
        now = entity(await (await api.client.get(f"/smp/test/businesscard/{pid}")).read())
        last = max(i for i, (method, _) in enumerate(test.calls) if method == "PUT")
        assert entity(test.read[last]) == now, n
        assert now[0] in (f"R{n}a AB", f"R{n}b AB") and now[1] in ("NO", "DK")
