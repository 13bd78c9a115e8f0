"""The real network from the sender's side, over HTTP: receivers found through the SML
(dnsmasq on 127.0.0.1), endpoints trusted only under the network's AP CA, and
``GET /orgs/:orgId/lookup`` ("can they receive this?") answering what a send would meet."""

from __future__ import annotations

import base64
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
import pytest
from aiohttp import web
from cryptography.hazmat.primitives import serialization

from dnsmasq import Dnsmasq, Naptr
from fourcorner.adapters.pki.testpki import TestPki, issue_leaf, new_ca
from fourcorner.adapters.smp.discovery import sml_name
from fourcorner.adapters.smp.xml import parse_path_segment, service_group, signed_service_metadata
from fourcorner.application.collections import TRANSACTIONS
from fourcorner.domain.smp import Endpoint, ProcessEntry, ServiceEntry, SmpRegistration
from fourcorner.entrypoints.container import resolve
from sbd_factory import make_sbd

from .conftest import free_port
from .test_participants import ALICE, BOB, gln, pki
from .test_transactions import BILLING, INVOICE, receiving_participant, until

ZONE = "test.sml.test."
DOC_TYPE = f"busdox-docid-qns::{INVOICE}"


def naptr(participant: str, url: str) -> Naptr:
    return Naptr(sml_name("iso6523-actorid-upis", participant, ZONE), f"!^.*$!{url}!")


@attrs.define
class FakeNetwork:
    """Another service provider: an SMP signing with the network's SMP certificate, and an
    access point that records what reaches it."""

    registrations: dict[str, SmpRegistration] = attrs.Factory(dict)
    signer: Any = None
    received: list[bytes] = attrs.Factory(list)
    base: str = ""

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/smp/{participant}", self.group)
        app.router.add_get("/smp/{participant}/services/{document}", self.metadata)
        app.router.add_post("/as4", self.as4)
        return app

    def _registration(self, request: web.Request) -> SmpRegistration | None:
        segment = request.raw_path.split("/")[2]
        return self.registrations.get(parse_path_segment(segment)[1].lower())

    async def group(self, request: web.Request) -> web.Response:
        reg = self._registration(request)
        if reg is None:
            return web.Response(status=404)
        return web.Response(body=service_group(reg, self.base + "/smp"), content_type="text/xml")

    async def metadata(self, request: web.Request) -> web.Response:
        reg = self._registration(request)
        if reg is None:
            return web.Response(status=404)
        data = signed_service_metadata(reg, reg.services[0], *self.signer)
        return web.Response(body=data, content_type="text/xml")

    async def as4(self, request: web.Request) -> web.Response:
        self.received.append(await request.read())
        return web.Response(status=500)

    def register(self, participant: str, certificate_der: bytes) -> None:
        endpoint = Endpoint(
            transport_profile="peppol-transport-as4-v2_0",
            url=self.base + "/as4",
            certificate=base64.b64encode(certificate_der).decode(),
            description="another access point",
            technical_contact_url="https://ap.example/contact",
        )
        now = datetime.now(UTC)
        self.registrations[participant.lower()] = SmpRegistration(
            id=uuid.uuid4(),
            smp_id=uuid.uuid4(),
            participant=participant.lower(),
            services=(
                ServiceEntry(
                    "busdox-docid-qns",
                    INVOICE,
                    (ProcessEntry("cenbii-procid-ubl", BILLING, (endpoint,)),),
                ),
            ),
            created_at=now,
            last_modified_at=now,
        )


@pytest.fixture
async def network(aiohttp_server: Any) -> FakeNetwork:
    fake = FakeNetwork()
    server = await aiohttp_server(fake.app())
    fake.base = str(server.make_url("")).rstrip("/")
    return fake


def stranger_certificate() -> bytes:
    """An AP certificate from a root nobody trusts (with the seat id of a real one)."""
    root, root_key = new_ca("UNRELATED ROOT CA")
    now = datetime.now(UTC)
    cert, _ = issue_leaf(
        root,
        root_key,
        "PFC000001",
        not_before=now - timedelta(hours=1),
        not_after=now + timedelta(days=30),
    )
    return cert.public_bytes(serialization.Encoding.DER)


async def post(api: Any, org: dict[str, Any], sender: str, receiver: str) -> str:
    _, aps = await api.call("GET", f"/orgs/{org['id']}/aps/alltouse", as_=ALICE)
    status, body = await api.call(
        "POST",
        f"/orgs/{org['id']}/transactions?ap={aps['items'][0]['id']}",
        as_=ALICE,
        data=make_sbd(sender=sender, receiver=receiver, mls_type="ALWAYS_SEND"),
        headers={"Content-Type": "application/xml"},
    )
    assert status == 202, body
    return str(body["transactionId"])


async def finished(api: Any, org: dict[str, Any], tx_id: str, *, mls: bool = False) -> Any:
    async def done() -> Any:
        _, tx = await api.call("GET", f"/orgs/{org['id']}/transactions/{tx_id}", as_=ALICE)
        final = tx["transactionStatus"] in ("COMPLETED", "FAILED")
        return tx if final and (tx.get("mlsResponseCode") or not mls) else None

    return await until(done)


def signer_of(p: TestPki) -> tuple[Any, Any]:
    return p.smp_key, p.smp_certificate


# --- sending ------------------------------------------------------------------------------------


async def test_the_loop_finds_receivers_through_the_sml(start_api, dnsmasq: Dnsmasq) -> None:
    """Discovery by DNS for the document and for the message level status that comes back."""
    port = free_port()
    receiver = f"0088:{gln(301)}"
    smp = f"http://127.0.0.1:{port}/smp/test"  # the built-in SMP of TEST
    plain = f"0088:{gln(303)}"  # its SMP would be asked over plain http on the internet
    dnsmasq.start(
        [naptr(receiver, smp), naptr("0242:000001", smp), naptr(plain, "http://smp.example/")]
    )
    api = await start_api(
        "sqlite",
        workers=True,
        public=True,
        port=port,
        discovery="sml",
        sml_zone_test=ZONE,
        dns_nameservers=dnsmasq.nameserver,
        send_retry_delays="0.2",
    )
    a = await api.org(ALICE)
    b = await api.org(BOB, legal_id="5560360793")
    sender = f"0088:{gln(300)}"
    await receiving_participant(api, a, sender, ALICE)
    await receiving_participant(api, b, receiver, BOB)
    tx = await finished(api, a, await post(api, a, sender, receiver), mls=True)
    assert tx["transactionStatus"] == "COMPLETED", tx
    assert tx["mlsResponseCode"] == "AB"
    # a receiver the SML does not know fails for good, naming the environment
    unknown = await finished(api, a, await post(api, a, sender, f"0088:{gln(302)}"))
    assert unknown["serviceError"]["code"] == "TXE-1001", unknown
    assert "receiver not registered in TEST" in unknown["serviceError"]["message"]
    insecure = await finished(api, a, await post(api, a, sender, plain))
    assert insecure["serviceError"]["code"] == "TXE-1005", insecure


async def test_an_endpoint_certificate_from_an_unrelated_root_gets_nothing(
    start_api, network: FakeNetwork
) -> None:
    api = await start_api("sqlite", workers=True, public=True, smp_lookup_url=network.base + "/smp")
    network.signer = signer_of(pki(api))  # the SMP itself is the network's
    receiver = f"0088:{gln(310)}"
    network.register(receiver, stranger_certificate())
    a = await api.org(ALICE)
    sender = f"0088:{gln(311)}"
    await receiving_participant(api, a, sender, ALICE)
    tx = await finished(api, a, await post(api, a, sender, receiver))
    assert tx["transactionStatus"] == "FAILED", tx
    assert tx["serviceError"]["code"] == "TXE-1004"
    assert tx["serviceError"]["category"] == "SECURITY_ERROR"
    assert network.received == []  # nothing was encrypted for it, nothing was sent


async def test_an_smp_signed_under_another_root_is_not_believed(
    start_api, network: FakeNetwork
) -> None:
    api = await start_api("sqlite", workers=True, public=True, smp_lookup_url=network.base + "/smp")
    root, root_key = new_ca("UNRELATED ROOT CA")
    now = datetime.now(UTC)
    network.signer = tuple(
        reversed(
            issue_leaf(
                root,
                root_key,
                "SMP",
                not_before=now - timedelta(hours=1),
                not_after=now + timedelta(days=1),
            )
        )
    )
    receiver = f"0088:{gln(312)}"
    network.register(receiver, pki(api).ap_certificate.public_bytes(serialization.Encoding.DER))
    a = await api.org(ALICE)
    sender = f"0088:{gln(313)}"
    await receiving_participant(api, a, sender, ALICE)
    tx = await finished(api, a, await post(api, a, sender, receiver))
    assert tx["serviceError"]["code"] == "TXE-1002", tx
    assert network.received == []


# --- can they receive this? -----------------------------------------------------------------------


async def lookup(api: Any, org: dict[str, Any], query: str, **kw: Any) -> tuple[int, Any]:
    kw.setdefault("as_", ALICE)
    return await api.call("GET", f"/orgs/{org['id']}/lookup?{query}", **kw)


async def test_lookup_answers_what_a_send_would_meet(start_api) -> None:
    api = await start_api("sqlite", public=True)
    a = await api.org(ALICE)
    receiver = f"0088:{gln(320)}"
    await receiving_participant(api, a, receiver, ALICE)
    status, found = await lookup(api, a, f"participantId={receiver}&docTypeId={_q(DOC_TYPE)}")
    assert status == 200, found
    assert found["registered"] and found["canReceive"] and found["reason"] is None
    assert found["smpUrl"] == str(api.client.make_url("/smp/test")).rstrip("/")
    assert found["documentTypes"] == [DOC_TYPE]
    [endpoint] = found["endpoints"]
    _, aps = await api.call("GET", f"/orgs/{a['id']}/aps/alltouse", as_=ALICE)
    assert endpoint["url"] == aps["items"][0]["apUrl"]
    assert endpoint["transportProfile"] == "peppol-transport-as4-v2_0"
    assert "CN=PFC000001" in endpoint["certificateSubject"]
    assert endpoint["validUntil"].startswith(str(pki(api).ap_certificate.not_valid_after_utc.year))
    # without a document type: registration and the listed types
    status, brief = await lookup(api, a, f"participantId=iso6523-actorid-upis::{receiver}")
    assert status == 200 and brief["canReceive"] and brief["endpoints"] == []
    assert brief["documentTypes"] == [DOC_TYPE]
    # a document type it does not take
    other = "busdox-docid-qns::urn:example:Other##x::1.0"
    status, no = await lookup(api, a, f"participantId={receiver}&docTypeId={_q(other)}")
    assert status == 200 and no["registered"] and not no["canReceive"]
    assert "not for this document type" in no["reason"]
    # each environment has its own SMP: the TEST participant is not found in PROD's
    status, prod = await lookup(api, a, f"participantId={receiver}&environment=PROD")
    assert status == 200 and not prod["registered"] and not prod["canReceive"], prod
    # a participant nobody registered
    status, nobody = await lookup(api, a, f"participantId=0088:{gln(321)}")
    assert status == 200, nobody
    assert nobody == {
        "registered": False,
        "smpUrl": None,
        "documentTypes": [],
        "endpoints": [],
        "canReceive": False,
        "reason": nobody["reason"],
    }


async def test_lookup_with_an_api_key_and_the_environment(start_api, dnsmasq: Dnsmasq) -> None:
    port = free_port()
    receiver = f"0088:{gln(330)}"
    dnsmasq.start([naptr(receiver, f"http://127.0.0.1:{port}/smp/test")])
    api = await start_api(
        "sqlite",
        public=True,
        port=port,
        discovery="sml",
        sml_zone_test=ZONE,
        sml_zone_prod="prod.sml.test.",
        dns_nameservers=dnsmasq.nameserver,
    )
    a = await api.org(ALICE)
    await receiving_participant(api, a, receiver, ALICE)
    _, made = await api.call(
        "POST",
        f"/orgs/{a['id']}/api_keys",
        as_=ALICE,
        json={"name": "k", "role": "orgmember", "expires": "2099-01-01T00:00:00Z"},
    )
    query = f"participantId={receiver}&docTypeId={_q(DOC_TYPE)}"
    status, found = await lookup(api, a, query + "&environment=TEST", as_=None, key=made["key"])
    assert status == 200 and found["canReceive"], found
    assert found["smpUrl"] == f"http://127.0.0.1:{port}/smp/test"
    status, prod = await lookup(api, a, query + "&environment=PROD")
    assert status == 200 and not prod["registered"]
    assert "receiver not registered in PROD" in prod["reason"]
    status, bad = await lookup(api, a, query + "&environment=ACC")
    assert status == 400 and bad["code"] == "AT-1001"


async def test_lookup_reports_an_untrusted_endpoint(start_api, network: FakeNetwork) -> None:
    api = await start_api("sqlite", public=True, smp_lookup_url=network.base + "/smp")
    network.signer = signer_of(pki(api))
    receiver = f"0088:{gln(340)}"
    network.register(receiver, stranger_certificate())
    a = await api.org(ALICE)
    status, found = await lookup(api, a, f"participantId={receiver}&docTypeId={_q(DOC_TYPE)}")
    assert status == 200, found
    assert found["registered"] and not found["canReceive"]
    assert "endpoint certificate is refused" in found["reason"]
    assert found["endpoints"][0]["certificateSubject"] == "CN=PFC000001,O=fourcorner"


@pytest.mark.parametrize(
    ("participant", "field"),
    [
        # a query parameter is named as it is, without the "$." of a body's JSON path
        ("0088:7300010000016", "participantId"),  # a wrong check digit
        ("not-an-identifier", "participantId"),
        ("", "participantId"),
    ],
)
async def test_lookup_refuses_bad_identifiers(start_api, participant: str, field: str) -> None:
    api = await start_api("sqlite", public=True)
    a = await api.org(ALICE)
    status, body = await lookup(api, a, f"participantId={participant}")
    assert status == 400, body
    assert body["details"][0]["field"] == field, body
    if participant.startswith("0088"):
        assert body["code"] == "AT-1006" and "check digit" in body["details"][0]["problem"]


async def test_lookup_is_503_when_the_smp_cannot_be_reached(start_api, dnsmasq: Dnsmasq) -> None:
    dead = f"http://127.0.0.1:{free_port()}/smp"
    api = await start_api("sqlite", smp_lookup_url=dead)
    a = await api.org(ALICE)
    status, body = await lookup(api, a, f"participantId=0088:{gln(350)}")
    assert status == 503 and body["code"] == "AT-1502", body
    dns_down = await start_api(
        "sqlite", discovery="sml", sml_zone_test=ZONE, dns_nameservers=dnsmasq.nameserver
    )
    b = await dns_down.org(ALICE)
    status, body = await lookup(dns_down, b, f"participantId=0088:{gln(351)}")
    assert status == 503 and body["code"] == "AT-1502", body


def _q(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")


async def test_a_dns_that_does_not_answer_is_retried_like_any_transient_failure(
    start_api, dnsmasq: Dnsmasq
) -> None:
    """The dnsmasq fixture is not started: its port refuses every query."""
    api = await start_api(
        "sqlite",
        workers=True,
        discovery="sml",
        sml_zone_test=ZONE,
        dns_nameservers=dnsmasq.nameserver,
        send_retry_delays="0.1",
        send_attempts=2,
    )
    a = await api.org(ALICE)
    sender = f"0088:{gln(360)}"
    await receiving_participant(api, a, sender, ALICE)
    tx = await finished(api, a, await post(api, a, sender, f"0088:{gln(361)}"))
    assert tx["transactionStatus"] == "FAILED", tx
    assert tx["serviceError"]["code"] == "TXE-1003" and tx["serviceError"]["action"] == "RETRY"
    ctx = await resolve(api.container.context)
    async with ctx.uow() as uow:
        stored = await uow.repository(TRANSACTIONS).get(uuid.UUID(tx["id"]))
    assert stored.attempts == 2
