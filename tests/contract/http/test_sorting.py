"""Sorting lists over HTTP: ``sort=<field>`` / ``sort=-<field>`` on every list, newest first
by default for transactions and events, cursors bound to their sort."""

from __future__ import annotations

from typing import Any

from fourcorner.entrypoints.http.rendering import ListReply
from fourcorner.entrypoints.http.routes import routes
from sbd_factory import make_sbd

from .test_participants import ALICE, BOB, gln
from .test_transactions import receiving_participant


async def walk(api: Any, path: str, **params: str) -> list[dict[str, Any]]:
    """Every item of a list, page by page (``limit`` 2), following nextCursor."""
    found: list[dict[str, Any]] = []
    query = dict(params, limit="2")
    for _ in range(100):
        status, page = await api.call(
            "GET", path + "?" + "&".join(f"{k}={v}" for k, v in query.items()), as_=ALICE
        )
        assert status == 200, page
        assert len(page["items"]) <= 2
        found.extend(page["items"])
        if page["nextCursor"] is None:
            return found
        query["cursor"] = page["nextCursor"]
    raise AssertionError("the cursor never ended")


async def test_webhooks_sort_by_any_filter_field_both_ways(api):
    org = await api.org(ALICE)
    path = f"/orgs/{org['id']}/webhooks"
    urls = ["https://c.example.com/h", "https://a.example.com/h", "https://b.example.com/h"]
    for i, url in enumerate([*urls, urls[0]]):
        body = {"url": url, "events": ["webhook.test"], "isEnabled": i % 2 == 0}
        status, made = await api.call("POST", path, as_=ALICE, json=body)
        assert status == 201, made
    every = await walk(api, path)
    assert [w["createdAt"] for w in every] == sorted(w["createdAt"] for w in every)
    by_url = await walk(api, path, sort="url")
    assert [(w["url"], w["id"]) for w in by_url] == sorted((w["url"], w["id"]) for w in every)
    by_url_desc = await walk(api, path, sort="-url")
    assert by_url_desc == by_url[::-1]
    enabled = await walk(api, path, sort="-isEnabled")
    assert [w["isEnabled"] for w in enabled] == [True, True, False, False]
    assert len({w["id"] for w in enabled}) == 4


async def test_events_are_newest_first_and_cursors_belong_to_their_sort(api):
    org = await api.org(ALICE)
    for _ in range(5):
        status, _ = await api.call(
            "POST",
            f"/orgs/{org['id']}/webhooks/trigger-test-event",
            as_=ALICE,
            json={"eventType": "webhook.test"},
        )
        assert status == 200
    path = f"/orgs/{org['id']}/webhooks/events"
    newest = await walk(api, path)
    assert len(newest) == 5
    # Events are ordered by their stored time (microseconds), shown to the millisecond: two
    # in the same millisecond keep their order of creation, not of id.
    shown = [e["createdAt"] for e in newest]
    assert shown == sorted(shown, reverse=True)
    oldest = await walk(api, path, sort="createdAt")
    assert oldest == newest[::-1]
    assert await walk(api, path, sort="-createdAt") == newest

    _, first = await api.call("GET", f"{path}?limit=2&sort=createdAt", as_=ALICE)
    for other in ("-createdAt", "id", "status"):
        status, body = await api.call(
            "GET", f"{path}?limit=2&sort={other}&cursor={first['nextCursor']}", as_=ALICE
        )
        assert status == 400 and body["code"] == "AT-1005", (other, body)
    _, newest_first = await api.call("GET", f"{path}?limit=2", as_=ALICE)
    status, body = await api.call(
        "GET", f"{path}?limit=2&sort=createdAt&cursor={newest_first['nextCursor']}", as_=ALICE
    )
    assert status == 400 and body["code"] == "AT-1005"


async def test_a_cursor_belongs_to_its_list(api):
    """A cursor goes back into the list that made it: another collection's list, another
    organisation's list of the same collection and the other direction of transactions
    refuse it with AT-1005, whatever sort they share with it."""
    org = await api.org(ALICE)
    other = await api.org(BOB, legal_id="5560360793")
    for owner, email in ((org, ALICE), (other, BOB)):
        for n in range(3):
            body = {"url": f"https://h{n}.example.com/h", "events": ["webhook.test"]}
            status, made = await api.call(
                "POST", f"/orgs/{owner['id']}/webhooks", as_=email, json=body
            )
            assert status == 201, made
    sender = f"0088:{gln(96)}"
    await receiving_participant(api, org, sender, ALICE)
    _, aps = await api.call("GET", f"/orgs/{org['id']}/aps/alltouse", as_=ALICE)
    for n in (97, 98, 99):
        sbd = make_sbd(sender=sender, receiver=f"0088:{gln(n)}")
        await api.send(ALICE, org["id"], aps["items"][0]["id"], sbd)
    base = f"/orgs/{org['id']}"
    first = {}
    for path in (f"{base}/webhooks", f"{base}/transactions/to_network"):
        status, page = await api.call("GET", f"{path}?limit=1&sort=createdAt", as_=ALICE)
        assert status == 200 and page["nextCursor"], page
        first[path] = page["nextCursor"]
        # its own list takes it
        status, page = await api.call(
            "GET", f"{path}?limit=1&sort=createdAt&cursor={page['nextCursor']}", as_=ALICE
        )
        assert status == 200 and len(page["items"]) == 1, page
    refusals = [
        (ALICE, f"{base}/api_keys", first[f"{base}/webhooks"]),
        (ALICE, f"{base}/participants", first[f"{base}/webhooks"]),
        (ALICE, f"{base}/webhooks/events", first[f"{base}/webhooks"]),
        (BOB, f"/orgs/{other['id']}/webhooks", first[f"{base}/webhooks"]),
        (ALICE, f"{base}/transactions/from_network", first[f"{base}/transactions/to_network"]),
        (ALICE, f"{base}/webhooks", first[f"{base}/transactions/to_network"]),
    ]
    for email, path, cursor in refusals:
        status, body = await api.call(
            "GET", f"{path}?limit=1&sort=createdAt&cursor={cursor}", as_=email
        )
        assert (status, body.get("code")) == (400, "AT-1005"), (path, body)


async def test_an_unknown_sort_is_refused_naming_the_parameter(api):
    org = await api.org(ALICE)
    for path in (
        f"/orgs/{org['id']}/webhooks/events",
        f"/orgs/{org['id']}/members",
        f"/orgs/{org['id']}/transactions/to_network",
    ):
        for sort in ("nope", "-", "", "--createdAt", "secretHash", "search_text"):
            status, body = await api.call("GET", f"{path}?sort={sort}", as_=ALICE)
            assert status == 400, (path, sort, body)
            assert body["code"] == "AT-1001"
            assert body["details"][0]["field"] == "sort"
    # the members list is not sorted by a column clients cannot filter on
    status, body = await api.call("GET", f"/orgs/{org['id']}/members?sort=status", as_=ALICE)
    assert status == 400 and body["details"][0]["field"] == "sort"


async def test_transactions_are_newest_first_and_sort_by_their_filter_fields(api):
    org = await api.org(ALICE)
    sender = f"0088:{gln(90)}"
    await receiving_participant(api, org, sender, ALICE)
    _, aps = await api.call("GET", f"/orgs/{org['id']}/aps/alltouse", as_=ALICE)
    ap = aps["items"][0]["id"]
    receivers = [f"0088:{gln(n)}" for n in (93, 91, 92, 91)]
    posted = []
    for receiver in receivers:
        status, body = await api.call(
            "POST",
            f"/orgs/{org['id']}/transactions?ap={ap}",
            as_=ALICE,
            data=make_sbd(sender=sender, receiver=receiver),
            headers={"Content-Type": "application/xml"},
        )
        assert status == 202, body
        posted.append(body["transactionId"])
    path = f"/orgs/{org['id']}/transactions/to_network"
    newest = await walk(api, path)
    assert [t["id"] for t in newest] == posted[::-1]
    assert [t["createdAt"] for t in newest] == sorted(
        (t["createdAt"] for t in newest), reverse=True
    )
    by_receiver = await walk(api, path, sort="receiverId")
    assert [(t["receiverId"], t["id"]) for t in by_receiver] == sorted(
        (t["receiverId"], t["id"]) for t in newest
    )
    assert await walk(api, path, sort="-receiverId") == by_receiver[::-1]
    # filters and sorts together
    one = newest[0]["receiverId"]
    filtered = await walk(api, path, sort="-docInstanceId", filter=f"receiverId:eq:{one}")
    assert {t["receiverId"] for t in filtered} == {one}


async def test_catalogue_lists_sort_by_their_filter_fields(api):
    await api.me(ALICE)
    path = "/participant_identifiers"
    _, whole = await api.call("GET", f"{path}?filter=country:eq:FR", as_=ALICE)
    published = whole["items"]
    assert len(published) >= 3
    by_name = await walk(api, path, sort="-schemeName", filter="country:eq:FR")
    assert [(s["schemeName"], s["iso6523"]) for s in by_name] == sorted(
        ((s["schemeName"], s["iso6523"]) for s in published), reverse=True
    )
    # the published order's cursor and a sorted one do not mix
    _, first = await api.call("GET", f"{path}?limit=1&sort=schemeid", as_=ALICE)
    _, plain = await api.call("GET", f"{path}?limit=1", as_=ALICE)
    for query in (
        f"limit=1&cursor={first['nextCursor']}",
        f"limit=1&sort=-schemeid&cursor={first['nextCursor']}",
        f"limit=1&sort=schemeid&cursor={plain['nextCursor']}",
    ):
        status, body = await api.call("GET", f"{path}?{query}", as_=ALICE)
        assert status == 400 and body["code"] == "AT-1005", (query, body)
    status, body = await api.call("GET", "/document_types?sort=createdAt", as_=ALICE)
    assert status == 400 and body["details"][0]["field"] == "sort"
    status, page = await api.call("GET", "/document_types?sort=-name&limit=3", as_=ALICE)
    assert status == 200
    names = [d["name"] for d in page["items"]]
    assert names == sorted(names, reverse=True)


async def test_lists_of_what_an_organisation_may_use_and_of_artefacts_take_list_parameters(api):
    """aps/alltouse, smps/alltouse and a transaction's artefacts are lists like any other:
    limit, cursor, filter, search and sort apply, and a bad one is refused."""
    org = await api.org(ALICE)
    sender = f"0088:{gln(95)}"
    await receiving_participant(api, org, sender, ALICE)
    base = f"/orgs/{org['id']}"
    _, aps = await api.call("GET", f"{base}/aps/alltouse", as_=ALICE)
    sent = await api.send(ALICE, org["id"], aps["items"][0]["id"], make_sbd(sender=sender))
    # a SHARED organisation may use the operator's TEST and PROD SMPs and access points
    status, asked = await api.call(
        "PUT",
        base,
        as_=ALICE,
        json={
            "contacts": [{"name": "B", "email": "b@example.com", "contactType": "BUSINESS"}],
            "modeChangeRequest": "SHARED",
        },
    )
    assert status == 200, asked
    status, granted = await api.call(
        "PUT", base, as_="root@example.com", superadmin=True, json={"organisationMode": "SHARED"}
    )
    assert status == 200, granted
    lists = {
        f"{base}/aps/alltouse": "environment:eq:PROD",
        f"{base}/smps/alltouse": "environment:eq:PROD",
        f"{base}/transactions/{sent['transactionId']}/artefacts": "type:eq:BUSINESS_DOCUMENT",
    }
    for path, one in lists.items():
        _, whole = await api.call("GET", path, as_=ALICE)
        assert len(whole["items"]) >= 2, (path, whole)
        assert await walk(api, path) == whole["items"], path
        assert await walk(api, path, sort="-id") == sorted(
            whole["items"], key=lambda r: r["id"], reverse=True
        ), path
        field, _, value = one.partition(":eq:")
        chosen = await walk(api, path, filter=one)
        assert chosen and all(r[field] == value for r in chosen), (path, chosen)
        assert len(chosen) < len(whole["items"]), path
        for query, code in (
            ("limit=0", "AT-1001"),
            ("filter=nope:eq:1", "AT-1004"),
            ("cursor=abc", "AT-1005"),
            ("sort=nope", "AT-1001"),
        ):
            status, body = await api.call("GET", f"{path}?{query}", as_=ALICE)
            assert status == 400 and body["code"] == code, (path, query, body)


def test_every_list_takes_the_list_parameters():
    for route in routes():
        if isinstance(route.response, ListReply):
            assert {"limit", "cursor", "filter", "search", "sort"} <= {
                q.name for q in route.query
            }, route.path


def test_every_list_documents_its_sorts():
    for route in routes():
        names = {q.name for q in route.query}
        if "cursor" not in names:
            continue
        if route.path in ("/document_types", "/participant_identifiers"):
            sort = next(q for q in route.query if q.name == "sort")
            assert "-state" in sort.schema["enum"]
            continue
        sort = next(q for q in route.query if q.name == "sort")
        assert "createdAt" in sort.schema["enum"] and "-createdAt" in sort.schema["enum"]
        newest_first = route.path.endswith(("/from_network", "/to_network", "/events"))
        expected = "-createdAt" if newest_first else ""
        assert sort.schema["default"] == (expected or "createdAt"), route.path
