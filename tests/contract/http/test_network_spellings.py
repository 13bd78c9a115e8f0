"""The network's real spellings (NETWORK.md, first table) are accepted wherever the interface's
``net-`` ones are, in bodies and in filters, and answered in the ``net-`` form."""

from __future__ import annotations

from typing import Any

from .test_participants import ALICE, ap_certificate, gln, participant, whitelabel

REAL, OURS = "peppol-transport-as4-v2_0", "net-transport-as4-v2_0"


async def own_access_point(api: Any, org: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A whitelabel organisation's uploaded certificate and its own access point."""
    body, _, _ = ap_certificate(api, "ours", "POP000901", 30)
    status, certificate = await api.call(
        "POST", f"/orgs/{org['id']}/certificates", as_=ALICE, json=body
    )
    assert status == 201, certificate
    status, ap = await api.call(
        "POST",
        f"/orgs/{org['id']}/aps",
        as_=ALICE,
        json={"name": "AP", "certificateRef": certificate["id"], "environment": "TEST"},
    )
    assert status == 201, ap
    return certificate, ap


async def test_participants_take_the_real_transport_profile_and_answer_the_net_one(api):
    org = await api.org(ALICE)
    status, p = await participant(api, org["id"], f"0088:{gln(801)}", transportProfile=REAL)
    assert status == 201, p
    assert p["transportProfile"] == OURS
    path = f"/orgs/{org['id']}/participants/{p['id']}"
    status, body = await api.call("PUT", path, as_=ALICE, json={"transportProfile": REAL})
    assert status == 200 and body["transportProfile"] == OURS
    for value in (REAL, OURS):
        status, found = await api.call(
            "GET",
            f"/orgs/{org['id']}/participants?filter=transportProfile:eq:{value}",
            as_=ALICE,
        )
        assert status == 200 and [x["id"] for x in found["items"]] == [p["id"]], value
    status, found = await api.call(
        "GET",
        f"/orgs/{org['id']}/participants?filter=transportProfile:in:bdxr-x|{REAL}",
        as_=ALICE,
    )
    assert [x["id"] for x in found["items"]] == [p["id"]]
    status, none = await api.call(
        "GET", f"/orgs/{org['id']}/participants?filter=transportProfile:ne:{REAL}", as_=ALICE
    )
    assert status == 200 and none["items"] == []


async def test_access_points_and_certificates_take_the_real_transport_profile(api):
    org = await whitelabel(api)
    certificate, ap = await own_access_point(api, org)
    status, second = await api.call(
        "POST",
        f"/orgs/{org['id']}/aps",
        as_=ALICE,
        json={
            "name": "AP 2",
            "certificateRef": certificate["id"],
            "environment": "TEST",
            "transportProfile": REAL,
        },
    )
    assert status == 201, second
    assert second["transportProfile"] == OURS
    status, found = await api.call(
        "GET", f"/orgs/{org['id']}/aps?filter=transportProfile:eq:{REAL}", as_=ALICE
    )
    assert status == 200 and {a["id"] for a in found["items"]} == {ap["id"], second["id"]}
    status, err = await api.call(
        "POST",
        f"/orgs/{org['id']}/aps",
        as_=ALICE,
        json={
            "name": "AP 3",
            "certificateRef": certificate["id"],
            "environment": "TEST",
            "transportProfile": "peppol-transport-as4-v9_9",
        },
    )
    assert status == 400 and err["details"][0]["field"] == "$.transportProfile"
    body, _, _ = ap_certificate(api, "again", "POP000802", 30, transportProfile=REAL)
    status, created = await api.call(
        "POST", f"/orgs/{org['id']}/certificates", as_=ALICE, json=body
    )
    assert status == 201, created
    assert created["transportProfile"] == OURS
