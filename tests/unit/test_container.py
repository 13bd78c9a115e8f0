"""The composition root: handlers' markers name its providers, checked before the app starts;
the workers' wake-up callbacks are its providers; settings come from the ``Settings`` object."""

from __future__ import annotations

import pytest
from dependency_injector.wiring import Provide

from fourcorner.entrypoints.config import Settings
from fourcorner.entrypoints.container import build_container, resolve, web_app
from fourcorner.entrypoints.http.routing import Reply, Req, Route, markers
from fourcorner.entrypoints.markers import UnknownProvider, check_markers


def _settings(tmp_path, **values):
    return Settings(data_dir=tmp_path, database_url="memory://", **values)


async def lost(req: Req, thing: object = Provide["no_such_provider"]) -> Reply:
    return Reply(200, {})


async def misspelt(req: Req, prefix: str = Provide["config.smp_prefx"]) -> Reply:
    return Reply(200, {})


async def too_deep(req: Req, value: object = Provide["catalogue.document_types"]) -> Reply:
    return Reply(200, {})


def _route(handler, path):
    return Route("GET", path, handler, "a test route", None, "test")


def test_every_marker_of_the_route_table_names_a_provider(tmp_path):
    container = build_container(_settings(tmp_path))
    table = container.route_table()
    names = {name for _, _, name in markers(table)}
    # the table's handlers do name providers, among them settings' values
    assert {"context", "sending_wake", "delivery_wake", "config.smp_prefix"} <= names
    check_markers(container, table)


async def test_a_marker_naming_no_provider_stops_the_start_naming_the_handler(tmp_path):
    routes = [_route(lost, "/lost"), _route(misspelt, "/misspelt"), _route(too_deep, "/deep")]
    container = build_container(_settings(tmp_path), route_table=routes)
    with pytest.raises(UnknownProvider) as raised:
        await web_app(container)
    message = str(raised.value)
    assert f'{__name__}.lost: thing=Provide["no_such_provider"]' in message
    assert "no provider 'no_such_provider'" in message
    assert f'{__name__}.misspelt: prefix=Provide["config.smp_prefx"]' in message
    assert "the settings have no value 'smp_prefx'" in message
    assert f'{__name__}.too_deep: value=Provide["catalogue.document_types"]' in message
    # refused before anything was opened
    assert not container.storage.initialized


async def test_the_wake_up_callbacks_are_the_workers_own(tmp_path):
    container = build_container(_settings(tmp_path))
    await container.init_resources()
    try:
        sender = await resolve(container.sending_worker)
        deliverer = await resolve(container.delivery_worker)
        assert await resolve(container.sending_wake) == sender.wake
        assert await resolve(container.delivery_wake) == deliverer.wake
    finally:
        await container.shutdown_resources()


def test_settings_values_are_read_from_the_settings_object(tmp_path):
    settings = _settings(tmp_path, smp_prefix="/lookup", public_url="https://ap.example")
    container = build_container(settings)
    assert container.settings() is settings
    assert container.config.smp_prefix() == "/lookup"
    assert container.config.base_url() == "https://ap.example"  # a computed value
    # a provider built from them: the route table serves the SMP under the prefix
    assert any(route.path.startswith("/lookup/") for route in container.route_table())
