"""The built-in SMP read by our lookup client over real HTTP, and SMP failures that leave the
database unchanged."""

from __future__ import annotations

import shutil
from urllib.parse import quote

import pytest

from fourcorner.adapters.memory.smp import InMemorySmpRegistrar
from fourcorner.adapters.smp import Problem, Trust
from fourcorner.adapters.smp.client import SmpLookupClient, SmpLookupError
from fourcorner.domain.errors import ServiceUnavailable
from fourcorner.domain.network_services import Environment
from fourcorner.entrypoints.container import build_container, web_app
from fourcorner.entrypoints.operator import issued_under

from .conftest import Api, settings_for
from .test_participants import ALICE, gln, participant, pki
from .test_transactions import INVOICE

TEST = Environment.TEST


async def test_the_lookup_client_reads_what_the_smp_serves(api):
    org = await api.org(ALICE)
    ident = f"0088:{gln(40)}"
    status, p = await participant(api, org["id"], ident)
    assert status == 201, p
    _, docs = await api.call(
        "GET", "/document_types?category=Invoice&filter=state:eq:active", as_=ALICE
    )
    doc = next(d for d in docs["items"] if d["scheme"] == "busdox-docid-qns")
    proc = doc["process-ids"][0]
    entry = {"documentId": doc["id"], "processId": f"{proc['scheme']}::{proc['value']}"}
    path = f"/orgs/{org['id']}/participants/{p['id']}/supported_document_types"
    await api.call("PUT", path, as_=ALICE, json={"supportedDocumentTypes": [entry]})

    base = str(api.client.make_url("/smp/test"))
    client = SmpLookupClient(base, api.container.network_trust())
    try:
        found = await client.endpoint(
            ident, (doc["scheme"], doc["value"]), (proc["scheme"], proc["value"]), environment=TEST
        )
        _, aps = await api.call("GET", f"/orgs/{org['id']}/aps/alltouse", as_=ALICE)
        assert found.url == aps["items"][0]["apUrl"]
        assert found.certificate == pki(api).ap_certificate
        with pytest.raises(SmpLookupError) as e:
            await client.endpoint(
                ident,
                (doc["scheme"], doc["value"]),
                ("cenbii-procid-ubl", "other"),
                environment=TEST,
            )
        assert e.value.permanent
        with pytest.raises(SmpLookupError) as e:
            await client.endpoint(
                f"0088:{gln(41)}",
                (doc["scheme"], doc["value"]),
                (proc["scheme"], proc["value"]),
                environment=TEST,
            )
        assert e.value.permanent
    finally:
        await client.aclose()
    # an SMP certificate is trusted only under the SMP CA: here, only under the AP CA
    under_ap_ca = issued_under([pki(api).ap_ca], pki(api).trust_anchors, "SMP")
    untrusting = SmpLookupClient(base, {TEST: Trust(smp=under_ap_ca, access_point=under_ap_ca)})
    try:
        with pytest.raises(SmpLookupError) as e:
            await untrusting.endpoint(
                ident,
                (doc["scheme"], doc["value"]),
                (proc["scheme"], proc["value"]),
                environment=TEST,
            )
        assert e.value.problem is Problem.SMP_UNTRUSTED
    finally:
        await untrusting.aclose()


async def test_malformed_identifiers_are_400_at_the_smp(api):
    status, _ = await api.call("GET", "/smp/test/not-an-identifier")
    assert status == 400
    # values outside the participant syntax (<4-digit ICD>:<1-130 of A-Z a-z 0-9 . _ ~ ->) are
    # unparsable, not unknown, in the ServiceGroup, the metadata and the business card alike
    doc = quote(f"busdox-docid-qns::{INVOICE}", safe="")
    for value in (
        "0088",
        "0088:",
        "88:5790000435975",
        "0088: 5790000435975",
        "0088:x y",
        "0088:" + "a" * 131,
    ):
        segment = quote(f"iso6523-actorid-upis::{value}", safe="")
        for path in (segment, f"{segment}/services/{doc}", f"businesscard/{segment}"):
            status, body = await api.call("GET", f"/smp/test/{path}")
            assert status == 400 and body["code"] == "AT-1001", (value, path, body)
    # a well-formed identifier nobody registered is unknown
    status, body = await api.call(
        "GET", f"/smp/test/{quote('iso6523-actorid-upis::0088:1', safe='')}"
    )
    assert status == 404 and body["code"] == "AT-1040", body


class FailingSmp(InMemorySmpRegistrar):
    """An external SMP that goes down once armed (adapters translate that to
    ServiceUnavailable)."""

    armed = False

    async def publish(self, uow, registration):
        if self.armed:
            raise ServiceUnavailable(reason="the SMP cannot be reached")
        await super().publish(uow, registration)


async def test_an_smp_failure_leaves_the_database_unchanged(tmp_path, aiohttp_client, shared_pki):
    shutil.copytree(shared_pki, tmp_path / "pki")
    smp = FailingSmp()
    container = build_container(settings_for("sqlite", tmp_path), smp_registrar=smp)
    client = await aiohttp_client(await web_app(container))
    smp.armed = True
    api = Api(client, container)
    org = await api.org(ALICE)
    status, body = await participant(api, org["id"], f"0088:{gln(42)}")
    assert status == 503 and body["code"] == "AT-1500"
    status, listed = await api.call("GET", f"/orgs/{org['id']}/participants", as_=ALICE)
    assert listed["items"] == []


@pytest.mark.parametrize("exact", [False, True])
async def test_a_wildcard_registration_is_published_and_found_as_the_network_says(api, exact):
    """A participant taking JP PINT invoices by wildcard: the SMP lists the document type with
    the ``*`` at the end of its customization id (``...billing-1@jp-1*::2.1``), and a sender
    of that document type, or of a more specific one (``...@jp-1@x-2``), is led to it; one of
    another customization id is told the receiver does not accept it. Registered for the exact
    value only, no more specific one is taken."""
    org = await api.org(ALICE)
    ident = f"0088:{gln(42 + exact)}"
    status, p = await participant(api, org["id"], ident)
    assert status == 201, p
    _, docs = await api.call("GET", "/document_types?scheme=net-doctype-wildcard", as_=ALICE)
    doc = next(
        d for d in docs["items"] if d["value"].endswith("##urn:peppol:pint:billing-1@jp-1::2.1")
    )
    proc = doc["process-ids"][0]
    entry = {
        "documentId": doc["id"],
        "processId": f"{proc['scheme']}::{proc['value']}",
        "exactMatchOnly": exact,
    }
    path = f"/orgs/{org['id']}/participants/{p['id']}/supported_document_types"
    status, body = await api.call("PUT", path, as_=ALICE, json={"supportedDocumentTypes": [entry]})
    assert status == 200, body
    starred = doc["value"].replace("@jp-1::2.1", "@jp-1*::2.1")
    base = str(api.client.make_url("/smp/test"))
    client = SmpLookupClient(base, api.container.network_trust())
    try:
        _, listed = await client.document_types(ident, TEST)
        assert listed == [("peppol-doctype-wildcard", doc["value"] if exact else starred)]
        process = (proc["scheme"], proc["value"])
        for value in (doc["value"], doc["value"].replace("@jp-1::", "@jp-1@x-2::")):
            if exact and value != doc["value"]:
                with pytest.raises(SmpLookupError) as e:
                    await client.endpoint(ident, (doc["scheme"], value), process, environment=TEST)
                assert e.value.problem is Problem.NOT_ACCEPTED
                continue
            found = await client.endpoint(ident, (doc["scheme"], value), process, environment=TEST)
            assert found.certificate == pki(api).ap_certificate, value
        with pytest.raises(SmpLookupError) as e:
            other = doc["value"].replace("@jp-1::", "@aunz-1::")
            await client.endpoint(ident, (doc["scheme"], other), process, environment=TEST)
        assert e.value.problem is Problem.NOT_ACCEPTED
    finally:
        await client.aclose()
