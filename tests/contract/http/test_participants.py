"""Participants, SMPs, access points and certificates over HTTP (issue 4), and the built-in
SMP read by an independent verifier."""

from __future__ import annotations

import asyncio
import urllib.parse
from datetime import UTC, datetime, timedelta

from cryptography import x509
from lxml import etree
from signxml import XMLVerifier

from fourcorner.adapters.pki import cert_pem, issue_leaf, key_pem, new_ca
from fourcorner.adapters.pki.testpki import load_test_pki
from fourcorner.application.collections import PARTICIPANTS
from fourcorner.domain.checkdigits import gs1_check_digit
from fourcorner.entrypoints.container import resolve

ALICE, BOB, ROOT = "alice@example.com", "bob@example.com", "root@example.com"
SMP_NS = "http://busdox.org/serviceMetadata/publishing/1.0/"


def gln(n: int) -> str:
    payload = f"730001{n:06d}"
    return payload + str(gs1_check_digit(payload))


async def to_use(api, org_id, who=ALICE):
    _, smps = await api.call("GET", f"/orgs/{org_id}/smps/alltouse", as_=who)
    _, aps = await api.call("GET", f"/orgs/{org_id}/aps/alltouse", as_=who)
    return smps["items"], aps["items"]


async def participant(api, org_id, ident, env="TEST", who=ALICE, **extra):
    smps, aps = await to_use(api, org_id, who)
    smp = next(s for s in smps if s["environment"] == env)
    ap = next(a for a in aps if a["environment"] == env)
    body = {
        "name": "Receiver",
        "participantIdentifier": ident,
        "smpRef": smp["id"],
        "apRef": ap["id"],
        "transportProfile": "net-transport-as4-v2_0",
        **extra,
    }
    return await api.call("POST", f"/orgs/{org_id}/participants", as_=who, json=body)


async def whitelabel(api, who=ALICE, legal_id="2120000787"):
    org = await api.org(who, legal_id=legal_id)
    contact = {"name": "B", "email": "b@example.com", "contactType": "BUSINESS"}
    await api.call(
        "PUT",
        f"/orgs/{org['id']}",
        as_=who,
        json={"contacts": [contact], "modeChangeRequest": "WHITELABEL"},
    )
    status, body = await api.call(
        "PUT",
        f"/orgs/{org['id']}",
        as_=ROOT,
        superadmin=True,
        json={"organisationMode": "WHITELABEL"},
    )
    assert status == 200, body
    return org


def pki(api):
    return load_test_pki(api.container.settings().data_dir / "pki")


def ap_certificate(api, name, cn, days, **fields):
    """An AP certificate with CN ``cn`` issued under the test PKI's AP CA, valid ``days``
    from now, and the upload body for it (``fields`` added); returns (body, cert, key)."""
    t = pki(api)
    now = datetime.now(UTC)
    cert, key = issue_leaf(
        t.ap_ca,
        t.ap_ca_key,
        cn,
        not_before=now - timedelta(hours=1),
        not_after=now + timedelta(days=days),
    )
    body = {
        "name": name,
        **fields,
        "service": "AP",
        "environment": "test",
        "certPem": cert_pem(cert),
        "caChainPem": t.ap_chain_pem,
        "privateKeyPem": key_pem(key),
    }
    return body, cert, key


async def test_the_typical_flow_to_receive_documents(api):
    org = await api.org(ALICE)
    # 1. SMPs and APs to use: a DEMO organisation sees the operator's test services only
    smps, aps = await to_use(api, org["id"])
    assert [s["environment"] for s in smps] == ["TEST"]
    assert [a["environment"] for a in aps] == ["TEST"]
    assert aps[0]["transportProfile"] == "net-transport-as4-v2_0" and aps[0]["apUrl"].startswith(
        "http"
    )
    # 2. identifier schemes of a country
    _, schemes = await api.call("GET", "/participant_identifiers?filter=country:eq:SE", as_=ALICE)
    assert "0007" in {s["iso6523"] for s in schemes["items"]}
    # 3. the participant
    ident = f"0088:{gln(1)}"
    status, p = await participant(api, org["id"], ident)
    assert status == 201, p
    assert p["type"] == "PARTICIPANT" and p["status"] == "ACTIVE" and p["environment"] == "TEST"
    assert p["participantIdentifier"] == ident and p["smpRef"] == smps[0]["id"]
    # 4. directory publication
    status, body = await api.call(
        "POST",
        f"/orgs/{org['id']}/participants/request-pd-publish",
        as_=ALICE,
        json={"ids": [p["id"]]},
    )
    assert status == 200 and body == {"ids": [p["id"]]}
    _, got = await api.call("GET", f"/orgs/{org['id']}/participants/{p['id']}", as_=ALICE)
    assert got["directory"]["state"] == "PUBLISHED" and got["directory"]["publishedAt"]
    # 5. a document type and one of its processes
    _, docs = await api.call(
        "GET", "/document_types?category=Invoice&filter=state:eq:active", as_=ALICE
    )
    doc = next(d for d in docs["items"] if "billing:3.0" in d["value"])
    proc = doc["process-ids"][0]
    entry = {"documentId": doc["id"], "processId": f"{proc['scheme']}::{proc['value']}"}
    path = f"/orgs/{org['id']}/participants/{p['id']}/supported_document_types"
    status, body = await api.call("PUT", path, as_=ALICE, json={"supportedDocumentTypes": [entry]})
    assert status == 200, body
    status, listed = await api.call("GET", path, as_=ALICE)
    assert listed == [{**entry, "exactMatchOnly": False}]
    # a GET answer is accepted back unchanged
    status, _ = await api.call("PUT", path, as_=ALICE, json={"supportedDocumentTypes": listed})
    assert status == 200
    # the SMP publishes it, signed
    await check_smp(api, ident, doc, proc)


async def check_smp(api, ident, doc, proc):
    pid = urllib.parse.quote(f"iso6523-actorid-upis::{ident}", safe="")
    resp = await api.client.get(f"/smp/test/{pid}")
    assert resp.status == 200 and resp.content_type == "text/xml"
    group = etree.fromstring(await resp.read())
    hrefs = [e.get("href") for e in group.iter(f"{{{SMP_NS}}}ServiceMetadataReference")]
    assert len(hrefs) == 1 and hrefs[0].startswith("http") and "%3A%3A" in hrefs[0]
    path = urllib.parse.urlsplit(hrefs[0]).path
    resp = await api.client.get(path)
    assert resp.status == 200
    signed = await resp.read()
    smp_cert = pki(api).smp_certificate
    from cryptography.hazmat.primitives.serialization import Encoding

    verified = XMLVerifier().verify(signed, x509_cert=smp_cert.public_bytes(Encoding.PEM).decode())
    root = verified.signed_xml
    ns = {"smp": SMP_NS, "id": "http://busdox.org/transport/identifiers/1.0/"}
    assert root.findtext(".//id:DocumentIdentifier", namespaces=ns) == doc["value"]
    assert root.findtext(".//id:ProcessIdentifier", namespaces=ns) == proc["value"]
    endpoint = root.find(".//smp:Endpoint", namespaces=ns)
    assert endpoint.get("transportProfile") == "peppol-transport-as4-v2_0"
    der = root.findtext(".//smp:Certificate", namespaces=ns)
    import base64

    ap_cert = x509.load_der_x509_certificate(base64.b64decode(der))
    assert ap_cert == pki(api).ap_certificate
    # the same participant in another case is the same participant; unknown ones are 404
    assert (await api.client.get(f"/smp/test/{pid.upper().replace('%3A', '%3A')}")).status in (
        200,
        404,
    )
    assert (
        await api.client.get("/smp/test/iso6523-actorid-upis%3A%3A0088%3A0000000000000")
    ).status == 404
    resp = await api.client.get(f"/smp/test/{pid}/services/busdox-docid-qns%3A%3Anope")
    assert resp.status == 404
    resp = await api.client.get(f"/smp/test/businesscard/{pid}")
    assert resp.status == 200 and b"BusinessCard" in await resp.read()


async def test_each_environment_has_its_own_smp_serving_only_its_participants(api):
    org = await whitelabel(api, BOB, legal_id="5560360793")
    _, smps = await api.call("GET", f"/orgs/{org['id']}/smps/alltouse", as_=BOB)
    base = api.container.settings().base_url
    urls = {s["environment"]: s["url"] for s in smps["items"]}
    assert urls == {"TEST": f"{base}/smp/test", "PROD": f"{base}/smp/prod"}
    _, docs = await api.call("GET", "/document_types?filter=state:eq:active", as_=BOB)
    doc = next(d for d in docs["items"] if "billing:3.0" in d["value"])
    proc = doc["process-ids"][0]
    entry = {"documentId": doc["id"], "processId": f"{proc['scheme']}::{proc['value']}"}
    document = urllib.parse.quote(f"{doc['scheme']}::{doc['value']}", safe="")
    for n, (env, other) in enumerate((("TEST", "PROD"), ("PROD", "TEST"))):
        ident = f"0088:{gln(40 + n)}"
        status, p = await participant(api, org["id"], ident, env=env, who=BOB)
        assert status == 201 and p["environment"] == env, p
        path = f"/orgs/{org['id']}/participants/{p['id']}/supported_document_types"
        status, _ = await api.call("PUT", path, as_=BOB, json={"supportedDocumentTypes": [entry]})
        assert status == 200
        pid = urllib.parse.quote(f"iso6523-actorid-upis::{ident}", safe="")
        own, elsewhere = f"/smp/{env.lower()}", f"/smp/{other.lower()}"
        resp = await api.client.get(f"{own}/{pid}")
        assert resp.status == 200
        group = etree.fromstring(await resp.read())
        [href] = [e.get("href") for e in group.iter(f"{{{SMP_NS}}}ServiceMetadataReference")]
        assert href == f"{base}{own}/{pid}/services/{document}"
        assert (await api.client.get(f"{own}/{pid}/services/{document}")).status == 200
        assert (await api.client.get(f"{own}/businesscard/{pid}")).status == 200
        # the other environment's SMP does not know it
        for tail in (pid, f"{pid}/services/{document}", f"businesscard/{pid}"):
            resp = await api.client.get(f"{elsewhere}/{tail}")
            assert resp.status == 404, (elsewhere, tail)
    # neither the SMP root nor an unknown environment is an SMP
    for path in (f"/smp/{pid}", f"/smp/acc/{pid}", f"/smp/TEST/{pid}"):
        assert (await api.client.get(path)).status == 404, path


async def test_identifiers_are_unique_across_organisations_and_validated(api):
    a = await api.org(ALICE)
    b = await api.org(BOB, legal_id="5560360793")
    ident = f"0088:{gln(2)}"
    status, _ = await participant(api, a["id"], ident)
    assert status == 201
    status, body = await participant(api, b["id"], ident.upper(), who=BOB)
    assert status == 409 and ident in body["error"]
    status, body = await participant(api, a["id"], "0088:7300010000002")
    assert status == 400 and body["code"] == "AT-1006" and "check digit" in body["error"]
    status, body = await participant(api, a["id"], "9999:abc")
    assert status == 400 and body["code"] == "AT-1006"


async def test_an_identifier_is_unique_per_environment(api):
    """As in the network (an SML per environment): the same identifier once in TEST and once
    in PROD, each published by its own environment's SMP; a second time in one is 409."""
    org = await whitelabel(api, BOB, legal_id="5560360793")
    other = await api.org(ALICE)
    ident = f"0088:{gln(44)}"
    created = {}
    for env in ("TEST", "PROD"):
        status, p = await participant(api, org["id"], ident, env=env, who=BOB)
        assert status == 201 and p["environment"] == env, p
        created[env] = p["id"]
    assert created["TEST"] != created["PROD"]
    pid = urllib.parse.quote(f"iso6523-actorid-upis::{ident}", safe="")
    for env in ("test", "prod"):
        assert (await api.client.get(f"/smp/{env}/{pid}")).status == 200, env
    for env in ("TEST", "PROD"):
        status, body = await participant(api, org["id"], ident.upper(), env=env, who=BOB)
        assert status == 409 and body["code"] == "AT-1090", body
        assert f"{ident.upper()} is registered already in {env}" in body["error"], body
    status, body = await participant(api, other["id"], ident, who=ALICE)
    assert status == 409 and "registered already in TEST" in body["error"], body
    _, listed = await api.call("GET", f"/orgs/{org['id']}/participants", as_=BOB)
    assert sorted(x["environment"] for x in listed["items"]) == ["PROD", "TEST"]
    # removing one leaves the other, in its SMP
    path = f"/orgs/{org['id']}/participants/batch-delete"
    status, body = await api.call("POST", path, as_=BOB, json={"ids": [created["TEST"]]})
    assert status == 200, body
    assert (await api.client.get(f"/smp/test/{pid}")).status == 404
    assert (await api.client.get(f"/smp/prod/{pid}")).status == 200


async def test_concurrent_creates_of_one_identifier_keep_one_per_environment(two_servers):
    """Round after round, one new identifier created at once by two organisations through two
    servers on one database, in TEST and in PROD: exactly one create wins in each
    environment, every other is 409 (the unique group holds under concurrency)."""
    first, second = two_servers
    a = await whitelabel(first, ALICE)
    b = await whitelabel(first, BOB, legal_id="5560360793")
    bodies = {}
    for org, who in ((a, ALICE), (b, BOB)):
        smps, aps = await to_use(first, org["id"], who)
        for env in ("TEST", "PROD"):
            smp = next(x["id"] for x in smps if x["environment"] == env)
            ap = next(x["id"] for x in aps if x["environment"] == env)
            bodies[org["id"], env] = {"name": "Racer", "smpRef": smp, "apRef": ap}
    callers = [(first, a, ALICE), (second, b, BOB), (second, a, ALICE), (first, b, BOB)]
    rounds = 15
    for n in range(rounds):
        ident = f"0088:{gln(500 + n)}"
        attempts = [
            (
                env,
                server.call(
                    "POST",
                    f"/orgs/{org['id']}/participants",
                    as_=who,
                    json=bodies[org["id"], env] | {"participantIdentifier": ident},
                ),
            )
            for server, org, who in callers
            for env in ("TEST", "PROD")
        ]
        answers = await asyncio.gather(*(call for _, call in attempts))
        for env in ("TEST", "PROD"):
            mine = [answer for (e, _), answer in zip(attempts, answers, strict=True) if e == env]
            assert sorted(status for status, _ in mine) == [201, 409, 409, 409], (n, env, mine)
            assert all(body["code"] == "AT-1090" for status, body in mine if status == 409)
    ctx = await resolve(first.container.context)
    async with ctx.uow() as uow:
        stored = await uow.repository(PARTICIPANTS).all()
    racers = [p for p in stored if p.name == "Racer"]
    assert len(racers) == 2 * rounds
    assert len({(p.identifier_key, p.environment) for p in racers}) == 2 * rounds


async def test_a_demo_organisation_cannot_use_production_or_upload_certificates(api):
    org = await api.org(ALICE)
    w = await whitelabel(api, BOB, legal_id="5560360793")
    _, w_smps = await api.call("GET", f"/orgs/{w['id']}/smps/alltouse", as_=BOB)
    prod_smp = next(s for s in w_smps["items"] if s["environment"] == "PROD")
    _, aps = await api.call("GET", f"/orgs/{org['id']}/aps/alltouse", as_=ALICE)
    status, body = await api.call(
        "POST",
        f"/orgs/{org['id']}/participants",
        as_=ALICE,
        json={
            "name": "x",
            "participantIdentifier": f"0088:{gln(3)}",
            "smpRef": prod_smp["id"],
            "apRef": aps["items"][0]["id"],
        },
    )
    assert status == 400 and "$.smpRef" in [d["field"] for d in body["details"]]
    status, body = await api.call("GET", f"/orgs/{org['id']}/certificates", as_=ALICE)
    assert status == 200 and body["items"] == []
    status, body = await api.call(
        "POST",
        f"/orgs/{org['id']}/certificates",
        as_=ALICE,
        json={
            "name": "c",
            "service": "AP",
            "environment": "test",
            "certPem": "x",
            "privateKeyPem": "y",
        },
    )
    assert status == 403 and body["code"] == "AT-1021"


async def test_whitelabel_certificates_and_own_access_points(api):
    org = await whitelabel(api)
    body, cert, key = ap_certificate(
        api,
        "our AP",
        "POP000777",
        90,
        description="test",
        transportProfile="net-transport-as4-v2_0",
    )
    status, created = await api.call(
        "POST", f"/orgs/{org['id']}/certificates", as_=ALICE, json=body
    )
    assert status == 201, created
    assert (
        created["type"] == "CERTIFICATE"
        and "privateKeyPem" not in created
        and "sealedKey" not in created
    )
    assert created["validUntil"].startswith(cert.not_valid_after_utc.strftime("%Y-%m-%dT%H:%M"))
    assert key_pem(key) not in str(created)
    _, got_org = await api.call("GET", f"/orgs/{org['id']}", as_=ALICE)
    assert got_org["certificates"] == [{"name": "our AP", "type": "TEST", "id": created["id"]}]
    # the organisation's own access point, with a URL under the AP host
    status, ap = await api.call(
        "POST",
        f"/orgs/{org['id']}/aps",
        as_=ALICE,
        json={
            "name": "AP",
            "certificateRef": created["id"],
            "environment": "TEST",
            "transportProfile": "net-transport-as4-v2_0",
        },
    )
    assert status == 201, ap
    assert ap["type"] == "AP" and ap["apUrl"].endswith(f"/{org['id']}/{ap['id']}")
    smps, aps = await to_use(api, org["id"])
    assert {a["id"] for a in aps} >= {ap["id"]} and {s["environment"] for s in smps} == {
        "TEST",
        "PROD",
    }
    status, p = await participant(api, org["id"], f"0088:{gln(4)}")
    assert status == 201
    status, p2 = await api.call(
        "PUT", f"/orgs/{org['id']}/participants/{p['id']}", as_=ALICE, json={"apRef": ap["id"]}
    )
    assert status == 200 and p2["apRef"] == ap["id"]
    # in use: neither the AP nor its certificate can go
    status, body = await api.call(
        "POST", f"/orgs/{org['id']}/aps/batch-delete", as_=ALICE, json={"ids": [ap["id"]]}
    )
    assert status == 409 and body["code"] == "AT-1095"
    status, body = await api.call(
        "POST",
        f"/orgs/{org['id']}/certificates/batch_delete",
        as_=ALICE,
        json={"ids": [created["id"]]},
    )
    assert status == 409
    # once the participant is gone, both can
    status, _ = await api.call(
        "POST", f"/orgs/{org['id']}/participants/batch-delete", as_=ALICE, json={"ids": [p["id"]]}
    )
    assert status == 200
    status, body = await api.call(
        "POST", f"/orgs/{org['id']}/aps/batch-delete", as_=ALICE, json={"ids": [ap["id"]]}
    )
    assert status == 200 and body == {"ids": [ap["id"]]}
    status, body = await api.call(
        "POST",
        f"/orgs/{org['id']}/certificates/batch_delete",
        as_=ALICE,
        json={"ids": [created["id"]]},
    )
    assert status == 200


async def test_certificate_refusals_name_the_problem(api):
    org = await whitelabel(api)
    t = pki(api)
    now = datetime.now(UTC)
    good, key = issue_leaf(
        t.ap_ca,
        t.ap_ca_key,
        "POP000778",
        not_before=now - timedelta(hours=1),
        not_after=now + timedelta(days=9),
    )
    expired, ekey = issue_leaf(
        t.ap_ca,
        t.ap_ca_key,
        "POP000779",
        not_before=now - timedelta(days=9),
        not_after=now - timedelta(days=1),
    )
    rogue_ca, rogue_key = new_ca("rogue CA")
    rogue, rkey = issue_leaf(
        rogue_ca,
        rogue_key,
        "POP000780",
        not_before=now - timedelta(hours=1),
        not_after=now + timedelta(days=9),
    )
    _, other_key = issue_leaf(
        t.ap_ca,
        t.ap_ca_key,
        "POP000781",
        not_before=now - timedelta(hours=1),
        not_after=now + timedelta(days=9),
    )
    cases = [
        ("not a certificate", "x", key_pem(key), "$.certPem"),
        ("expired", cert_pem(expired), key_pem(ekey), "$.certPem"),
        ("untrusted", cert_pem(rogue), key_pem(rkey), "$.caChainPem"),
        ("wrong key", cert_pem(good), key_pem(other_key), "$.privateKeyPem"),
    ]
    for label, pem, kpem, field in cases:
        status, body = await api.call(
            "POST",
            f"/orgs/{org['id']}/certificates",
            as_=ALICE,
            json={
                "name": label,
                "service": "AP",
                "environment": "test",
                "certPem": pem,
                "caChainPem": t.ap_chain_pem,
                "privateKeyPem": kpem,
            },
        )
        assert status == 400, (label, body)
        assert field in [d["field"] for d in body["details"]], (label, body)
    _, listed = await api.call("GET", f"/orgs/{org['id']}/certificates", as_=ALICE)
    assert listed["items"] == []


async def test_supported_document_type_refusals(api):
    org = await api.org(ALICE)
    status, p = await participant(api, org["id"], f"0088:{gln(5)}")
    path = f"/orgs/{org['id']}/participants/{p['id']}/supported_document_types"
    _, docs = await api.call("GET", "/document_types?filter=state:eq:active&limit=1", as_=ALICE)
    doc = docs["items"][0]
    proc = f"{doc['process-ids'][0]['scheme']}::{doc['process-ids'][0]['value']}"
    _, removed = await api.call("GET", "/document_types?filter=state:eq:removed&limit=1", as_=ALICE)
    r = removed["items"][0]
    bad = [
        ({"documentId": "nope", "processId": proc}, "$.supportedDocumentTypes[0].documentId"),
        (
            {"documentId": doc["id"], "processId": "cenbii-procid-ubl::nope"},
            "$.supportedDocumentTypes[0].processId",
        ),
        (
            {
                "documentId": r["id"],
                "processId": f"{r['process-ids'][0]['scheme']}::{r['process-ids'][0]['value']}",
            },
            "$.supportedDocumentTypes[0].documentId",
        ),
    ]
    for entry, field in bad:
        status, body = await api.call(
            "PUT", path, as_=ALICE, json={"supportedDocumentTypes": [entry]}
        )
        assert status == 400 and field in [d["field"] for d in body["details"]], body
    dup = {"documentId": doc["id"], "processId": proc}
    status, body = await api.call(
        "PUT", path, as_=ALICE, json={"supportedDocumentTypes": [dup, dup]}
    )
    assert status == 400
    status, body = await api.call("PUT", path, as_=ALICE, json={"supportedDocumentTypes": []})
    assert status == 200 and body == []


async def test_participants_of_another_org_are_not_found_and_lists_filter(api):
    a = await api.org(ALICE)
    b = await api.org(BOB, legal_id="5560360793")
    _, pa = await participant(api, a["id"], f"0088:{gln(6)}", name="Alpha")
    _, pb = await participant(api, b["id"], f"0088:{gln(7)}", who=BOB)
    status, _ = await api.call("GET", f"/orgs/{a['id']}/participants/{pb['id']}", as_=ALICE)
    assert status == 404
    status, listed = await api.call("GET", f"/orgs/{a['id']}/participants?search=alpha", as_=ALICE)
    assert [x["id"] for x in listed["items"]] == [pa["id"]]
    status, listed = await api.call(
        "GET",
        f"/orgs/{a['id']}/participants?filter=environment:eq:TEST&filter=apRef:eq:{pa['apRef']}",
        as_=ALICE,
    )
    assert [x["id"] for x in listed["items"]] == [pa["id"]]
    status, body = await api.call(
        "POST", f"/orgs/{a['id']}/participants/batch-delete", as_=ALICE, json={"ids": [pb["id"]]}
    )
    assert status == 404 and body["code"] == "AT-1040"


async def receiving_invoices(api, org_id, ident, who=ALICE):
    """The TEST participant ``ident`` made in ``org_id`` by ``who`` and given an invoice:
    the participant, the path of its supported document types, and its ServiceGroup's and
    the invoice's SignedServiceMetadata's paths in the built-in SMP."""
    status, p = await participant(api, org_id, ident, who=who)
    assert status == 201, p
    _, docs = await api.call("GET", "/document_types?filter=state:eq:active", as_=who)
    doc = next(d for d in docs["items"] if "billing:3.0" in d["value"])
    proc = doc["process-ids"][0]
    entry = {"documentId": doc["id"], "processId": f"{proc['scheme']}::{proc['value']}"}
    path = f"/orgs/{org_id}/participants/{p['id']}/supported_document_types"
    status, _ = await api.call("PUT", path, as_=who, json={"supportedDocumentTypes": [entry]})
    assert status == 200
    pid = urllib.parse.quote(f"iso6523-actorid-upis::{ident}", safe="")
    document = urllib.parse.quote(f"{doc['scheme']}::{doc['value']}", safe="")
    return p, path, f"/smp/test/{pid}", f"/smp/test/{pid}/services/{document}"


async def published_contacts(api, org_id, ident):
    """The TechnicalContactUrl of each endpoint the built-in SMP serves for the participant
    ``ident`` (created in ``org_id`` and given an invoice)."""
    *_, metadata = await receiving_invoices(api, org_id, ident, who=BOB)
    resp = await api.client.get(metadata)
    assert resp.status == 200
    root = etree.fromstring(await resp.read())
    return [e.text or "" for e in root.iter(f"{{{SMP_NS}}}TechnicalContactUrl")]


async def test_an_endpoint_without_a_technical_contact_publishes_the_operators(start_api):
    """NETWORK.md's checklist: every endpoint carries a TechnicalContactUrl. An organisation
    with no technical contact and no website gets FOURCORNER_SMP_TECHNICAL_CONTACT's; one
    with its own keeps it; with the setting unset the element stays empty."""
    operator = "mailto:operations@ap.example"
    api = await start_api("sqlite", smp_technical_contact=operator)
    bare = await whitelabel(api, BOB, legal_id="5560360793")
    assert await published_contacts(api, bare["id"], f"0088:{gln(50)}") == [operator]
    own = await whitelabel(api, BOB, legal_id="2120000787")
    technical = {
        "name": "Ops",
        "email": "tech@org.example",
        "webContactUrl": "https://org.example/support",
        "contactType": "TECHNICAL",
    }
    status, body = await api.call(
        "PUT", f"/orgs/{own['id']}", as_=BOB, json={"contacts": [*own["contacts"], technical]}
    )
    assert status == 200, body
    assert await published_contacts(api, own["id"], f"0088:{gln(51)}") == [
        "https://org.example/support"
    ]
    unset = await start_api("sqlite")
    bare = await whitelabel(unset, BOB, legal_id="5560360793")
    assert await published_contacts(unset, bare["id"], f"0088:{gln(52)}") == [""]
