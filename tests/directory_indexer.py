"""A directory's indexer for the tests, on 127.0.0.1, as the network's (its indexer
interface, ``PUT <indexer>/`` with ``iso6523-actorid-upis::<id>`` as text, ``DELETE
<indexer>/<percent-encoded id>``).

Like the network's directory, it reads the business card from the SMP it is given (one
environment's: the directory of TEST reads TEST's SMP) when asked to index a participant,
and keeps it; an SMP without that card is answered 404. ``refuse``: the status to answer
every call with instead (a directory that is down). Served over TLS that asks for a client
certificate, it keeps the common name of the certificate each call came with in ``clients``
(the network's directory knows the SMP by it).
"""

from __future__ import annotations

import urllib.parse

import aiohttp
from aiohttp import web
from cryptography import x509
from cryptography.x509.oid import NameOID

SCHEME = "iso6523-actorid-upis"
PATH = "/indexer/1.0/"


class Indexer:
    def __init__(self, smp: str = "") -> None:
        self.smp = smp  # the base URL of the SMP the cards are read from; "": none read
        self.cards: dict[str, bytes] = {}  # participant (scheme::value) -> its card, as read
        self.calls: list[tuple[str, str]] = []  # (method, participant), in order
        self.read: dict[int, bytes] = {}  # the card each PUT read, by its place in calls
        self.refuse: int | None = None
        self.clients: list[str] = []  # over TLS: the client certificate's CN of each call

    def _client(self, request: web.Request) -> None:
        tls = request.transport.get_extra_info("ssl_object") if request.transport else None
        der = tls.getpeercert(binary_form=True) if tls is not None else None
        if der:
            name = x509.load_der_x509_certificate(der).subject
            self.clients.append(str(name.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value))

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_put(PATH, self.index)
        app.router.add_delete(PATH + "{participant}", self.remove)
        return app

    async def index(self, request: web.Request) -> web.Response:
        participant = (await request.text()).strip()
        self.calls.append(("PUT", participant))
        place = len(self.calls) - 1
        self._client(request)
        if self.refuse is not None:
            return web.Response(status=self.refuse)
        if request.content_type != "text/plain" or not participant.startswith(f"{SCHEME}::"):
            return web.Response(status=400, text="a participant identifier as text")
        card = b""
        if self.smp:
            quoted = urllib.parse.quote(participant, safe="")
            async with (
                aiohttp.ClientSession() as session,
                session.get(f"{self.smp}/businesscard/{quoted}") as resp,
            ):
                if resp.status != 200:
                    return web.Response(status=404, text=f"the SMP answered {resp.status}")
                card = await resp.read()
        self.cards[participant] = self.read[place] = card
        return web.Response(status=200)

    async def remove(self, request: web.Request) -> web.Response:
        participant = request.match_info["participant"]  # percent-decoded by the router
        self.calls.append(("DELETE", participant))
        self._client(request)
        if self.refuse is not None:
            return web.Response(status=self.refuse)
        if self.cards.pop(participant, None) is None:
            return web.Response(status=404)
        return web.Response(status=204)
