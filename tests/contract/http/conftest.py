"""The HTTP interface, served by the real container over every storage adapter."""

from __future__ import annotations

import shutil
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

import pg
from fourcorner.adapters.pki import ensure_test_pki
from fourcorner.entrypoints.config import Settings
from fourcorner.entrypoints.container import build_container, resolve, web_app
from fourcorner.entrypoints.http.lingering import LINGER, Linger
from fourcorner.entrypoints.http.server import GuardedAppRunner
from fourcorner.entrypoints.http.spooling import PACE, Pace
from fourcorner.entrypoints.http.webhook_handlers import TriggerTurns

BACKENDS = ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


class Api:
    """A client of the service: call it as a user (by email), with an API key, or anonymously."""

    def __init__(self, client: Any, container: Any) -> None:
        self.client = client
        self.container = container
        self._tokens: dict[tuple[str, bool], str] = {}

    def token(self, email: str, *, superadmin: bool = False, name: str = "") -> str:
        key = (email, superadmin)
        if key not in self._tokens:
            authority = self.container.token_authority()
            self._tokens[key] = authority.issue(
                email, name=name or email.split("@")[0].title(), superadmin=superadmin
            )
        return self._tokens[key]

    async def call(
        self,
        method: str,
        path: str,
        *,
        as_: str | None = None,
        superadmin: bool = False,
        key: str | None = None,
        json: Any = None,
        data: Any = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any]:
        h = dict(headers or {})
        if as_ is not None:
            h["Authorization"] = f"Bearer {self.token(as_, superadmin=superadmin)}"
        if key is not None:
            h["X-Api-Key"] = key
        resp = await self.client.request(method, path, json=json, data=data, headers=h)
        body = await resp.json() if resp.content_type == "application/json" else await resp.read()
        return resp.status, body

    async def many_test_events(self) -> None:
        """Let every organisation raise test events without the bound of a minute's
        (``TriggerTurns``): for tests that raise many."""
        turns: TriggerTurns = await resolve(self.container.test_events)
        turns.per_minute = 100_000

    async def me(self, email: str) -> dict[str, Any]:
        status, body = await self.call("GET", "/users/me", as_=email)
        assert status == 200, body
        return body

    async def send(self, email: str, org_id: str, ap_id: str, sbd: bytes) -> dict[str, Any]:
        """POST ``sbd`` to the organisation's transactions through access point ``ap_id``:
        the 202 answer's body."""
        status, body = await self.call(
            "POST",
            f"/orgs/{org_id}/transactions?ap={ap_id}",
            as_=email,
            data=sbd,
            headers={"Content-Type": "application/xml"},
        )
        assert status == 202, body
        result: dict[str, Any] = body
        return result

    async def org(
        self, email: str, legal_id: str = "2120000787", code: str = "SE:ORGNR", **extra: Any
    ) -> dict[str, Any]:
        body = {
            "legalIdentifier": legal_id,
            "legalName": "ACME AB",
            "countryCode": "SE",
            "legalIdentifierCode": code,
            **extra,
        }
        status, org = await self.call("POST", "/orgs", as_=email, json=body)
        assert status == 201, org
        return org


def settings_for(backend: str, tmp_path: Any, schema: str = "", **extra: Any) -> Settings:
    url = {
        "memory": "memory://",
        "sqlite": f"sqlite:///{tmp_path / 'fourcorner.db'}",
        "postgres": pg.URL,
    }[backend]
    return Settings(data_dir=tmp_path, database_url=url, database_schema=schema, **extra).check()


@pytest.fixture(params=BACKENDS)
async def paced(request: Any, tmp_path: Any, aiohttp_client: Any, shared_pki: Path) -> Any:
    """``await paced(Pace(...), **settings)``: the service on the backend with those bounds of
    a body's arrival and those settings, and a lingering close of 0.2 seconds' patience."""
    shutil.copytree(shared_pki, tmp_path / "pki")
    schemas: list[Any] = []

    async def start(pace: Pace, **settings: Any) -> Api:
        schema = ""
        if request.param == "postgres":
            ctx = pg.fresh_schema("fc_http")
            schema = ctx.__enter__()
            schemas.append(ctx)
        container = build_container(settings_for(request.param, tmp_path, schema, **settings))
        app = await web_app(container)
        app[PACE] = pace
        app[LINGER] = Linger(idle=0.2, total=1.0)
        api = Api(await aiohttp_client(app), container)
        apis.append(api)
        return api

    apis: list[Api] = []
    yield start
    for api in apis:
        await api.client.close()
    for ctx in schemas:
        ctx.__exit__(None, None, None)


@pytest.fixture(scope="session")
def shared_pki(tmp_path_factory: Any) -> Path:
    """One test PKI for the whole run: RSA key generation is too slow to repeat per test."""
    data_dir = tmp_path_factory.mktemp("pki-source")
    ensure_test_pki(data_dir)
    return data_dir / "pki"


@pytest.fixture(params=BACKENDS)
async def api(
    request: Any, tmp_path: Any, aiohttp_client: Any, shared_pki: Path, validator: Any
) -> AsyncIterator[Api]:
    shutil.copytree(shared_pki, tmp_path / "pki")
    if request.param == "postgres":
        with pg.fresh_schema("fc_http") as schema:
            settings = settings_for("postgres", tmp_path, schema)
            started = await _start(settings, aiohttp_client, validator=validator)
            yield started
            await started.client.close()  # its workers and pool end before the schema goes
    else:
        settings = settings_for(request.param, tmp_path)
        yield await _start(settings, aiohttp_client, validator=validator)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def two_servers(
    request: Any, tmp_path: Any, aiohttp_client: Any, shared_pki: Path, validator: Any
) -> AsyncIterator[list[Api]]:
    """Two servers on one database and data dir, as two processes of one deployment."""
    shutil.copytree(shared_pki, tmp_path / "pki")
    if request.param == "postgres":
        with pg.fresh_schema("fc_http") as schema:
            settings = settings_for("postgres", tmp_path, schema)
            servers = [await _start(settings, aiohttp_client, validator=validator) for _ in "ab"]
            yield servers
            for server in servers:  # their workers and pools end before the schema goes
                await server.client.close()
    else:
        settings = settings_for("sqlite", tmp_path)
        yield [await _start(settings, aiohttp_client, validator=validator) for _ in "ab"]


class GuardedTestServer(TestServer):
    """The test server, built as ``fourcorner serve`` builds its server (``GuardedAppRunner``)."""

    def __init__(self, app: web.Application, *, hsts: bool = False, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        self._hsts = hsts

    async def _make_runner(self, **kwargs: Any) -> web.AppRunner:
        return GuardedAppRunner(self.app, hsts=self._hsts, **kwargs)


async def _start(
    settings: Settings,
    aiohttp_client: Any,
    *,
    workers: bool = False,
    port: int | None = None,
    **overrides: Any,
) -> Api:
    """``overrides``: container providers to replace (``build_container``)."""
    container = build_container(settings, **overrides)
    app = await web_app(container, workers=workers)
    server = GuardedTestServer(app, hsts=settings.https, **({"port": port} if port else {}))
    client = await aiohttp_client(server)
    return Api(client, container)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
async def start_api(
    tmp_path: Any, aiohttp_client: Any, shared_pki: Path, validator: Any
) -> AsyncIterator[Any]:
    """Start a server on a backend with extra settings: ``await start_api("sqlite", workers=True,
    webhook_retry_delays="0.05,0.05")``; every server checks documents with the run's one
    validator (its workers compile the rules once). The servers are closed (their workers stopped, their
    pools closed) before their schemas are dropped: a worker of a live server could hold a
    lock the drop waits for, while the drop keeps the event loop from finishing its work."""
    schemas: list[Any] = []
    started: list[Api] = []

    async def start(
        backend: str,
        *,
        workers: bool = False,
        public: bool = False,
        port: int | None = None,
        clock: Any = None,
        **extra: Any,
    ) -> Api:
        """``public``: serve on a port known in advance (``port``, or a free one), so the SMP
        and AP URLs it publishes (FOURCORNER_PUBLIC_URL) point at this very server; ``clock``:
        the container's clock."""
        data = tmp_path / f"{backend}-{len(schemas)}"
        data.mkdir()
        shutil.copytree(shared_pki, data / "pki")
        schema = ""
        if backend == "postgres":
            ctx = pg.fresh_schema("fc_http")
            schema = ctx.__enter__()
            schemas.append(ctx)
        else:
            schemas.append(None)
        port = (port or free_port()) if public else None
        if port:
            extra["public_url"] = f"http://127.0.0.1:{port}"
        settings = settings_for(backend, data, schema, **extra)
        overrides = {"validator": validator} | ({"clock": clock} if clock is not None else {})
        api = await _start(settings, aiohttp_client, workers=workers, port=port, **overrides)
        started.append(api)
        return api

    yield start
    for api in started:
        await api.client.close()
    for ctx in schemas:
        if ctx is not None:
            ctx.__exit__(None, None, None)
