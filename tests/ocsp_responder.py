"""An OCSP responder served by a test on 127.0.0.1 (``aiohttp_server``), for the tests of the
revocation check: it answers each request (POSTed to ``/ocsp``) for the certificate it asks
about, signed by the CA or by a delegated responder, good, revoked or unknown, current or
stale; or it answers what a test sets instead (an error, a redirect, garbage, an answer that
stalls or never ends, as ``CrlPoint`` does)."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

import attrs
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509 import ocsp

from crl_point import CrlPoint
from fourcorner.adapters.pki.testpki import PrivateKey, sign_ocsp


@attrs.define
class OcspResponder(CrlPoint):
    """A responder signing with ``signer`` (a certificate and its key; ``delegated`` carries
    the certificate in the answer). ``revoked`` (serial number: since when) and ``unknown``
    decide the status, ``this_update``/``next_update`` the times, ``serial`` answers for
    another serial number; ``nonce`` is put in each answer, or with ``echo`` the request's;
    ``body``, when set, is the answer whatever is asked. ``asked`` keeps the requests' content
    types and the requests read."""

    content_type: str = "application/ocsp-response"
    signer: tuple[x509.Certificate, PrivateKey] | None = None
    delegated: bool = False
    revoked: dict[int, datetime] = attrs.Factory(dict)
    unknown: set[int] = attrs.Factory(set)
    this_update: datetime | None = None
    next_update: datetime | None = None
    serial: int | None = None
    nonce: bytes | None = None
    echo: bool = False
    content_types: list[str] = attrs.Factory(list)
    read: list[ocsp.OCSPRequest] = attrs.Factory(list)
    path: ClassVar[str] = "/ocsp"

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post(self.path, self.respond)
        app.router.add_post("/moved", self.moved)
        return app

    async def respond(self, request: web.Request) -> web.StreamResponse:
        self.content_types.append(request.content_type)
        if self.signer is not None:
            asked = ocsp.load_der_ocsp_request(await request.read())
            self.read.append(asked)
            assert self.this_update is not None
            answer = sign_ocsp(
                asked,
                *self.signer,
                this_update=self.this_update,
                next_update=self.next_update,
                revoked_on=self.revoked.get(asked.serial_number),
                unknown=asked.serial_number in self.unknown,
                serial=self.serial,
                delegated=self.delegated,
                nonce=nonce_of(asked) if self.echo else self.nonce,
            )
            self.body = answer.public_bytes(serialization.Encoding.DER)
        return await self.answer(request)


def nonce_of(request: ocsp.OCSPRequest) -> bytes:
    """The nonce ``request`` carries."""
    return request.extensions.get_extension_for_class(x509.OCSPNonce).value.nonce
