"""A participant's business card is published by its SMP and the directory: its fields follow
the organisation's rules (SPEC section 2, API.md), and a value stored before they were checked
is not published."""

from __future__ import annotations

import urllib.parse
import uuid

import attrs
import pytest
from lxml import etree

from fourcorner.application.collections import ORGANISATIONS, PARTICIPANTS
from fourcorner.domain.participant import BusinessCard
from fourcorner.entrypoints.container import resolve

from .test_participants import ALICE, gln, participant

BC = "{http://www.peppol.eu/schema/pd/businesscard/20180621/}"
CARD = {
    "legalName": "ACME AB",
    "legalIdentifier": "2120000787",
    "legalIdentifierCode": "SE:ORGNR",
    "countryCode": "SE",
    "website": "https://www.acme.example",
}

BAD = [
    ({"countryCode": "XXX"}, "$.businessCard.countryCode", "AT-1001"),
    ({"countryCode": "1"}, "$.businessCard.countryCode", "AT-1001"),
    ({"countryCode": "se"}, "$.businessCard.countryCode", "AT-1001"),
    ({"website": "javascript:alert(1)"}, "$.businessCard.website", "AT-1001"),
    ({"website": "ftp://files.example.com"}, "$.businessCard.website", "AT-1001"),
    ({"website": "www.acme.example"}, "$.businessCard.website", "AT-1001"),
    ({"website": "https://"}, "$.businessCard.website", "AT-1001"),
    ({"website": "https://a b.example"}, "$.businessCard.website", "AT-1001"),
    (
        {"contacts": [{"name": "B", "webContactUrl": "data:text/html,x"}]},
        "$.businessCard.contacts[0].webContactUrl",
        "AT-1001",
    ),
    (
        {"contacts": [{"name": "B", "email": "not an email"}]},
        "$.businessCard.contacts[0].email",
        "AT-1001",
    ),
    ({"legalIdentifierCode": "NOPE"}, "$.businessCard.legalIdentifierCode", "AT-1006"),
    ({"legalIdentifier": "2120000788"}, "$.businessCard.legalIdentifier", "AT-1006"),
]


def card_path(ident: str) -> str:
    return "/smp/test/businesscard/" + urllib.parse.quote(f"iso6523-actorid-upis::{ident}", safe="")


async def test_a_contact_without_a_web_contact_url_has_none_rather_than_null(api):
    """SPEC section 2: webContactUrl is a string URL that may be absent (never null)."""
    org = await api.org(ALICE)
    bare = {"name": "B", "email": "b@example.com", "contactType": "BUSINESS"}
    web = {**bare, "name": "W", "webContactUrl": "https://acme.example/contact"}
    status, changed = await api.call(
        "PUT", f"/orgs/{org['id']}", as_=ALICE, json={"contacts": [bare, web]}
    )
    assert status == 200, changed
    status, card_holder = await participant(
        api, org["id"], f"0088:{gln(932)}", businessCard={**CARD, "contacts": [bare, web]}
    )
    assert status == 201, card_holder
    _, got = await api.call("GET", f"/orgs/{org['id']}", as_=ALICE)
    path = f"/orgs/{org['id']}/participants/{card_holder['id']}"
    _, held = await api.call("GET", path, as_=ALICE)
    for answer in (changed, got, card_holder, held):
        contacts = (
            answer["contacts"] if "contacts" in answer else answer["businessCard"]["contacts"]
        )
        assert "webContactUrl" not in contacts[0], contacts
        assert contacts[1]["webContactUrl"] == web["webContactUrl"], contacts
    # the record as read is taken back by its PUT unchanged
    status, again = await api.call("PUT", path, as_=ALICE, json=held)
    assert status == 200 and again["businessCard"] == held["businessCard"], again


@pytest.mark.parametrize(("change", "field", "code"), BAD)
async def test_bad_card_fields_are_refused_on_create_and_update(api, change, field, code):
    org = await api.org(ALICE)
    ident = f"0088:{gln(931)}"
    status, err = await participant(api, org["id"], ident, businessCard={**CARD, **change})
    assert status == 400 and err["code"] == code, err
    assert field in [d["field"] for d in err["details"]]
    status, p = await participant(api, org["id"], ident, businessCard=CARD)
    assert status == 201, p
    path = f"/orgs/{org['id']}/participants/{p['id']}"
    status, err = await api.call("PUT", path, as_=ALICE, json={"businessCard": {**CARD, **change}})
    assert status == 400 and err["code"] == code, err
    assert field in [d["field"] for d in err["details"]]
    _, after = await api.call("GET", path, as_=ALICE)
    assert after["businessCard"] == p["businessCard"]  # nothing changed


@pytest.mark.parametrize("code", ["SE:ORGNR", "SE_ORGNR", "0007"])
async def test_the_legal_identifier_code_takes_either_spelling_or_the_icd(api, code):
    org = await api.org(ALICE)
    card = {**CARD, "legalIdentifierCode": code, "website": "http://acme.example:8080/a?b=c"}
    status, p = await participant(api, org["id"], f"0088:{gln(932)}", businessCard=card)
    assert status == 201, p
    assert p["businessCard"]["legalIdentifierCode"] == code


async def republished_entity(api, org, p, ident):
    """The BusinessEntity the SMP serves after a change of the participant (any change
    publishes it again, from what is stored)."""
    path = f"/orgs/{org['id']}/participants/{p['id']}"
    status, renamed = await api.call("PUT", path, as_=ALICE, json={"name": "Renamed"})
    assert status == 200, renamed
    resp = await api.client.get(card_path(ident))
    assert resp.status == 200
    return etree.fromstring(await resp.read()).find(f"{BC}BusinessEntity")


async def test_a_bad_card_stored_before_the_rules_is_not_published(api):
    org = await api.org(ALICE)
    ident = f"0088:{gln(933)}"
    status, p = await participant(api, org["id"], ident, businessCard=CARD)
    assert status == 201, p
    bad = BusinessCard(legal_name="ACME AB", country_code="XXX", website="javascript:alert(1)")
    ctx = await resolve(api.container.context)
    async with ctx.uow() as uow:
        stored = await uow.repository(PARTICIPANTS).get(uuid.UUID(p["id"]))
        await uow.repository(PARTICIPANTS).update(attrs.evolve(stored, business_card=bad))
        await uow.commit()
    entity = await republished_entity(api, org, p, ident)
    assert entity.find(f"{BC}WebsiteURI") is None
    assert entity.findtext(f"{BC}CountryCode") == "SE"  # the organisation's


@pytest.mark.parametrize(
    ("ident", "country"), [("0007:2120000787", "SE"), ("0192:745707327", "NO")]
)
async def test_without_a_country_of_card_or_organisation_the_schemes_is_published(
    api, ident, country
):
    """An organisation stored before a country was required has none; a card's CountryCode is
    mandatory, so the participant identifier's scheme gives it where the scheme is national."""
    org = await api.org(ALICE)
    status, p = await participant(api, org["id"], ident)
    assert status == 201, p
    ctx = await resolve(api.container.context)
    async with ctx.uow() as uow:
        stored = await uow.repository(ORGANISATIONS).get(uuid.UUID(org["id"]))
        await uow.repository(ORGANISATIONS).update(attrs.evolve(stored, country_code=""))
        await uow.commit()
    entity = await republished_entity(api, org, p, ident)
    assert entity.findtext(f"{BC}CountryCode") == country
