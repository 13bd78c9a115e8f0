"""Organisations over HTTP (spec sections 2–4, 7; API.md)."""

import pytest

ALICE, BOB, ROOT = "alice@example.com", "bob@example.com", "root@example.com"


async def test_create_get_and_the_creator_becomes_orgadmin(api):
    org = await api.org(ALICE)
    assert org["type"] == "ORGANISATION"
    assert org["organisationMode"] == "DEMO"
    assert org["modeChangeRequest"] is None
    assert org["sharedModeEnabled"] is True  # the first organisation this user creates
    assert org["certificates"] == []
    assert org["createdAt"].endswith("Z") and "." in org["createdAt"]
    me = await api.me(ALICE)
    assert org["createdBy"] == {"userId": me["id"]}
    status, got = await api.call("GET", f"/orgs/{org['id']}", as_=ALICE)
    assert status == 200 and got == org
    assert [m["orgId"] for m in me["memberships"]] == [org["id"]]
    assert me["memberships"][0]["role"] == "orgadmin"
    assert me["memberships"][0]["legalName"] == "ACME AB"


async def test_a_second_organisation_is_not_shared_mode_by_default(api):
    await api.org(ALICE)
    second = await api.org(ALICE, legal_id="5560360793")
    assert second["sharedModeEnabled"] is False


@pytest.mark.parametrize("spelling", ["SE:ORGNR", "SE_ORGNR", "0007"])
async def test_legal_identifier_pairs_are_unique_whatever_the_spelling(api, spelling):
    await api.org(ALICE, code="SE:ORGNR")
    status, body = await api.call(
        "POST",
        "/orgs",
        as_=BOB,
        json={
            "legalIdentifier": "2120000787",
            "legalName": "Other",
            "countryCode": "SE",
            "legalIdentifierCode": spelling,
        },
    )
    assert status == 409 and body["code"] == "AT-1091"


async def test_a_legal_identifier_failing_its_check_digit_is_refused(api):
    status, body = await api.call(
        "POST",
        "/orgs",
        as_=ALICE,
        json={
            "legalIdentifier": "2120000788",
            "legalName": "ACME",
            "countryCode": "SE",
            "legalIdentifierCode": "SE:ORGNR",
        },
    )
    assert status == 400, body
    assert body["code"] == "AT-1006"
    assert body["details"][0]["field"] == "$.legalIdentifier"


async def test_mode_change_needs_a_business_contact(api):
    org = await api.org(ALICE)
    status, body = await api.call(
        "PUT", f"/orgs/{org['id']}", as_=ALICE, json={"modeChangeRequest": "WHITELABEL"}
    )
    assert status == 422 and body["code"] == "AT-1120"
    status, body = await api.call("GET", f"/orgs/{org['id']}", as_=ALICE)
    assert body["modeChangeRequest"] is None  # nothing changed


async def test_the_mode_change_flow_with_a_superadmin(api):
    org = await api.org(ALICE)
    contact = {"name": "Bea", "email": "bea@example.com", "contactType": "BUSINESS"}
    status, body = await api.call(
        "PUT",
        f"/orgs/{org['id']}",
        as_=ALICE,
        json={"contacts": [contact], "modeChangeRequest": "WHITELABEL"},
    )
    assert status == 200, body
    assert body["modeChangeRequest"] == "WHITELABEL" and body["organisationMode"] == "DEMO"
    assert body["contacts"][0]["contactType"] == "BUSINESS"
    # an orgadmin cannot set the mode, but may send the current value back
    status, denied = await api.call(
        "PUT", f"/orgs/{org['id']}", as_=ALICE, json={"organisationMode": "WHITELABEL"}
    )
    assert status == 403 and denied["code"] == "AT-1019"
    status, same = await api.call("PUT", f"/orgs/{org['id']}", as_=ALICE, json=body)
    assert status == 200 and same["organisationMode"] == "DEMO"
    # a superadmin finds the pending request and grants it
    status, listed = await api.call(
        "GET", "/orgs?filter=modeChangeRequest:ne:null", as_=ROOT, superadmin=True
    )
    assert status == 200 and [o["id"] for o in listed["items"]] == [org["id"]]
    status, granted = await api.call(
        "PUT",
        f"/orgs/{org['id']}",
        as_=ROOT,
        superadmin=True,
        json={"organisationMode": "WHITELABEL"},
    )
    assert status == 200, granted
    assert granted["organisationMode"] == "WHITELABEL"
    assert granted["modeChangeRequest"] is None
    assert granted["lastModifiedBy"] == {"userId": (await api.me(ROOT))["id"]}


async def test_demo_is_not_a_mode_one_can_request(api):
    org = await api.org(ALICE)
    contact = {"name": "Bea", "email": "bea@example.com", "contactType": "BUSINESS"}
    await api.call("PUT", f"/orgs/{org['id']}", as_=ALICE, json={"contacts": [contact]})
    for mode in ("DEMO", "PARTNER"):
        status, err = await api.call(
            "PUT", f"/orgs/{org['id']}", as_=ALICE, json={"modeChangeRequest": mode}
        )
        assert status == 400 and err["code"] == "AT-1001", err
        assert [d["field"] for d in err["details"]] == ["$.modeChangeRequest"]
    _, got = await api.call("GET", f"/orgs/{org['id']}", as_=ALICE)
    assert got["modeChangeRequest"] is None
    status, err = await api.call(
        "GET", "/orgs?filter=modeChangeRequest:eq:DEMO", as_=ROOT, superadmin=True
    )
    assert status == 400 and err["code"] == "AT-1004"


async def grant(api, org, mode):
    status, body = await api.call(
        "PUT", f"/orgs/{org['id']}", as_=ALICE, json={"modeChangeRequest": mode}
    )
    assert status == 200 and body["modeChangeRequest"] == mode, body
    status, body = await api.call(
        "PUT", f"/orgs/{org['id']}", as_=ROOT, superadmin=True, json={"organisationMode": mode}
    )
    assert status == 200 and body["organisationMode"] == mode, body
    assert body["modeChangeRequest"] is None
    return body


async def test_shared_mode_enabled_follows_the_granted_mode(api):
    org = await api.org(ALICE)
    second = await api.org(ALICE, legal_id="5560360793")
    contact = {"name": "Bea", "email": "bea@example.com", "contactType": "BUSINESS"}
    for o in (org, second):
        await api.call("PUT", f"/orgs/{o['id']}", as_=ALICE, json={"contacts": [contact]})
    assert (await grant(api, org, "WHITELABEL"))["sharedModeEnabled"] is False
    back = await grant(api, org, "SHARED")
    assert back["sharedModeEnabled"] is True  # restricted to the shared services again
    _, got = await api.call("GET", f"/orgs/{org['id']}", as_=ALICE)
    assert got["organisationMode"] == "SHARED" and got["sharedModeEnabled"] is True
    # an organisation that was never restricted is, once it is SHARED
    assert second["sharedModeEnabled"] is False
    assert (await grant(api, second, "SHARED"))["sharedModeEnabled"] is True


async def test_read_only_fields_sent_back_must_keep_their_values(api):
    org = await api.org(ALICE)
    path = f"/orgs/{org['id']}"
    # the record's bookkeeping is ignored: it says which version the client read
    edited = {
        **org,
        "id": "00000000-0000-0000-0000-000000000000",
        "createdAt": "2000-01-01T00:00:00Z",
        "legalName": "ACME Renamed",
    }
    status, body = await api.call("PUT", path, as_=ALICE, json=edited)
    assert status == 200, body
    assert body["id"] == org["id"] and body["createdAt"] == org["createdAt"]
    assert body["sharedModeEnabled"] is True and body["legalName"] == "ACME Renamed"
    # a read-only field with another value is a change the PUT cannot make
    status, err = await api.call(
        "PUT", path, as_=ALICE, json={**body, "sharedModeEnabled": False, "legalName": "X"}
    )
    assert status == 400 and err["code"] == "AT-1001", err
    assert [d["field"] for d in err["details"]] == ["$.sharedModeEnabled"]
    assert "read-only" in err["error"]
    _, after = await api.call("GET", path, as_=ALICE)
    assert after["legalName"] == "ACME Renamed" and after["sharedModeEnabled"] is True
    # an orgadmin cannot set the mode either (a superadmin's change)
    status, err = await api.call("PUT", path, as_=ALICE, json={"organisationMode": "SHARED"})
    assert status == 403, err
    # a caller who may not change the organisation learns nothing from the values
    status, err = await api.call("PUT", path, as_=BOB, json={"sharedModeEnabled": False})
    assert status == 403, err


async def test_only_a_superadmin_lists_every_organisation(api):
    await api.org(ALICE)
    status, body = await api.call("GET", "/orgs", as_=ALICE)
    assert status == 403 and body["code"] == "AT-1019"


async def test_other_users_cannot_read_or_change_an_organisation(api):
    org = await api.org(ALICE)
    status, body = await api.call("GET", f"/orgs/{org['id']}", as_=BOB)
    assert status == 403 and body["code"] == "AT-1020"
    status, body = await api.call("PUT", f"/orgs/{org['id']}", as_=BOB, json={"legalName": "x"})
    assert status == 403
    status, body = await api.call("GET", f"/orgs/{org['id']}", as_=ALICE)
    assert body["legalName"] == "ACME AB"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (
            {"legalName": "X", "countryCode": "SE", "legalIdentifierCode": "SE:ORGNR"},
            "$.legalIdentifier",
        ),
        (
            {
                "legalIdentifier": 2120000787,
                "legalName": "X",
                "countryCode": "SE",
                "legalIdentifierCode": "SE:ORGNR",
            },
            "$.legalIdentifier",
        ),
        (
            {
                "legalIdentifier": "2120000787",
                "legalName": "X",
                "countryCode": "Sweden",
                "legalIdentifierCode": "SE:ORGNR",
            },
            "$.countryCode",
        ),
        (
            {
                "legalIdentifier": "2120000787",
                "legalName": "X",
                "countryCode": "SE",
                "legalIdentifierCode": "XX:NOPE",
            },
            "$.legalIdentifierCode",
        ),
        (
            {
                "legalIdentifier": "2120000787",
                "legalName": "X",
                "countryCode": "SE",
                "legalIdentifierCode": "SE:ORGNR",
                "contacts": [{"contactType": "FRIEND"}],
            },
            "$.contacts[0].contactType",
        ),
    ],
)
async def test_bad_bodies_are_400_naming_the_field_and_change_nothing(api, body, field):
    status, err = await api.call("POST", "/orgs", as_=ALICE, json=body)
    assert status == 400, err
    assert err["code"] in ("AT-1001", "AT-1006")
    assert field in [d["field"] for d in err["details"]]
    assert (await api.me(ALICE))["memberships"] == []


async def test_a_pending_mode_change_request_is_withdrawn_with_null(api):
    org = await api.org(ALICE)
    contact = {"name": "Bea", "email": "bea@example.com", "contactType": "BUSINESS"}
    path = f"/orgs/{org['id']}"
    body = {"contacts": [contact], "modeChangeRequest": "WHITELABEL"}
    status, asked = await api.call("PUT", path, as_=ALICE, json=body)
    assert status == 200 and asked["modeChangeRequest"] == "WHITELABEL", asked
    # a body without the field, or the record sent back, keeps the request
    status, kept = await api.call("PUT", path, as_=ALICE, json={"legalName": "ACME Two"})
    assert status == 200 and kept["modeChangeRequest"] == "WHITELABEL", kept
    status, kept = await api.call("PUT", path, as_=ALICE, json=kept)
    assert status == 200 and kept["modeChangeRequest"] == "WHITELABEL", kept
    status, withdrawn = await api.call("PUT", path, as_=ALICE, json={"modeChangeRequest": None})
    assert status == 200 and withdrawn["modeChangeRequest"] is None, withdrawn
    assert withdrawn["organisationMode"] == "DEMO"
    _, got = await api.call("GET", path, as_=ALICE)
    assert got["modeChangeRequest"] is None
    # nothing pending: null changes nothing, and needs no BUSINESS contact
    status, again = await api.call(
        "PUT", path, as_=ALICE, json={"contacts": [], "modeChangeRequest": None}
    )
    assert status == 200 and again["modeChangeRequest"] is None, again
    # a superadmin then finds nothing to grant
    status, listed = await api.call(
        "GET", "/orgs?filter=modeChangeRequest:ne:null", as_=ROOT, superadmin=True
    )
    assert status == 200 and listed["items"] == []


async def test_a_pending_request_keeps_needing_a_business_contact(api):
    """AT-1120 holds for as long as a request is pending: removing the BUSINESS contact (with
    the request sent again, or left out) is refused and changes nothing, so the superadmin
    cannot grant the mode to an organisation without one; withdrawing the request in the
    same body lets the contacts go."""
    org = await api.org(ALICE)
    o = f"/orgs/{org['id']}"
    business = {"name": "Bea", "email": "bea@example.com", "contactType": "BUSINESS"}
    technical = {"name": "Tom", "email": "tom@example.com", "contactType": "TECHNICAL"}
    body = {"contacts": [business], "modeChangeRequest": "WHITELABEL"}
    status, asked = await api.call("PUT", o, as_=ALICE, json=body)
    assert status == 200 and asked["modeChangeRequest"] == "WHITELABEL", asked
    for body in (
        {"contacts": [], "modeChangeRequest": "WHITELABEL"},
        {"contacts": [technical]},
        {"contacts": [], "modeChangeRequest": "SHARED"},
    ):
        status, refused = await api.call("PUT", o, as_=ALICE, json=body)
        assert (status, refused["code"]) == (422, "AT-1120"), (body, refused)
    status, kept = await api.call("GET", o, as_=ALICE)
    assert status == 200
    assert kept["contacts"] == asked["contacts"] and kept["modeChangeRequest"] == "WHITELABEL"
    assert kept["lastModifiedAt"] == asked["lastModifiedAt"]
    # withdrawn in the same body, the BUSINESS contact may go; a grant then has nothing to grant
    body = {"contacts": [technical], "modeChangeRequest": None}
    status, withdrawn = await api.call("PUT", o, as_=ALICE, json=body)
    assert status == 200 and withdrawn["modeChangeRequest"] is None, withdrawn
    grant = {"organisationMode": "WHITELABEL"}
    status, refused = await api.call("PUT", o, as_=ROOT, superadmin=True, json=grant)
    assert status == 409 and refused["code"] == "AT-1094", refused
    # the superadmin removing the contact while granting is refused as well
    body = {"contacts": [business], "modeChangeRequest": "WHITELABEL"}
    assert (await api.call("PUT", o, as_=ALICE, json=body))[0] == 200
    grant = {"organisationMode": "WHITELABEL", "contacts": [technical]}
    status, refused = await api.call("PUT", o, as_=ROOT, superadmin=True, json=grant)
    assert (status, refused["code"]) == (422, "AT-1120"), refused
    status, kept = await api.call("GET", o, as_=ALICE)
    assert kept["organisationMode"] == "DEMO" and kept["modeChangeRequest"] == "WHITELABEL"
    # with the contact kept, the grant goes through
    grant = {"organisationMode": "WHITELABEL"}
    status, granted = await api.call("PUT", o, as_=ROOT, superadmin=True, json=grant)
    assert status == 200 and granted["organisationMode"] == "WHITELABEL", granted
