"""Filtering a list by a record's own ``createdAt``, exactly as the record shows it: ``eq``,
``gte`` and ``lte`` find it, ``gt``, ``lt`` and ``ne`` do not (the comparison is at the
precision shown, milliseconds, while the stored value has microseconds)."""

from __future__ import annotations

import urllib.parse
from typing import Any

from fourcorner.entrypoints.http.routes import routes

from .test_participants import ALICE, BOB, ROOT, gln, participant

EXPECTED = {"eq": True, "gte": True, "lte": True, "gt": False, "lt": False, "ne": False}


async def check(api: Any, path: str, record: dict[str, Any], **call: Any) -> None:
    for op, included in EXPECTED.items():
        value = urllib.parse.quote(record["createdAt"])
        status, found = await api.call(
            "GET", f"{path}?filter=createdAt:{op}:{value}&limit=500", **call
        )
        assert status == 200, found
        ids = [x["id"] for x in found["items"]]
        assert (record["id"] in ids) is included, (path, op, record["createdAt"])


async def test_each_list_finds_a_record_by_its_own_shown_created_at(api):
    org = await api.org(ALICE)
    o = f"/orgs/{org['id']}"
    await check(api, "/orgs", org, as_=ROOT, superadmin=True)
    bob = await api.me(BOB)
    _, member = await api.call(
        "POST", f"{o}/members", as_=ALICE, json={"userId": bob["id"], "role": "orgmember"}
    )
    await check(api, f"{o}/members", member, as_=ALICE)
    status, p = await participant(api, org["id"], f"0088:{gln(601)}")
    assert status == 201, p
    await check(api, f"{o}/participants", p, as_=ALICE)
    _, hook = await api.call(
        "POST",
        f"{o}/webhooks",
        as_=ALICE,
        json={"url": "https://hooks.example.com/in", "events": ["webhook.test"]},
    )
    await check(api, f"{o}/webhooks", hook, as_=ALICE)
    _, key = await api.call(
        "POST",
        f"{o}/api_keys",
        as_=ALICE,
        json={"name": "k", "expires": "2999-01-01T00:00:00Z", "role": "orgmember"},
    )
    await check(api, f"{o}/api_keys", key, as_=ALICE)
    _, event = await api.call(
        "POST", f"{o}/webhooks/trigger-test-event", as_=ALICE, json={"eventType": "webhook.test"}
    )
    await check(api, f"{o}/webhooks/events", event, as_=ALICE)
    _, aps = await api.call("GET", f"{o}/aps/alltouse", as_=ALICE)
    assert aps["items"][0]["createdAt"].count(".") == 1  # shown with a fraction


EDGES = ("9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+14:00")


async def test_a_timestamp_beyond_the_years_is_a_bad_filter_on_every_list(api):
    """A time of the last (first) day of the years with an offset names an instant after
    (before) them: each list with a timestamp field refuses it as its filter, 400 AT-1004."""
    org = await api.org(ALICE)
    lists = [
        r.path.replace("{orgId}", org["id"])
        for r in routes()
        if r.method == "GET"
        and any(q.name == "sort" for q in r.query)
        and "{" not in r.path.replace("{orgId}", "")
    ]
    checked = []
    for path in lists:
        for edge in EDGES:
            expression = f"createdAt:gt:{edge}"
            query = urllib.parse.urlencode({"filter": expression})
            status, body = await api.call("GET", f"{path}?{query}", as_=ROOT, superadmin=True)
            assert status == 400, (path, status, body)
            if "unknown field 'createdAt'" in body["error"]:
                continue
            assert body["code"] == "AT-1004", (path, body)
            [detail] = body["details"]
            assert detail["field"] == "filter"
            assert detail["problem"].startswith(f"{expression!r}: createdAt is a timestamp from")
            checked.append(path)
    assert {f"/orgs/{org['id']}/participants", "/orgs", f"/orgs/{org['id']}/api_keys"} <= set(
        checked
    )


async def test_an_expiry_beyond_the_years_is_refused_with_the_range(api):
    org = await api.org(ALICE)
    for edge in EDGES:
        status, body = await api.call(
            "POST",
            f"/orgs/{org['id']}/api_keys",
            as_=ALICE,
            json={"name": "k", "expires": edge, "role": "orgmember"},
        )
        assert status == 400 and body["code"] == "AT-1001", body
        assert body["details"] == [
            {
                "field": "$.expires",
                "problem": f"{edge!r} is outside the timestamps this service takes, "
                "from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z",
            }
        ]
