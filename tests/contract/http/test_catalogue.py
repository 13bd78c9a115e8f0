"""The catalogue over HTTP: document types, identifier schemes, constants (issue 3)."""

import pytest

ALICE = "alice@example.com"


async def test_document_types_whole_list_and_exact_filters(api):
    status, body = await api.call("GET", "/document_types", as_=ALICE)
    assert status == 200 and body["nextCursor"] is None
    assert len(body["items"]) == 321
    first = body["items"][0]
    assert {"id", "name", "scheme", "value", "state", "category", "version", "process-ids"} <= set(
        first
    )
    assert first["version"] == "9.7"
    assert {d["scheme"] for d in body["items"]} == {"busdox-docid-qns", "net-doctype-wildcard"}
    assert all("issued-by-opennet" in d for d in body["items"])
    status, invoices = await api.call("GET", "/document_types?category=Invoice", as_=ALICE)
    assert len(invoices["items"]) == 90 and {d["category"] for d in invoices["items"]} == {
        "Invoice"
    }
    status, same = await api.call("GET", "/document_types?filter=category:eq:Invoice", as_=ALICE)
    assert same == invoices
    status, both = await api.call(
        "GET", "/document_types?category=Invoice&filter=state:eq:active", as_=ALICE
    )
    assert 0 < len(both["items"]) < 90 and {d["state"] for d in both["items"]} == {"active"}


async def test_document_type_by_id_and_unknown_id(api):
    _, body = await api.call("GET", "/document_types?limit=1", as_=ALICE)
    one = body["items"][0]
    assert body["nextCursor"]
    status, got = await api.call("GET", f"/document_types/{one['id']}", as_=ALICE)
    assert status == 200 and got == one
    status, err = await api.call("GET", "/document_types/nope", as_=ALICE)
    assert status == 404 and err["code"] == "AT-1040"


async def test_document_types_page_by_cursor_without_gaps(api):
    _, whole = await api.call("GET", "/document_types?filter=category:eq:Order", as_=ALICE)
    seen, cursor = [], None
    while True:
        path = "/document_types?filter=category:eq:Order&limit=5" + (
            f"&cursor={cursor}" if cursor else ""
        )
        status, page = await api.call("GET", path, as_=ALICE)
        assert status == 200
        seen += page["items"]
        cursor = page["nextCursor"]
        if not cursor:
            break
    assert seen == whole["items"]


async def test_search_and_in_filters(api):
    _, found = await api.call("GET", "/document_types?search=CREDIT%20NOTE", as_=ALICE)
    assert found["items"] and all(
        "credit note" in (d["name"] + d["value"]).lower() for d in found["items"]
    )
    _, either = await api.call(
        "GET", "/document_types?filter=category:in:Order|Catalogue", as_=ALICE
    )
    assert {d["category"] for d in either["items"]} == {"Order", "Catalogue"}
    assert len(either["items"]) == 18 + 6


@pytest.mark.parametrize(
    "query", ["filter=colour:eq:red", "filter=state:like:x", "filter=abstract:eq:maybe"]
)
async def test_bad_filters_name_the_problem(api, query):
    status, body = await api.call("GET", f"/document_types?{query}", as_=ALICE)
    assert status == 400 and body["code"] == "AT-1004"


async def test_participant_identifier_schemes_by_country(api):
    status, body = await api.call("GET", "/participant_identifiers", as_=ALICE)
    assert status == 200 and len(body["items"]) == 105
    _, se = await api.call("GET", "/participant_identifiers?filter=country:eq:SE", as_=ALICE)
    assert se["items"] and {s["country"] for s in se["items"]} == {"SE"}
    assert "0007" in {s["iso6523"] for s in se["items"]}


async def test_identifier_scheme_records_are_camel_case_and_old_filter_keys_still_work(api):
    _, body = await api.call("GET", "/participant_identifiers", as_=ALICE)
    keys = {k for s in body["items"] for k in s}
    assert {"schemeid", "iso6523", "country", "schemeName", "initialRelease", "state"} <= keys
    assert {"issuingAgency", "validationRules", "registrable"} <= keys
    assert not [k for k in keys if "-" in k]
    _, new = await api.call(
        "GET", "/participant_identifiers?filter=schemeName:eq:Global%20Location%20Number", as_=ALICE
    )
    _, old = await api.call(
        "GET",
        "/participant_identifiers?filter=scheme-name:eq:Global%20Location%20Number",
        as_=ALICE,
    )
    assert [s["iso6523"] for s in new["items"]] == ["0088"] and old == new
    _, by_agency = await api.call(
        "GET", "/participant_identifiers?filter=issuing-agency:eq:GS1%20GLN", as_=ALICE
    )
    assert [s["iso6523"] for s in by_agency["items"]] == ["0088"]


async def test_the_networks_real_spellings_are_accepted_in_catalogue_filters(api):
    _, ours = await api.call("GET", "/document_types?scheme=net-doctype-wildcard", as_=ALICE)
    assert len(ours["items"]) == 31
    for query in (
        "scheme=peppol-doctype-wildcard",
        "filter=scheme:eq:peppol-doctype-wildcard",
        "filter=scheme:in:peppol-doctype-wildcard|nothing",
    ):
        status, theirs = await api.call("GET", f"/document_types?{query}", as_=ALICE)
        assert status == 200 and theirs == ours, query  # answered in the net- form
    _, issued = await api.call("GET", "/document_types?filter=issued-by-opennet:eq:true", as_=ALICE)
    _, real = await api.call(
        "GET", "/document_types?filter=issued-by-openpeppol:eq:true", as_=ALICE
    )
    assert 0 < len(real["items"]) < 321 and real == issued
    assert all("issued-by-openpeppol" not in d for d in real["items"])


async def test_constants(api):
    status, body = await api.call("GET", "/constants", as_=ALICE)
    assert status == 200
    for key in (
        "DOCUMENT_TYPE_CATEGORIES",
        "DOCUMENT_TYPE_STATES",
        "PROCESSES",
        "TRANSPORT_PROFILES",
        "ORGANISATION_MODES",
        "WEBHOOK_EVENTS",
        "MLS_RESPONSE_CODES",
    ):
        assert key in body["keys"]
    _, cats = await api.call("GET", "/constants?key=DOCUMENT_TYPE_CATEGORIES", as_=ALICE)
    assert len(cats["values"]) == 26 and "Invoice" in cats["values"]
    _, profiles = await api.call("GET", "/constants?key=TRANSPORT_PROFILES", as_=ALICE)
    assert "net-transport-as4-v2_0" in {p["profileId"] for p in profiles["values"]}
    _, events = await api.call("GET", "/constants?key=WEBHOOK_EVENTS", as_=ALICE)
    assert "transaction.received" in events["values"]
    status, err = await api.call("GET", "/constants?key=NOPE", as_=ALICE)
    assert status == 404 and err["code"] == "AT-1040"


async def test_the_catalogue_needs_credentials_and_accepts_an_api_key(api):
    status, body = await api.call("GET", "/document_types")
    assert status == 401 and body["code"] == "AT-1018"
    org = await api.org(ALICE)
    _, key = await api.call(
        "POST",
        f"/orgs/{org['id']}/api_keys",
        as_=ALICE,
        json={"name": "k", "expires": "2999-01-01T00:00:00Z", "role": "orgmember"},
    )
    status, _ = await api.call(
        "GET", "/participant_identifiers?filter=country:eq:SE", key=key["key"]
    )
    assert status == 200


# --- the cache of rendered answers -----------------------------------------------------------


async def test_equivalent_queries_share_one_cached_answer(start_api):
    api = await start_api("memory")
    cache = api.container.render_cache()
    same = [
        "/document_types",
        *(f"/document_types?junk{i}=x&utm_source={i}" for i in range(300)),
    ]
    for path in same:
        assert (await api.call("GET", path, as_=ALICE))[0] == 200
    assert len(cache) == 1
    groups = {
        "/document_types": [
            "search=invoice&filter=state:eq:active&filter=category:eq:Invoice&limit=5",
            "limit=05&filter=category:eq:Invoice&search=%20INVOICE%20&filter=state:eq:active",
            "category=Invoice&filter=state:eq:active&limit=5&search=Invoice&x=1",
            "filter=category:eq:Invoice&filter=state:eq:active&filter=state:eq:active"
            "&search=InVoIcE&limit=0005",
        ],
        "/participant_identifiers": [
            "filter=country:eq:SE",
            "filter=country:eq:SE&filter=country:eq:SE&cursor=",
            "cursor=&filter=country:eq:SE&search=%20",
        ],
    }
    for path, group in groups.items():
        status, first = await api.call("GET", f"{path}?{group[0]}", as_=ALICE)
        assert status == 200 and first["items"]
        before = len(cache)
        for query in group[1:]:
            status, body = await api.call("GET", f"{path}?{query}", as_=ALICE)
            assert status == 200 and body == first, query
        assert len(cache) == before, group


async def test_many_distinct_queries_keep_the_cache_within_its_bound(start_api):
    """Every distinct limit is a distinct answer of up to the whole list (~150 kB): those
    below would hold about 20 MB unbounded; long searches make large keys."""
    from fourcorner.entrypoints.http.catalogue_handlers import CACHE_BYTES

    api = await start_api("memory")
    cache = api.container.render_cache()
    for limit in range(321, 190, -1):
        status, _ = await api.call("GET", f"/document_types?limit={limit}", as_=ALICE)
        assert status == 200
        assert cache.size <= CACHE_BYTES
    assert len(cache) < 131, (len(cache), cache.size)
    for i in range(300):
        path = f"/document_types?search=zz{'q' * 4000}{i}"
        assert (await api.call("GET", path, as_=ALICE))[0] == 200
        assert cache.size <= CACHE_BYTES
