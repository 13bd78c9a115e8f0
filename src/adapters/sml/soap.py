"""The network's SML over SOAP 1.1, as its WSDLs describe it (``ManageServiceMetadataService``
and ``ManageBusinessIdentifierService`` 1.0; message types ``peppol-sml-types-v1.xsd``).

Each environment has its own management endpoint, SMP id and client certificate: the SML
knows an SMP by the TLS client certificate it registered with, so every call presents the
environment's SMP certificate. Calls are document/literal POSTs to ``<endpoint>/
manageservicemetadata`` and ``<endpoint>/manageparticipantidentifier`` with the WSDL's
``SOAPAction``; an answer is read up to ``max_answer`` bytes within ``timeout`` seconds.

A SOAP fault is a refusal named by its detail element (``NotFoundFault``, ``UnauthorizedFault``,
``BadRequestFault``; an ``InternalErrorFault`` is the SML's own trouble and is retried). A
``Create`` refused because the identifier exists (the fault message says it is already there)
is ``ALREADY_REGISTERED``. No answer, a timeout, an HTTP error without a fault or an answer
that is not SOAP is ``UNREACHABLE``; so is a redirect, which is not followed (the request
carries the SMP's client certificate and, to migrate, a migration key).
"""

from __future__ import annotations

import asyncio
import re
import ssl
from collections.abc import Mapping
from urllib.parse import urlsplit

import aiohttp
import attrs
from lxml import etree

from fourcorner.adapters.answer import AnswerTooLarge, read_capped
from fourcorner.adapters.pki.tls import client_context
from fourcorner.application.locator import LocatorError, LocatorFault
from fourcorner.domain.network_services import Environment

SOAP_NS = "http://schemas.xmlsoap.org/soap/envelope/"
LRS = "http://busdox.org/serviceMetadata/locator/1.0/"
IDS = "http://busdox.org/transport/identifiers/1.0/"
PARTICIPANT_SCHEME = "iso6523-actorid-upis"

SMP_PATH = "/manageservicemetadata"
PARTICIPANT_PATH = "/manageparticipantidentifier"
_SMP_ACTION = "http://busdox.org/serviceMetadata/ManageServiceMetadataService/1.0/:"
# The nine blanks are in the WSDL (and in the SML's implementation).
_PARTICIPANT_ACTION = (
    "http://busdox.org/serviceMetadata/ManageBusinessIdentifierService/1.0/         :"
)
MAX_ANSWER = 1024 * 1024
MAX_PAGES = 1000  # List: at most this many pages are read
_FAULTS = {
    "NotFoundFault": LocatorFault.NOT_FOUND,
    "UnauthorizedFault": LocatorFault.UNAUTHORIZED,
    "BadRequestFault": LocatorFault.BAD_REQUEST,
    "InternalErrorFault": LocatorFault.UNREACHABLE,
}


@attrs.frozen
class SmlEndpoint:
    """One environment's SML: its management URL, our SMP's id there, and the SMP's
    certificate (PEM; the chain is sent after it) and key, presented as TLS client
    certificate."""

    url: str
    smp_id: str
    cert_pem: str = attrs.field(repr=False)
    key_pem: str = attrs.field(repr=False)
    chain_pem: str = attrs.field(default="", repr=False)


def _q(ns: str, name: str) -> str:
    return f"{{{ns}}}{name}"


def envelope(payload: etree._Element) -> bytes:
    root = etree.Element(_q(SOAP_NS, "Envelope"), nsmap={"S": SOAP_NS})
    etree.SubElement(root, _q(SOAP_NS, "Body")).append(payload)
    return bytes(etree.tostring(root, xml_declaration=True, encoding="UTF-8"))


def _element(name: str, *children: etree._Element, text: str | None = None) -> etree._Element:
    el = etree.Element(_q(LRS, name), nsmap={"lrs": LRS, "ids": IDS})
    if text is not None:
        el.text = text
    for c in children:
        el.append(c)
    return el


def _smp_id(smp_id: str) -> etree._Element:
    return _element("ServiceMetadataPublisherID", text=smp_id)


def _participant(value: str) -> etree._Element:
    el = etree.Element(_q(IDS, "ParticipantIdentifier"), nsmap={"ids": IDS})
    el.set("scheme", PARTICIPANT_SCHEME)
    el.text = value
    return el


def smp_message(kind: str, smp_id: str, logical: str, physical: str) -> etree._Element:
    """``Create``/``Update``-``ServiceMetadataPublisherService``."""
    endpoint = _element(
        "PublisherEndpoint",
        _element("LogicalAddress", text=logical),
        _element("PhysicalAddress", text=physical),
    )
    return _element(f"{kind}ServiceMetadataPublisherService", endpoint, _smp_id(smp_id))


def participant_message(
    name: str, smp_id: str, value: str, key: str | None = None
) -> etree._Element:
    """``Create``/``DeleteParticipantIdentifier``, ``Prepare``/``CompleteMigrationRecord``."""
    children = [_smp_id(smp_id), _participant(value)]
    if key is not None:
        children.append(_element("MigrationKey", text=key))
    return _element(name, *children)


def page_request(smp_id: str, next_page: str | None) -> etree._Element:
    children = [_smp_id(smp_id)]
    if next_page:
        children.append(_element("NextPageIdentifier", text=next_page))
    return _element("PageRequest", *children)


def _parse(data: bytes) -> etree._Element:
    parser = etree.XMLParser(
        resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False
    )
    root = etree.fromstring(data, parser)
    docinfo = root.getroottree().docinfo
    if docinfo.doctype or docinfo.internalDTD is not None:
        raise ValueError("an answer with a DOCTYPE")
    return root


def body_of(data: bytes) -> etree._Element:
    """The SOAP Body of an answer; ``ValueError`` when it is not a SOAP 1.1 envelope."""
    root = _parse(data)
    if root.tag != _q(SOAP_NS, "Envelope"):
        raise ValueError(f"the answer is not a SOAP 1.1 envelope but {root.tag}")
    body = root.find(_q(SOAP_NS, "Body"))
    if body is None:
        raise ValueError("the answer has no SOAP Body")
    return body


_ALREADY = re.compile(r"\balready\b|(?<!not )\bexists\b", re.I)


def fault_of(body: etree._Element, operation: str) -> LocatorError | None:
    """The refusal a Body's ``Fault`` says, or None when it holds none."""
    fault = body.find(_q(SOAP_NS, "Fault"))
    if fault is None:
        return None
    text = (fault.findtext("faultstring") or "").strip()
    kind = LocatorFault.UNREACHABLE
    detail = fault.find("detail")
    name = "Fault"
    if detail is not None:
        for child in detail:
            local = etree.QName(child).localname
            if local in _FAULTS:
                name, kind = local, _FAULTS[local]
                text = (child.findtext(_q(LRS, "FaultMessage")) or "").strip() or text
                break
    if (
        operation == "Create"
        and kind in (LocatorFault.BAD_REQUEST, LocatorFault.UNAUTHORIZED)
        and _ALREADY.search(text)
    ):
        kind = LocatorFault.ALREADY_REGISTERED
    return LocatorError(f"{name}: {text[:500] or '(no message)'}", kind)


class SoapLocator:
    """``ServiceLocator`` over SOAP: one HTTPS session per environment, each with that
    environment's SMP certificate as client certificate. ``cafile``: the CAs that may have
    issued the SML's server certificate (default: the system's)."""

    def __init__(
        self,
        endpoints: Mapping[Environment, SmlEndpoint],
        *,
        timeout: float = 30.0,
        cafile: str | None = None,
        max_answer: int = MAX_ANSWER,
    ) -> None:
        self._endpoints = dict(endpoints)
        self._timeout = timeout
        self._cafile = cafile or None
        self._max_answer = max_answer
        self._sessions: dict[Environment, aiohttp.ClientSession] = {}

    def serves(self, environment: Environment) -> bool:
        return environment in self._endpoints

    def smp_id(self, environment: Environment) -> str:
        found = self._endpoints.get(environment)
        return found.smp_id if found else ""

    def _endpoint(self, environment: Environment) -> SmlEndpoint:
        found = self._endpoints.get(environment)
        if found is None:
            raise LocatorError(
                f"no SML is configured for {environment.value}", LocatorFault.UNREACHABLE
            )
        return found

    def _session(self, environment: Environment) -> aiohttp.ClientSession:
        session = self._sessions.get(environment)
        if session is None or session.closed:
            endpoint = self._endpoint(environment)
            try:
                context = client_context(
                    endpoint.cert_pem, endpoint.key_pem, endpoint.chain_pem, self._cafile
                )
            except (ssl.SSLError, OSError) as e:
                raise LocatorError(
                    f"the {environment.value} SMP certificate cannot be used as TLS client "
                    f"certificate: {e}",
                    LocatorFault.UNREACHABLE,
                ) from None
            session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(ssl=context, limit=8),
                timeout=aiohttp.ClientTimeout(total=self._timeout),
            )
            self._sessions[environment] = session
        return session

    async def _call(
        self,
        environment: Environment,
        path: str,
        action: str,
        operation: str,
        payload: etree._Element,
    ) -> etree._Element:
        endpoint = self._endpoint(environment)
        url = endpoint.url.rstrip("/") + path
        session = self._session(environment)
        headers = {"Content-Type": "text/xml; charset=utf-8", "SOAPAction": f'"{action}"'}
        try:
            async with session.post(
                url,
                data=envelope(payload),
                headers=headers,
                allow_redirects=False,  # the request carries our certificate and keys
            ) as response:
                status = response.status
                if 300 <= status < 400:
                    raise LocatorError(
                        f"the SML answered {operation} with a redirect (HTTP {status}), which "
                        "is not followed",
                        LocatorFault.UNREACHABLE,
                    )
                data = await read_capped(response, self._max_answer)
        except AnswerTooLarge as e:
            raise LocatorError(
                f"the SML's answer to {operation} is larger than {e.limit} bytes",
                LocatorFault.UNREACHABLE,
            ) from None
        except TimeoutError:
            raise LocatorError(
                f"the SML did not answer {operation} within {self._timeout:g} s",
                LocatorFault.UNREACHABLE,
            ) from None
        except (aiohttp.ClientError, OSError) as e:
            raise LocatorError(
                f"the SML at {url} cannot be reached: {e!r}"[:500], LocatorFault.UNREACHABLE
            ) from None
        if status == 200 and not data.strip():  # an empty answer (the WSDL's output is empty)
            return etree.Element(_q(SOAP_NS, "Body"))
        try:
            body = body_of(data)
        except (ValueError, etree.XMLSyntaxError) as e:
            raise LocatorError(
                f"the SML answered {operation} with HTTP {status} and no SOAP envelope ({e})",
                LocatorFault.UNREACHABLE,
            ) from None
        fault = fault_of(body, operation)
        if fault is not None:
            raise fault
        if status != 200:
            raise LocatorError(
                f"the SML answered {operation} with HTTP {status}", LocatorFault.UNREACHABLE
            )
        return body

    async def _participant_call(
        self,
        environment: Environment,
        operation: str,
        element: str,
        value: str,
        key: str | None = None,
    ) -> None:
        smp = self._endpoint(environment).smp_id
        action = (
            _PARTICIPANT_ACTION
            + {
                "Create": "createIn",
                "Delete": "deleteIn",
                "PrepareToMigrate": "prepareMigrateIn",
                "Migrate": "migrateIn",
            }[operation]
        )
        message = participant_message(element, smp, value, key)
        await self._call(environment, PARTICIPANT_PATH, action, operation, message)

    async def register_smp(self, environment: Environment, url: str) -> None:
        endpoint = self._endpoint(environment)
        physical = await _address_of(url)
        update = smp_message("Update", endpoint.smp_id, url, physical)
        try:
            await self._call(environment, SMP_PATH, _SMP_ACTION + "updateIn", "Update", update)
        except LocatorError as e:
            if e.fault is not LocatorFault.NOT_FOUND:
                raise
            create = smp_message("Create", endpoint.smp_id, url, physical)
            await self._call(environment, SMP_PATH, _SMP_ACTION + "createIn", "Create", create)

    async def create(self, environment: Environment, participant: str) -> None:
        await self._participant_call(
            environment, "Create", "CreateParticipantIdentifier", participant
        )

    async def delete(self, environment: Environment, participant: str) -> None:
        await self._participant_call(
            environment, "Delete", "DeleteParticipantIdentifier", participant
        )

    async def prepare_migration(self, environment: Environment, participant: str, key: str) -> None:
        await self._participant_call(
            environment, "PrepareToMigrate", "PrepareMigrationRecord", participant, key
        )

    async def migrate(self, environment: Environment, participant: str, key: str) -> None:
        await self._participant_call(
            environment, "Migrate", "CompleteMigrationRecord", participant, key
        )

    async def registered(self, environment: Environment, participant: str) -> bool:
        smp = self._endpoint(environment).smp_id
        wanted = participant.strip().lower()
        next_page: str | None = None
        for _ in range(MAX_PAGES):
            body = await self._call(
                environment,
                PARTICIPANT_PATH,
                _PARTICIPANT_ACTION + "listIn",
                "List",
                page_request(smp, next_page),
            )
            page = body.find(_q(LRS, "ParticipantIdentifierPage"))
            if page is None:
                return False
            for found in page.iter(_q(IDS, "ParticipantIdentifier")):
                scheme = (found.get("scheme") or "").strip().lower()
                if scheme == PARTICIPANT_SCHEME and (found.text or "").strip().lower() == wanted:
                    return True
            next_page = (page.findtext(_q(LRS, "NextPageIdentifier")) or "").strip() or None
            if next_page is None:
                return False
        return False

    async def aclose(self) -> None:
        sessions, self._sessions = list(self._sessions.values()), {}
        for s in sessions:
            await s.close()

    def __repr__(self) -> str:
        shown = {e.value: (p.url, p.smp_id) for e, p in self._endpoints.items()}
        return f"SoapLocator({shown!r})"


async def _address_of(url: str) -> str:
    """The SMP's physical address: the IP address its URL's host resolves to (the host name
    when it does not resolve here)."""
    host = urlsplit(url).hostname or ""
    try:
        found = await asyncio.get_running_loop().getaddrinfo(host, None)
    except OSError:
        return host
    return str(found[0][4][0]) if found else host
