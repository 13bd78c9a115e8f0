"""``fourcorner worker`` and ``fourcorner serve`` tune the garbage collector once they have
started (``settle_heap``): ``serve`` once its app is built, just before the first request."""

import asyncio
import gc
import socket
import weakref
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from fourcorner.entrypoints.commands.serve import YOUNG_COLLECTION_THRESHOLD, settle_heap
from fourcorner.entrypoints.http import server


class _Node:
    next: object


def _frozen(thing: object) -> bool:
    """Whether ``thing`` is in the permanent generation (``gc.freeze``): the collector no
    longer lists it among the objects it walks."""
    return gc.is_tracked(thing) and not any(o is thing for o in gc.get_objects())


def test_start_up_objects_are_frozen_and_young_collections_are_spaced_out() -> None:
    threshold = gc.get_threshold()
    assert gc.get_freeze_count() == 0
    try:
        settle_heap()
        # the modules imported so far (pytest's, the service's) and what they hold
        assert gc.get_freeze_count() > 10_000
        assert gc.get_threshold() == (YOUNG_COLLECTION_THRESHOLD, *threshold[1:])
        # objects made afterwards are collected as before, by the collector on its own: a cycle
        # left behind is freed once enough new objects have been made
        assert gc.isenabled()
        node = _Node()
        node.next = node
        gone = weakref.ref(node)
        del node
        kept = [[] for _ in range(2 * YOUNG_COLLECTION_THRESHOLD)]
        assert gone() is None
        del kept
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)


async def test_serve_settles_the_heap_with_its_app_built_before_the_first_request() -> None:
    """The app ``serve`` builds in its loop is frozen with the rest (settled before it was
    built, it would not be), and the requests come after."""
    threshold = gc.get_threshold()
    built: list[web.Application] = []
    settled: list[bool] = []  # whether the app was frozen
    requests: list[bool] = []  # whether the heap was settled when each came

    async def hello(request: web.Request) -> web.Response:
        requests.append(bool(settled))
        return web.Response(text="hello")

    async def build() -> web.Application:
        app = web.Application()
        app.router.add_get("/", hello)
        built.append(app)
        return app

    def before_serving() -> None:
        assert len(built) == 1 and not _frozen(built[0])
        settle_heap()
        settled.append(_frozen(built[0]))

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    serving = asyncio.create_task(server.serve(build(), sock=sock, before_serving=before_serving))
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
            for _ in range(2):
                url = f"http://127.0.0.1:{sock.getsockname()[1]}/"
                async with session.get(url) as resp:
                    assert (resp.status, await resp.text()) == (200, "hello")
        assert settled == [True]
        assert requests == [True, True]
        assert gc.get_threshold()[0] == YOUNG_COLLECTION_THRESHOLD
    finally:
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)
        sock.close()
        gc.unfreeze()
        gc.set_threshold(*threshold)


def test_fourcorner_serve_settles_its_heap_just_before_serving(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command hands ``settle_heap`` to the server as the step after the app is built (a
    call before ``uvloop.run`` would freeze neither the app nor what its start-up makes)."""
    from fourcorner.entrypoints.commands import serve as serve_command
    from fourcorner.entrypoints.config import Settings

    given: dict[str, object] = {}

    async def fake_serve(app: Any, **kwargs: Any) -> None:
        given.update(kwargs)
        given["app"] = built = await app
        runner = web.AppRunner(built)  # started and cleaned up: nothing left open
        await runner.setup()
        await runner.cleanup()

    monkeypatch.setattr(server, "serve", fake_serve)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    serve_command.serve(Settings(data_dir=tmp_path, host="127.0.0.1", port=port), db_wait=5)
    assert given["before_serving"] is settle_heap
    assert isinstance(given["app"], web.Application)
