"""Free-text ``search`` on the lists that had none (an organisation's events, a transaction's
artefacts) and over a member's email; within the organisation's own records only."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from sbd_factory import make_sbd

from .test_flow_validation import send, sending_org
from .test_participants import ALICE, BOB

CAROL = "carol.lind@mail.example"


async def listed(api: Any, path: str, search: str, who: str = ALICE) -> list[str]:
    """The ids of the first page of ``path`` searched for ``search``."""
    status, page = await api.call(
        "GET", f"{path}?search={quote(search, safe='')}&limit=500", as_=who
    )
    assert status == 200, page
    return [item["id"] for item in page["items"]]


async def trigger(api: Any, org_id: str, who: str) -> dict[str, Any]:
    status, event = await api.call(
        "POST",
        f"/orgs/{org_id}/webhooks/trigger-test-event",
        as_=who,
        json={"eventType": "webhook.test"},
    )
    assert status in (200, 201, 202), event
    return event


async def test_events_are_found_by_type_and_id_within_the_organisation(api):
    a = await api.org(ALICE)
    b = await api.org(BOB, legal_id="5560360793")
    mine = await trigger(api, a["id"], ALICE)
    theirs = await trigger(api, b["id"], BOB)
    path = f"/orgs/{a['id']}/webhooks/events"
    assert await listed(api, path, "webhook.test") == [mine["id"]]
    assert await listed(api, path, "WEBHOOK.T") == [mine["id"]]
    assert await listed(api, path, mine["id"][9:23].upper()) == [mine["id"]]
    assert await listed(api, path, "transaction.") == []
    # another organisation's event is never found, by any of its values
    assert await listed(api, path, theirs["id"]) == []
    assert await listed(api, f"/orgs/{b['id']}/webhooks/events", mine["id"], BOB) == []


async def test_artefacts_are_found_by_type_content_type_and_id(api):
    org, sender, ap = await sending_org(api, 95)
    status, body = await send(api, org, ap, make_sbd(sender=sender))
    assert status == 202, body
    path = f"/orgs/{org['id']}/transactions/{body['transactionId']}/artefacts"
    _, every = await api.call("GET", path, as_=ALICE)
    by_type: dict[str, list[dict[str, Any]]] = {}
    for a in every["items"]:
        by_type.setdefault(a["type"], []).append(a)
    assert set(by_type) == {"BUSINESS_DOCUMENT", "VALIDATION_RESULT"}, every
    assert await listed(api, path, "business_doc") == [
        a["id"] for a in by_type["BUSINESS_DOCUMENT"]
    ]
    assert await listed(api, path, "Validation") == [a["id"] for a in by_type["VALIDATION_RESULT"]]
    json_ones = [a["id"] for a in every["items"] if a["contentType"] == "application/json"]
    assert json_ones and await listed(api, path, "/JSON") == json_ones
    one = every["items"][0]
    assert await listed(api, path, one["id"]) == [one["id"]]
    assert await listed(api, path, "receipt") == []


async def test_members_are_found_by_email(api):
    org = await api.org(ALICE)
    carol = await api.me(CAROL)
    status, member = await api.call(
        "POST", f"/orgs/{org['id']}/members", as_=ALICE, json={"userId": carol["id"]}
    )
    assert status == 201, member
    path = f"/orgs/{org['id']}/members"
    assert await listed(api, path, "MAIL.EXAMPLE") == [member["id"]]
    assert await listed(api, path, "alice@") != []
    assert member["id"] not in await listed(api, path, "alice@")
    # nor is a member of one organisation found from another by its address
    b = await api.org(BOB, legal_id="5560360793")
    assert await listed(api, f"/orgs/{b['id']}/members", "mail.example", BOB) == []


async def test_invitations_are_found_by_email(api):
    org = await api.org(ALICE)
    status, invited = await api.call(
        "POST",
        f"/orgs/{org['id']}/members",
        as_=ALICE,
        json={"email": "Dan.Berg@Invited.Example", "role": "orgmember"},
    )
    assert status == 201, invited
    path = f"/orgs/{org['id']}/members/pending"
    assert await listed(api, path, "dan.berg@invited") == [invited["id"]]
