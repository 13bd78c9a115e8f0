"""A local SML for the tests: the SOAP management interface of the network's service metadata
locator, over TLS on 127.0.0.1, publishing what it registers in a dnsmasq as the SML's DNS.

- TLS requires a client certificate issued by the fixture's CA; an SMP is bound to the
  certificate it registered with, and only that certificate may act for it.
- Every request is checked against the WSDLs and XSDs of ``tests/sml`` (copied unmodified from
  phax/peppol-commons, see ``tests/sml/README.md``): a SOAP 1.1 envelope, the ``SOAPAction`` of
  the operation the body's element is the input of, at that service's path, and the element
  valid against ``peppol-sml-types-v1.xsd``. A request that is not is answered with a
  ``BadRequestFault`` and kept in ``invalid`` (tests assert it stays empty).
- It keeps the SMPs, the participants (by SMP) and prepared migrations, answers as the SML
  does (a participant another SMP registered cannot be created, only migrated with the key its
  SMP prepared), and after each change restarts its dnsmasq with one U-NAPTR record per
  participant, ``!^.*$!<the SMP's logical address>!``, at the participant's SML name.
"""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import ssl
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import attrs
import pytest
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.x509.oid import NameOID
from lxml import etree

from dnsmasq import Dnsmasq, Naptr
from fourcorner.adapters.pki.testpki import (
    cert_pem,
    current_leaf_pem,
    key_pem,
    new_ca,
    new_rsa_key,
)
from fourcorner.adapters.smp.discovery import sml_name

HERE = Path(__file__).resolve().parent / "sml"
SOAP_NS = "http://schemas.xmlsoap.org/soap/envelope/"
LRS = "http://busdox.org/serviceMetadata/locator/1.0/"
IDS = "http://busdox.org/transport/identifiers/1.0/"
WSDL = "http://schemas.xmlsoap.org/wsdl/"
WSDL_SOAP = "http://schemas.xmlsoap.org/wsdl/soap/"
SERVICES = {
    "ManageServiceMetadataService-1.0.wsdl": "/edelivery-sml/manageservicemetadata",
    "ManageBusinessIdentifierService-1.0.wsdl": "/edelivery-sml/manageparticipantidentifier",
}
PAGE = 2  # List answers pages this small, so that paging is exercised


@attrs.frozen
class Operation:
    name: str
    path: str
    action: str
    element: str  # local name of the input element (namespace LRS)


def operations() -> dict[str, Operation]:
    """By SOAPAction: each operation of the two WSDLs, its path and its input element."""
    out: dict[str, Operation] = {}
    for file, path in SERVICES.items():
        wsdl = etree.parse(str(HERE / file))
        ns = {"w": WSDL, "s": WSDL_SOAP}
        inputs = {}
        for message in wsdl.findall("w:message", ns):
            part = message.find("w:part", ns)
            if part is not None:
                inputs[message.get("name")] = part.get("element", "").split(":")[-1]
        port = {
            op.get("name"): op.find("w:input", ns).get("message", "").split(":")[-1]
            for op in wsdl.findall("w:portType/w:operation", ns)
        }
        for op in wsdl.findall("w:binding/w:operation", ns):
            action = op.find("s:operation", ns).get("soapAction")
            name = op.get("name")
            out[action] = Operation(name, path, action, inputs[port[name]])
    return out


def _fault(kind: str, message: str) -> web.Response:
    code = "S:Server" if kind == "InternalErrorFault" else "S:Client"
    body = (
        f'<?xml version="1.0" encoding="UTF-8"?><S:Envelope xmlns:S="{SOAP_NS}"><S:Body>'
        f"<S:Fault><faultcode>{code}</faultcode><faultstring>{_esc(message)}</faultstring>"
        f'<detail><lrs:{kind} xmlns:lrs="{LRS}"><lrs:FaultMessage>{_esc(message)}'
        f"</lrs:FaultMessage></lrs:{kind}></detail></S:Fault></S:Body></S:Envelope>"
    )
    return web.Response(status=500, body=body.encode(), content_type="text/xml", charset="utf-8")


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _ok(inner: str = "") -> web.Response:
    body = (
        f'<?xml version="1.0" encoding="UTF-8"?><S:Envelope xmlns:S="{SOAP_NS}"><S:Body>'
        f"{inner}</S:Body></S:Envelope>"
    )
    return web.Response(status=200, body=body.encode(), content_type="text/xml", charset="utf-8")


class Refused(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind, self.message = kind, message


@attrs.define
class Smp:
    logical: str
    physical: str
    fingerprint: str


class TestSml:
    """The service; ``url`` is its management endpoint once started."""

    __test__ = False

    def __init__(self, dns: Dnsmasq, folder: Path) -> None:
        self.dns = dns
        now = datetime.now(UTC)
        self.ca, self._ca_key = new_ca("fourcorner test SML CA")
        self.ca_file = folder / "sml-ca.pem"
        self.ca_file.write_text(cert_pem(self.ca))
        self._server = server_certificate(self.ca, self._ca_key, now)
        (folder / "sml-server.pem").write_text(self._server[0])
        (folder / "sml-server.key").write_text(self._server[1])
        self._folder = folder
        self.schema = etree.XMLSchema(etree.parse(str(HERE / "peppol-sml-types-v1.xsd")))
        self.operations = operations()
        self.smps: dict[str, Smp] = {}
        self._publishing = asyncio.Lock()
        self.participants: dict[tuple[str, str], str] = {}  # (scheme, value) -> SMP id
        self.migrations: dict[tuple[str, str], tuple[str, str]] = {}  # -> (SMP id, key)
        self.requests: list[str] = []  # operation names, in order
        self.invalid: list[str] = []
        self.down = False
        self.url = ""
        self._runner: web.AppRunner | None = None
        self._context: ssl.SSLContext | None = None

    def trust(self, ca_pem: str) -> None:
        """Accept client certificates issued under ``ca_pem`` too (an operator's own PKI)."""
        assert self._context is not None, "start first"
        self._context.load_verify_locations(cadata=ca_pem)

    def smp_certificate(self, name: str) -> tuple[str, str]:
        """A client certificate (PEM) and key an SMP presents."""
        return current_leaf_pem(self.ca, self._ca_key, name, days=2)

    async def start(self) -> None:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(self.ca_file))
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_cert_chain(self._folder / "sml-server.pem", self._folder / "sml-server.key")
        self._context = context
        app = web.Application(client_max_size=256 * 1024)
        for path in SERVICES.values():
            app.router.add_post(path, self._handle)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=context)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"https://127.0.0.1:{port}/edelivery-sml"
        await self._publish()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def naptr_records(self) -> list[Naptr]:
        return [
            Naptr(sml_name(scheme, value, self.dns.zone), f"!^.*$!{self.smps[smp].logical}!")
            for (scheme, value), smp in sorted(self.participants.items())
        ]

    async def _publish(self) -> None:
        # one restart at a time: two at once would both stop the old dnsmasq and start two
        # on its port, the second failing (two operators' registrations arrive together)
        async with self._publishing:
            await asyncio.to_thread(self.dns.start, self.naptr_records())

    # --- requests ----------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.Response:
        if self.down:
            return web.Response(status=503, text="down for maintenance")
        ssl_object = request.transport.get_extra_info("ssl_object") if request.transport else None
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        if not der:  # TLS requires one; this is the belt to those braces
            return _fault("UnauthorizedFault", "no client certificate")
        fingerprint = hashlib.sha256(der).hexdigest()
        try:
            operation, payload = self._read(request, await request.read())
            self.requests.append(operation.name)
            answer = self._operate(operation, payload, fingerprint)
        except Refused as e:
            return _fault(e.kind, e.message)
        if operation.name in ("Create", "Update", "Delete", "Migrate"):
            await self._publish()
        return _ok(answer)

    def _read(self, request: web.Request, body: bytes) -> tuple[Operation, etree._Element]:
        def invalid(why: str) -> Refused:
            self.invalid.append(why)
            return Refused("BadRequestFault", why)

        if request.content_type != "text/xml":
            raise invalid(f"SOAP 1.1 is text/xml, not {request.content_type}")
        action = request.headers.get("SOAPAction", "").strip('"')
        operation = self.operations.get(action)
        if operation is None or operation.path != request.path:
            raise invalid(f"no operation has SOAPAction {action!r} at {request.path}")
        parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
        try:
            root = etree.fromstring(body, parser)
        except etree.XMLSyntaxError as e:
            raise invalid(f"not well-formed: {e}") from None
        soap_body = root.find(f"{{{SOAP_NS}}}Body")
        if root.tag != f"{{{SOAP_NS}}}Envelope" or soap_body is None or len(soap_body) != 1:
            raise invalid("not a SOAP 1.1 envelope with one element in its Body")
        payload = soap_body[0]
        if payload.tag != f"{{{LRS}}}{operation.element}":
            raise invalid(f"{operation.name} takes {operation.element}, not {payload.tag}")
        document = etree.ElementTree(etree.fromstring(etree.tostring(payload)))
        if not self.schema.validate(document):
            raise invalid(f"not valid against the XSD: {self.schema.error_log.last_error}")
        return operation, payload

    def _owned_smp(self, payload: etree._Element, fingerprint: str) -> str:
        smp_id = payload.findtext(f"{{{LRS}}}ServiceMetadataPublisherID") or ""
        smp = self.smps.get(smp_id)
        if smp is None:
            raise Refused("NotFoundFault", f"The SMP '{smp_id}' does not exist")
        if smp.fingerprint != fingerprint:
            raise Refused("UnauthorizedFault", f"The certificate is not the one of SMP {smp_id}")
        return smp_id

    def _participant(self, payload: etree._Element) -> tuple[str, str]:
        found = payload.find(f"{{{IDS}}}ParticipantIdentifier")
        assert found is not None  # the XSD requires it
        return (found.get("scheme") or "").lower(), (found.text or "").strip().lower()

    def _operate(self, operation: Operation, payload: etree._Element, fingerprint: str) -> str:
        name = operation.name
        if operation.element.endswith("ServiceMetadataPublisherService"):
            smp_id = payload.findtext(f"{{{LRS}}}ServiceMetadataPublisherID") or ""
            endpoint = payload.find(f"{{{LRS}}}PublisherEndpoint")
            logical = endpoint.findtext(f"{{{LRS}}}LogicalAddress") or ""
            physical = endpoint.findtext(f"{{{LRS}}}PhysicalAddress") or ""
            if name == "Create":
                if smp_id in self.smps:
                    raise Refused("BadRequestFault", f"The SMP '{smp_id}' already exists")
                self.smps[smp_id] = Smp(logical, physical, fingerprint)
            elif name == "Update":
                self._owned_smp(payload, fingerprint)
                self.smps[smp_id] = Smp(logical, physical, fingerprint)
            return ""
        smp_id = self._owned_smp(payload, fingerprint)
        if name == "List":
            return self._page(smp_id, payload.findtext(f"{{{LRS}}}NextPageIdentifier"))
        participant = self._participant(payload)
        owner = self.participants.get(participant)
        key = payload.findtext(f"{{{LRS}}}MigrationKey")
        if name == "Create":
            if owner is not None:
                raise Refused(
                    "BadRequestFault",
                    f"The participant identifier '{participant[1]}' already exists",
                )
            self.participants[participant] = smp_id
        elif name in ("Delete", "PrepareToMigrate"):
            if owner is None:
                raise Refused("NotFoundFault", f"The participant '{participant[1]}' is unknown")
            if owner != smp_id:
                raise Refused("UnauthorizedFault", f"'{participant[1]}' is not of SMP {smp_id}")
            if name == "Delete":
                del self.participants[participant]
                self.migrations.pop(participant, None)
            else:
                self.migrations[participant] = (smp_id, key or "")
        elif name == "Migrate":
            prepared = self.migrations.get(participant)
            if owner is None or prepared is None or prepared[1] != key:
                raise Refused(
                    "BadRequestFault",
                    f"No migration of '{participant[1]}' was prepared with this key",
                )
            self.participants[participant] = smp_id
            del self.migrations[participant]
        return ""

    def _page(self, smp_id: str, after: str | None) -> str:
        mine = sorted(p for p, s in self.participants.items() if s == smp_id)
        start = int(after or 0)
        chunk = mine[start : start + PAGE]
        items = "".join(
            f'<ids:ParticipantIdentifier scheme="{s}">{_esc(v)}</ids:ParticipantIdentifier>'
            for s, v in chunk
        )
        more = (
            f"<lrs:NextPageIdentifier>{start + PAGE}</lrs:NextPageIdentifier>"
            if start + PAGE < len(mine)
            else ""
        )
        return (
            f'<lrs:ParticipantIdentifierPage xmlns:lrs="{LRS}" xmlns:ids="{IDS}">{items}'
            f"<lrs:ServiceMetadataPublisherID>{smp_id}</lrs:ServiceMetadataPublisherID>{more}"
            "</lrs:ParticipantIdentifierPage>"
        )


def server_certificate(ca: x509.Certificate, ca_key: object, now: datetime) -> tuple[str, str]:
    key = new_rsa_key()
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=2))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())  # type: ignore[arg-type]
    )
    return cert_pem(cert), key_pem(key)


@pytest.fixture
async def sml_service(dnsmasq: Dnsmasq, tmp_path: Path) -> AsyncIterator[TestSml]:
    """The local SML, started, its DNS zone ``sml.test.`` served by ``dnsmasq``."""
    service = TestSml(dnsmasq, tmp_path)
    await service.start()
    try:
        yield service
    finally:
        await service.stop()
