"""End to end: two operators, one network. Two ``fourcorner serve`` processes, A and B, each an
operator with certificates of its own under the network's CAs (one root per environment, an
AP CA and an SMP CA under each), the fixtures' dnsmasq as the network's DNS and the fixtures'
SML (TLS SOAP, validated against the XSDs) as its locator.

A participant registered at B becomes ACTIVE once B's SML worker has registered it, and
discoverable by DNS; an organisation at A checks it with ``GET /orgs/:orgId/lookup`` and sends
it a BIS Billing 3 invoice found through the SML (``FOURCORNER_DISCOVERY=sml``); B receives it,
its message level status comes back to A (B finds A's ``0242:`` participant through the SML
too), and both sides' webhooks fire. Then B signs its SMP answers with another certificate of
the same SMP CA (accepted, and sent again), and then publishes an endpoint certificate of
another root (refused by A with TXE-1004, nothing sent to B).
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import time
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import attrs
import pytest
from aiohttp import web
from cryptography import x509

from fourcorner.adapters.pki.testpki import cert_pem, current_leaf_pem, new_ca
from fourcorner.adapters.smp.discovery import SmlDiscovery
from fourcorner.adapters.smp.errors import SmpLookupError
from fourcorner.domain.checkdigits import gs1_check_digit
from fourcorner.domain.network_services import Environment
from sbd_factory import make_sbd
from sml_service import TestSml

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent / "fourcorner"
INVOICE = (
    "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2::Invoice##"
    "urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0::2.1"
)
BILLING = "urn:fdc:peppol.eu:2017:poacc:billing:01:1.0"
DOCUMENT_TYPE = f"busdox-docid-qns::{INVOICE}"
NOW = datetime.now(UTC)


def gln(n: int) -> str:
    payload = f"730003{n:06d}"
    return f"0088:{payload}{gs1_check_digit(payload)}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- the network's PKI ------------------------------------------------------------------------


@attrs.frozen
class Ca:
    cert: x509.Certificate
    key: Any

    def issue(self, cn: str, now: datetime = NOW) -> tuple[str, str]:
        return current_leaf_pem(self.cert, self.key, cn, days=2, now=now)


@attrs.frozen
class NetworkPki:
    """One environment's CAs: a root, and under it the AP CA and the SMP CA."""

    root: Ca
    ap: Ca
    smp: Ca

    @classmethod
    def make(cls, name: str) -> NetworkPki:
        root = Ca(*new_ca(f"net {name} root"))
        under = {"issuer_cert": root.cert, "issuer_key": root.key, "path_length": 0}
        return cls(
            root=root,
            ap=Ca(*new_ca(f"net {name} AP CA", **under)),
            smp=Ca(*new_ca(f"net {name} SMP CA", **under)),
        )

    def chain(self, ca: Ca) -> str:
        return cert_pem(ca.cert) + cert_pem(self.root.cert)


@attrs.frozen
class OperatorCertificates:
    """An operator's certificates for one environment (PEM text: cert, key, chain)."""

    ap: tuple[str, str, str]
    smp: tuple[str, str, str]

    @classmethod
    def issued(cls, net: NetworkPki, seat: str, smp_name: str) -> OperatorCertificates:
        return cls(
            ap=(*net.ap.issue(seat), net.chain(net.ap)),
            smp=(*net.smp.issue(smp_name), net.chain(net.smp)),
        )

    def write(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for prefix, (cert, key, chain) in (("ap", self.ap), ("smp", self.smp)):
            (folder / f"{prefix}.pem").write_text(cert)
            (folder / f"{prefix}.key").write_text(key)
            (folder / f"{prefix}-chain.pem").write_text(chain)
            (folder / f"{prefix}.key").chmod(0o600)


def write_pair(folder: Path, prefix: str, net: NetworkPki, ca: Ca, cn: str) -> None:
    """Replace the operator's ``prefix`` (ap or smp) certificate with a new one from ``ca``,
    issued later than the one it replaces (as a renewal is)."""
    cert, key = ca.issue(cn, now=datetime.now(UTC) + timedelta(minutes=1))
    (folder / f"{prefix}.pem").write_text(cert)
    (folder / f"{prefix}.key").write_text(key)
    (folder / f"{prefix}-chain.pem").write_text(net.chain(ca))


# --- a webhook receiver -----------------------------------------------------------------------


class Inbox:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.url = ""

    async def handle(self, request: web.Request) -> web.Response:
        event = await request.json()
        self.events.append({**event, "receiver": request.query.get("op", "")})
        return web.Response(status=200)

    def of(self, operator: str, event_type: str) -> list[dict[str, Any]]:
        return [
            e for e in self.events if e["receiver"] == operator and e["eventType"] == event_type
        ]


@pytest.fixture
async def inbox() -> AsyncIterator[Inbox]:
    box = Inbox()
    app = web.Application()
    app.router.add_post("/hook", box.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    box.url = f"http://127.0.0.1:{port}/hook"
    try:
        yield box
    finally:
        await runner.cleanup()


# --- an operator: one fourcorner serve process ------------------------------------------------


class Operator:
    """``fourcorner serve`` for one operator, on a data dir (SQLite) and a port of its own."""

    def __init__(
        self,
        name: str,
        seat: str,
        folder: Path,
        sml: TestSml,
        anchors: list[x509.Certificate],
    ) -> None:
        self.name, self.seat, self.folder = name, seat, folder
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.certs = folder / "certs"
        folder.mkdir(parents=True)
        anchors_file = folder / "anchors.pem"
        anchors_file.write_text("".join(cert_pem(c) for c in anchors))
        self.env = {
            **os.environ,
            "FOURCORNER_DATA_DIR": str(folder / "data"),
            "FOURCORNER_HOST": "127.0.0.1",
            "FOURCORNER_PORT": str(self.port),
            "FOURCORNER_SEAT_ID": seat,
            "FOURCORNER_OPERATOR_CERTS_DIR": str(self.certs),
            "FOURCORNER_TRUST_ANCHORS_FILE": str(anchors_file),
            "FOURCORNER_DISCOVERY": "sml",
            "FOURCORNER_SML_ZONE_TEST": sml.dns.zone,
            "FOURCORNER_DNS_NAMESERVERS": sml.dns.nameserver,
            "FOURCORNER_SML_URL_TEST": sml.url,
            "FOURCORNER_SMP_ID_TEST": f"OPERATOR-{name}",
            "FOURCORNER_SML_CA_FILE": str(sml.ca_file),
            "FOURCORNER_WEBHOOK_ALLOW_PRIVATE_TARGETS": "true",
            "FOURCORNER_WEBHOOK_RETRY_DELAYS": "0.5,0.5",
            "FOURCORNER_SEND_RETRY_DELAYS": "0.5,0.5",
        }
        self.env.pop("FOURCORNER_DATABASE_URL", None)
        self.log = folder / "server.log"
        self.proc: asyncio.subprocess.Process | None = None
        self.http: aiohttp.ClientSession | None = None
        self.auth: dict[str, str] = {}

    def certificates(self, test: OperatorCertificates, prod: OperatorCertificates) -> None:
        test.write(self.certs / "test")
        prod.write(self.certs / "prod")

    def tail(self) -> str:
        return f"{self.name}: " + self.log.read_text(errors="replace")[-3000:]

    async def start(self) -> None:
        with self.log.open("ab") as err:
            self.proc = await asyncio.create_subprocess_exec(
                str(BIN), "serve", env=self.env, stdout=asyncio.subprocess.DEVNULL, stderr=err
            )
        self.http = aiohttp.ClientSession(self.base)

        async def ready() -> bool:
            assert self.proc is not None and self.proc.returncode is None, self.tail()
            try:
                async with self.http.get("/readyz") as r:  # type: ignore[union-attr]
                    return r.status == 200
            except aiohttp.ClientError:
                return False

        await eventually(ready, f"{self.name} is ready", self)
        if not self.auth:
            run = await asyncio.create_subprocess_exec(
                str(BIN),
                "token",
                "--email",
                f"admin@{self.name.lower()}.example",
                env=self.env,
                stdout=asyncio.subprocess.PIPE,
            )
            token = (await run.communicate())[0].decode().strip()
            self.auth = {"Authorization": f"Bearer {token}"}

    async def stop(self) -> None:
        if self.http is not None:
            await self.http.close()
            self.http = None
        if self.proc is not None and self.proc.returncode is None:
            self.proc.terminate()
            await self.proc.wait()
        self.proc = None

    async def call(
        self, method: str, path: str, body: Any = None, *, data: bytes | None = None
    ) -> tuple[int, Any]:
        assert self.http is not None
        headers = dict(self.auth)
        if data is not None:
            headers["Content-Type"] = "application/xml"
        async with self.http.request(method, path, json=body, data=data, headers=headers) as r:
            return r.status, await r.json()

    async def organisation(self) -> dict[str, Any]:
        status, org = await self.call(
            "POST",
            "/orgs",
            {
                "legalIdentifier": "2120000787",
                "legalName": f"Customer of {self.name}",
                "countryCode": "SE",
                "legalIdentifierCode": "SE:ORGNR",
            },
        )
        assert status == 201, org
        return org

    async def participant(self, org: dict[str, Any], ident: str) -> dict[str, Any]:
        """``ident`` in TEST, receiving BIS Billing 3 invoices; ACTIVE once the SML has it."""
        _, smps = await self.call("GET", f"/orgs/{org['id']}/smps/alltouse")
        _, aps = await self.call("GET", f"/orgs/{org['id']}/aps/alltouse")
        body = {
            "name": f"participant at {self.name}",
            "participantIdentifier": ident,
            "smpRef": next(s["id"] for s in smps["items"] if s["environment"] == "TEST"),
            "apRef": next(a["id"] for a in aps["items"] if a["environment"] == "TEST"),
        }
        status, p = await self.call("POST", f"/orgs/{org['id']}/participants", body)
        assert status == 201, p
        _, docs = await self.call("GET", "/document_types?filter=state:eq:active")
        doc = next(d for d in docs["items"] if INVOICE.endswith(d["value"]))
        entry = {"documentId": doc["id"], "processId": f"cenbii-procid-ubl::{BILLING}"}
        path = f"/orgs/{org['id']}/participants/{p['id']}/supported_document_types"
        status, answer = await self.call("PUT", path, {"supportedDocumentTypes": [entry]})
        assert status == 200, answer

        async def active() -> bool:
            _, got = await self.call("GET", f"/orgs/{org['id']}/participants/{p['id']}")
            assert got["status"] != "FAILED", got
            return bool(got["status"] == "ACTIVE")

        await eventually(active, f"{ident} is ACTIVE at {self.name}", self)
        return p

    async def webhook(self, org: dict[str, Any], url: str, events: list[str]) -> None:
        body = {"url": f"{url}?op={self.name}", "events": events}
        status, answer = await self.call("POST", f"/orgs/{org['id']}/webhooks", body)
        assert status == 201, answer

    async def test_ap(self, org: dict[str, Any]) -> str:
        _, aps = await self.call("GET", f"/orgs/{org['id']}/aps/alltouse")
        return str(next(a["id"] for a in aps["items"] if a["environment"] == "TEST"))


async def eventually(
    check: Callable[[], Awaitable[bool]], what: str, *operators: Operator, within: float = 60
) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if await check():
            return
        await asyncio.sleep(0.2)
    said = "\n".join(o.tail() for o in operators)
    raise AssertionError(f"not within {within} s: {what}; the servers said:\n{said}")


@pytest.fixture
async def network(
    sml_service: TestSml, tmp_path: Path
) -> AsyncIterator[tuple[Operator, Operator, dict[str, NetworkPki]]]:
    nets = {env: NetworkPki.make(env) for env in ("TEST", "PROD")}
    anchors = [nets[env].root.cert for env in nets]
    for net in nets.values():  # the SML knows the network's SMP certificates
        sml_service.trust(cert_pem(net.root.cert))
        sml_service.trust(cert_pem(net.smp.cert))
    a = Operator("A", "POP100001", tmp_path / "a", sml_service, anchors)
    b = Operator("B", "POP200002", tmp_path / "b", sml_service, anchors)
    for op in (a, b):
        op.certificates(
            OperatorCertificates.issued(nets["TEST"], op.seat, f"SMP {op.name} TEST"),
            OperatorCertificates.issued(nets["PROD"], op.seat, f"SMP {op.name} PROD"),
        )
    try:
        yield a, b, nets
    finally:
        for op in (a, b):
            await op.stop()


async def send(
    a: Operator, org: dict[str, Any], ap: str, sender: str, receiver: str
) -> dict[str, Any]:
    """A BIS Billing 3 invoice from ``sender`` to ``receiver``, asking for a positive MLS;
    the transaction once it has a final status (and an MLS, when completed)."""
    sbd = make_sbd(sender=sender, receiver=receiver, mls_type="ALWAYS_SEND")
    status, body = await a.call("POST", f"/orgs/{org['id']}/transactions?ap={ap}", data=sbd)
    assert status == 202, body
    tx_id = body["transactionId"]
    found: dict[str, Any] = {}

    async def final() -> bool:
        _, tx = await a.call("GET", f"/orgs/{org['id']}/transactions/{tx_id}")
        found.update(tx)
        return tx["transactionStatus"] == "FAILED" or (
            tx["transactionStatus"] == "COMPLETED" and bool(tx.get("mlsResponseCode"))
        )

    await eventually(final, f"transaction {tx_id} ends", a)
    return found


async def lookup(a: Operator, org: dict[str, Any], receiver: str) -> dict[str, Any]:
    query = urllib.parse.urlencode(
        {"participantId": receiver, "docTypeId": DOCUMENT_TYPE, "environment": "TEST"}
    )
    answers: list[tuple[int, Any]] = []

    async def answered() -> bool:
        # 503: the network's DNS did not answer, as while the test SML restarts it after a
        # registration (a participant of either operator); asked again, as a sender would
        answers.append(await a.call("GET", f"/orgs/{org['id']}/lookup?{query}"))
        return answers[-1][0] != 503

    await eventually(answered, "the lookup answers", a, within=30)
    status, found = answers[-1]
    assert status == 200, found
    return dict(found)


async def received(b: Operator, org: dict[str, Any]) -> list[dict[str, Any]]:
    _, got = await b.call("GET", f"/orgs/{org['id']}/transactions/from_network")
    return list(got["items"])


async def test_two_operators_find_each_other_through_the_sml(
    network: tuple[Operator, Operator, dict[str, NetworkPki]],
    sml_service: TestSml,
    inbox: Inbox,
) -> None:
    a, b, nets = network
    await asyncio.gather(a.start(), b.start())

    async def smps_registered() -> bool:
        return {"OPERATOR-A", "OPERATOR-B"} <= set(sml_service.smps)

    await eventually(smps_registered, "both SMPs register in the SML", a, b)
    seller, buyer = gln(1), gln(2)
    org_a, org_b = await asyncio.gather(a.organisation(), b.organisation())
    await a.participant(org_a, seller)
    await b.participant(org_b, buyer)
    await a.webhook(org_a, inbox.url, ["transaction.sent", "mls.received"])
    await b.webhook(org_b, inbox.url, ["transaction.received"])

    # B's participant is in the network's DNS, pointing at B's SMP
    dns = SmlDiscovery(
        {Environment.TEST: sml_service.dns.zone}, [("127.0.0.1", sml_service.dns.port)]
    )
    found_smp: list[str] = []

    async def discoverable() -> bool:
        try:  # a timeout: the test SML restarting its DNS after a registration
            found_smp.append(await dns.smp_url(("iso6523-actorid-upis", buyer), Environment.TEST))
        except SmpLookupError as e:
            if e.permanent:
                raise
            return False
        return True

    await eventually(discoverable, "B's participant is in the network's DNS", a, b)
    assert found_smp == [f"{b.base}/smp/test"]
    # A asks whether B's participant can receive the invoice: by DNS, B's SMP, its signature
    found = await lookup(a, org_a, buyer)
    assert found["registered"] is True and found["canReceive"] is True, found
    assert found["smpUrl"] == f"{b.base}/smp/test", found
    [endpoint] = found["endpoints"]
    assert endpoint["url"].startswith(f"{b.base}/as4/"), endpoint
    assert "POP200002" in endpoint["certificateSubject"], endpoint

    ap = await a.test_ap(org_a)
    tx = await send(a, org_a, ap, seller, buyer)
    assert (tx["transactionStatus"], tx.get("mlsResponseCode")) == ("COMPLETED", "AB"), (
        tx,
        a.tail(),
        b.tail(),
    )
    assert tx["receiverSP"] == "POP200002" and tx["senderSP"] == "POP100001", tx
    [got] = await received(b, org_b)
    assert got["docInstanceId"] == tx["docInstanceId"]

    async def hooks_fired() -> bool:
        return all(
            inbox.of(op, kind)
            for op, kind in (
                ("A", "transaction.sent"),
                ("A", "mls.received"),
                ("B", "transaction.received"),
            )
        )

    await eventually(hooks_fired, "both sides' webhooks fire", a, b)
    assert inbox.of("A", "mls.received")[0]["payload"]["mlsResponseCode"] == "AB"
    assert inbox.of("B", "transaction.received")[0]["payload"]["id"] == got["id"]

    # B's SMP signs with another certificate of the same SMP CA (its renewal): accepted
    await b.stop()
    write_pair(b.certs / "test", "smp", nets["TEST"], nets["TEST"].smp, "SMP B TEST")
    await b.start()
    found = await lookup(a, org_a, buyer)
    assert found["canReceive"] is True, found
    tx = await send(a, org_a, ap, seller, buyer)
    assert (tx["transactionStatus"], tx.get("mlsResponseCode")) == ("COMPLETED", "AB"), (
        tx,
        a.tail(),
        b.tail(),
    )
    assert len(await received(b, org_b)) == 2

    # B's endpoint certificate is of another root (which B trusts, A does not): refused by A
    # with its TXE code before anything is encrypted or sent
    await b.stop()
    stranger = NetworkPki.make("STRANGER")
    b_anchors = [nets[env].root.cert for env in nets] + [stranger.root.cert]
    (b.folder / "anchors.pem").write_text("".join(cert_pem(c) for c in b_anchors))
    write_pair(b.certs / "test", "ap", stranger, stranger.ap, b.seat)
    await b.start()
    found = await lookup(a, org_a, buyer)
    assert found["registered"] is True and found["canReceive"] is False, found
    tx = await send(a, org_a, ap, seller, buyer)
    assert tx["transactionStatus"] == "FAILED", tx
    assert tx["serviceError"]["code"] == "TXE-1004", tx
    assert len(await received(b, org_b)) == 2  # nothing more arrived
    assert sml_service.invalid == []
