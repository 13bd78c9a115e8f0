"""Certificates changed while their organisation, or they themselves, change, on every backend.

An upload checks the organisation's mode, inspects the certificate outside any unit of work,
then stores it in a second one: that one checks the mode again with the organisation held, so
an organisation moved out of whitelabel meanwhile gets no certificate, and a move asked while
the certificate is being stored waits for it. The units of work are hooked
(``HookedUnitOfWork``) to change the organisation at exactly those points.

Changes of one certificate's fields sent at once, many rounds (``asyncio.gather``; on
PostgreSQL overlapping transactions on different pooled connections, at READ COMMITTED): each
reads the record under its lock, so none is lost.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import pytest

from fourcorner.application import certificates
from fourcorner.application.access import Principal
from fourcorner.application.context import Context
from fourcorner.application.repositories import Users
from fourcorner.application.storage import UnitOfWork
from fourcorner.domain.certificates import CertificateEnvironment, Service
from fourcorner.domain.errors import ModeNotPermitted
from fourcorner.entrypoints.container import resolve

from .test_certificate_keys import new_certificate, stored, upload
from .test_membership_races import as_root
from .test_participants import ALICE, pki, whitelabel

Hook = Callable[[], Awaitable[None]]
ROUNDS = 24


class HookedUnitOfWork:
    """``inner``, running ``on_enter`` before it begins and ``on_commit`` before it commits."""

    def __init__(self, inner: UnitOfWork, on_enter: Hook | None, on_commit: Hook | None) -> None:
        self._inner, self._on_enter, self._on_commit = inner, on_enter, on_commit

    async def __aenter__(self) -> HookedUnitOfWork:
        if self._on_enter is not None:
            await self._on_enter()
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._inner.__aexit__(*exc)

    async def commit(self) -> None:
        if self._on_commit is not None:
            await self._on_commit()
        await self._inner.commit()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def hooked_second(ctx: Context, *, on_enter: Hook | None = None, on_commit: Hook | None = None):
    """``ctx`` whose second unit of work (an upload's, where it stores the certificate) runs
    the hooks."""
    made = 0

    def unit_of_work() -> Any:
        nonlocal made
        made += 1
        inner = ctx.uow()
        return HookedUnitOfWork(inner, on_enter, on_commit) if made == 2 else inner

    return attrs.evolve(ctx, uow=unit_of_work)


async def setting(api: Any) -> tuple[Context, Any, Principal, dict[str, Any], Any]:
    """A whitelabel organisation of Alice's that asks to go SHARED; the use cases' context,
    the network, Alice, the organisation and an upload of a new certificate."""
    org = await whitelabel(api)
    status, body = await api.call(
        "PUT", f"/orgs/{org['id']}", as_=ALICE, json={"modeChangeRequest": "SHARED"}
    )
    assert status == 200, body
    ctx = await resolve(api.container.context)
    net = await resolve(api.container.network)
    alice_id = (await api.me(ALICE))["id"]
    async with ctx.uow() as uow:
        alice = await Users(uow).get(alice_id)
    assert alice is not None
    cert, key = new_certificate(api)
    upload = certificates.CreateCertificate(
        "ours",
        Service.AP,
        CertificateEnvironment.TEST,
        cert,
        key,
        ca_chain_pem=pki(api).ap_chain_pem,
    )
    return ctx, net, Principal(user=alice), org, upload


async def mode(api: Any, org: dict[str, Any]) -> str:
    status, body = await api.call("GET", f"/orgs/{org['id']}", as_=ALICE)
    assert status == 200, body
    return str(body["organisationMode"])


def to_shared(api: Any, org: dict[str, Any]) -> Awaitable[tuple[int, Any]]:
    return as_root(api, "PUT", f"/orgs/{org['id']}", json={"organisationMode": "SHARED"})


async def test_an_organisation_moved_out_of_whitelabel_before_the_store_gets_no_certificate(api):
    ctx, net, alice, org, upload = await setting(api)

    async def move() -> None:
        status, body = await to_shared(api, org)
        assert status == 200, body

    with pytest.raises(ModeNotPermitted):
        await certificates.create_certificate(
            hooked_second(ctx, on_enter=move), net, alice, org["id"], upload
        )
    assert await stored(api) == []
    assert await mode(api, org) == "SHARED"


async def test_a_move_out_of_whitelabel_waits_for_the_certificate_being_stored(api):
    """The organisation is held from the second check until the certificate is stored: the
    superadmin's move asked meanwhile answers only after the commit (on every backend; on
    PostgreSQL only the organisation's lock makes it wait)."""
    ctx, net, alice, org, upload = await setting(api)
    moves: list[asyncio.Task[tuple[int, Any]]] = []

    async def move_while_storing() -> None:
        moves.append(asyncio.ensure_future(to_shared(api, org)))
        done, _ = await asyncio.wait(moves, timeout=0.5)
        assert not done, "the organisation's mode changed before the certificate was stored"

    cert = await certificates.create_certificate(
        hooked_second(ctx, on_commit=move_while_storing), net, alice, org["id"], upload
    )
    status, body = await moves[0]
    assert status == 200, body
    assert [c.id for c in await stored(api)] == [cert.id]
    assert await mode(api, org) == "SHARED"


async def _concurrent_field_changes(apis: list[Any]) -> None:
    """``ROUNDS`` times, a new name and a new description of one certificate sent at once
    (through each server in turn): both answer 200 and both are kept, whichever commits
    first."""
    org = await whitelabel(apis[0])
    cert, key = new_certificate(apis[0])
    status, made = await upload(apis[0], org, ALICE, cert, key)
    assert status == 201, made
    [first] = await stored(apis[0])
    path = f"/orgs/{org['id']}/certificates/{made['id']}"
    for n in range(ROUNDS):
        changes = [{"name": f"name {n}"}, {"description": f"description {n}"}]
        if n % 2:
            changes.reverse()  # each sent first in half the rounds
        answers = await asyncio.gather(
            *(
                apis[i % len(apis)].call("PUT", path, as_=ALICE, json=change)
                for i, change in enumerate(changes)
            )
        )
        for (status, body), change in zip(answers, changes, strict=True):
            assert status == 200, (n, body)
            assert change.items() <= body.items(), (n, change, body)
        status, now = await apis[n % len(apis)].call("GET", path, as_=ALICE)
        assert status == 200, now
        assert (now["name"], now["description"]) == (f"name {n}", f"description {n}"), (n, now)
    [kept] = await stored(apis[0])
    assert (kept.name, kept.description) == (f"name {ROUNDS - 1}", f"description {ROUNDS - 1}")
    assert kept.sealed_key == first.sealed_key


async def test_concurrent_changes_of_a_certificates_fields_are_all_kept(api):
    await _concurrent_field_changes([api])


async def test_concurrent_changes_through_two_servers_are_all_kept(two_servers):
    await _concurrent_field_changes(two_servers)
