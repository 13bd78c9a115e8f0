"""Business cards in the directory of each environment, over HTTP end to end: the service
with FOURCORNER_DIRECTORY_URL_TEST and _PROD set to two test indexers on 127.0.0.1, each
reading the cards from its own environment's SMP of this very service (as the network's
directory reads them from the participant's SMP)."""

from __future__ import annotations

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
