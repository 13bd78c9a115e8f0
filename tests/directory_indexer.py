"""A directory's indexer for the tests, on 127.0.0.1, as the network's (its indexer
interface, ``PUT <indexer>/`` with ``iso6523-actorid-upis::<id>`` as text, ``DELETE
<indexer>/<percent-encoded id>``).

Like the network's directory, it reads the business card from the SMP it is given (one
environment's: the directory of TEST reads TEST's SMP) when asked to index a participant,
and keeps it; an SMP without that card is answered 404. ``refuse``: the status to answer
every call with instead (a directory that is down).
"""

from __future__ import annotations

import urllib.parse

import aiohttp
from aiohttp import web

SCHEME = "iso6523-actorid-upis"
PATH = "/indexer/1.0/"


class Indexer:
    def __init__(self, smp: str = "") -> None:
        self.smp = smp  # the base URL of the SMP the cards are read from; "": none read
        self.cards: dict[str, bytes] = {}  # participant (scheme::value) -> its card, as read
        self.calls: list[tuple[str, str]] = []  # (method, participant), in order
        self.refuse: int | None = None

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_put(PATH, self.index)
        app.router.add_delete(PATH + "{participant}", self.remove)
        return app

    async def index(self, request: web.Request) -> web.Response:
        participant = (await request.text()).strip()
        self.calls.append(("PUT", participant))
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
        self.cards[participant] = card
        return web.Response(status=200)

    async def remove(self, request: web.Request) -> web.Response:
        participant = request.match_info["participant"]  # percent-decoded by the router
        self.calls.append(("DELETE", participant))
        if self.refuse is not None:
            return web.Response(status=self.refuse)
        if self.cards.pop(participant, None) is None:
            return web.Response(status=404)
        return web.Response(status=204)
