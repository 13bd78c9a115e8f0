"""The built-in SMP's read side: the signed documents SMP clients fetch, from storage.

Signing costs an RSA operation, so signed documents are kept in a bounded cache keyed by the
registration's id and modification time: a change of the registration changes the key.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import Callable

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from fourcorner.adapters.smp import xml
from fourcorner.application.collections import CERTIFICATES, SMPS
from fourcorner.application.ports import KeySealer, SmpRegistrar
from fourcorner.application.sealed import CERTIFICATE_KEY
from fourcorner.application.storage import UnitOfWorkFactory
from fourcorner.domain.certificates import Certificate
from fourcorner.domain.errors import InvalidIdentifier, InvalidInput, NotFound
from fourcorner.domain.identifier import ParticipantIdentifier
from fourcorner.domain.network_services import Environment, smp_url
from fourcorner.domain.smp import PARTICIPANT_SCHEME, SmpRegistration

Signer = tuple[rsa.RSAPrivateKey, x509.Certificate]


class SmpReader:
    def __init__(
        self,
        uow: UnitOfWorkFactory,
        registrar: SmpRegistrar,
        sealer: KeySealer,
        base_url: Callable[[], str] | str,
        *,
        cache_size: int = 4096,
        technical_contact: str = "",
    ) -> None:
        """``technical_contact``: the TechnicalContactUrl of an endpoint that names none (its
        organisation has no technical contact and no website), checked by the caller."""
        self._uow = uow
        self._registrar = registrar
        self._sealer = sealer
        self._base_url = base_url
        self._signers: dict[tuple[uuid.UUID, str], Signer] = {}
        self._cache: OrderedDict[tuple[str, str, str], bytes] = OrderedDict()
        self._cache_size = cache_size
        self._technical_contact = technical_contact

    @property
    def base_url(self) -> str:
        """The SMP root (``<base>/smp``); each environment's SMP is below it (``smp_url``)."""
        return self._base_url if isinstance(self._base_url, str) else self._base_url()

    async def _registration(
        self, environment: Environment, participant_segment: str
    ) -> tuple[SmpRegistration, Certificate]:
        """The participant's registration in the SMP of ``environment``: a participant of the
        other environment is not found here (each environment's SMP is its own)."""
        scheme, value = _participant(participant_segment)
        async with self._uow() as uow:
            reg = await self._registrar.lookup(uow, environment, value)
            smp = await uow.repository(SMPS).get(reg.smp_id) if reg is not None else None
            if reg is None or smp is None or smp.environment is not environment:
                raise NotFound(resource="participant", ident=f"{scheme}::{value}")
            cert_ref = smp.certificate_ref
            cert = await uow.repository(CERTIFICATES).get(cert_ref) if cert_ref else None
        if cert is None:
            raise NotFound(resource="SMP certificate", ident=str(reg.smp_id))
        return reg, cert

    def _signer(self, reg: SmpRegistration, cert: Certificate) -> Signer:
        """The SMP certificate's key and certificate; ``SecretUnusable`` when its sealed key
        does not open (the SMP cannot sign until the certificate is stored again)."""
        key = (cert.id, cert.fingerprint)
        signer = self._signers.get(key)
        if signer is None:
            pem = CERTIFICATE_KEY.open(self._sealer, cert, user=f"SMP {reg.smp_id}")
            private = serialization.load_pem_private_key(pem.encode(), password=None)
            if not isinstance(private, rsa.RSAPrivateKey):
                raise NotFound(resource="RSA key of the SMP certificate", ident=str(cert.id))
            signer = (private, x509.load_pem_x509_certificate(cert.cert_pem.encode()))
            self._signers[key] = signer
        return signer

    async def service_group(self, environment: Environment, participant_segment: str) -> bytes:
        reg, _ = await self._registration(environment, participant_segment)
        return xml.service_group(reg, smp_url(self.base_url, environment))

    async def service_metadata(
        self, environment: Environment, participant_segment: str, document_segment: str
    ) -> bytes:
        reg, cert = await self._registration(environment, participant_segment)
        try:
            doc_scheme, doc_value = xml.parse_path_segment(document_segment)
        except ValueError as e:
            raise InvalidInput.one("documentType", str(e)) from None
        service = reg.service(doc_scheme, doc_value)
        if service is None:
            raise NotFound(resource="document type", ident=f"{doc_scheme}::{doc_value}")
        cache_key = (str(reg.id), reg.last_modified_at.isoformat(), service.document_id)
        hit = self._cache.get(cache_key)
        if hit is not None:
            self._cache.move_to_end(cache_key)
            return hit
        key, signing_cert = self._signer(reg, cert)
        signed = xml.signed_service_metadata(
            reg, service, key, signing_cert, technical_contact=self._technical_contact
        )
        self._cache[cache_key] = signed
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return signed

    async def business_card(self, environment: Environment, participant_segment: str) -> bytes:
        reg, _ = await self._registration(environment, participant_segment)
        return xml.business_card(reg)


def _participant(segment: str) -> tuple[str, str]:
    try:
        scheme, value = xml.parse_path_segment(segment)
    except ValueError as e:
        raise InvalidInput.one("participant", str(e)) from None
    if scheme.lower() != PARTICIPANT_SCHEME:
        raise NotFound(resource="participant", ident=segment)
    try:
        ParticipantIdentifier.parse(value)
    except InvalidIdentifier as e:  # outside the syntax: unparsable (400), not unknown (404)
        raise InvalidInput.one("participant", e.rule) from None
    return scheme, value.lower()
