"""Processes of one deployment starting at once on a new database, as an orchestrator starts
its replicas: each must start (``asyncio.gather`` of two servers' start, many rounds, each
on a fresh PostgreSQL schema and a shared data dir), and the operator's records are made
once. Processes whose data dirs make test PKIs of their own do not overwrite each other's
certificates: one starts, the others refuse.

``operator_setup.ensure_operator`` reads whether the operator's organisation, certificates,
SMPs and access points exist and adds those it did not find; the process that commits second
clashes, and looks again (as ``sml.ensure_smp`` does): it finds them there.
"""

from __future__ import annotations

import asyncio
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import pg
from fourcorner.adapters.pki.testpki import AP_CERT, AP_KEY, current_leaf_pem, load_test_pki
from fourcorner.application import operator_setup
from fourcorner.application.collections import (
    ACCESS_POINTS,
    CERTIFICATES,
    ORGANISATIONS,
    PARTICIPANTS,
    SMPS,
)
from fourcorner.domain.certificates import Service
from fourcorner.domain.network_services import Environment
from fourcorner.entrypoints.container import build_container, resolve, settle, web_app
from fourcorner.entrypoints.operator_guard import stored_certificates
from fourcorner.entrypoints.preflight import StartupError

from .conftest import settings_for

ROUNDS = 6


@pytest.mark.postgres
async def test_two_processes_starting_at_once_on_a_new_database_both_start(
    tmp_path: Path, shared_pki: Path, validator: Any
) -> None:
    shutil.copytree(shared_pki, tmp_path / "pki")
    failed = []
    for round_ in range(ROUNDS):
        with pg.fresh_schema("fc_http") as schema:
            settings = settings_for("postgres", tmp_path, schema)
            containers = [build_container(settings, validator=validator) for _ in "ab"]
            started = await asyncio.gather(
                *(web_app(container) for container in containers), return_exceptions=True
            )
            failed += [(round_, repr(app)) for app in started if isinstance(app, BaseException)]
            if not failed:
                made = await _made(containers[0])
                if made != _once(containers[0]):
                    failed.append((round_, made))
            for container in containers:  # their pools close before the schema goes
                await settle(container.shutdown_resources())
    assert not failed, failed


@pytest.mark.postgres
async def test_of_two_processes_with_test_pkis_of_their_own_one_starts(
    tmp_path: Path, validator: Any
) -> None:
    """Two processes whose data dirs have no pki/ start at once on a new database: each makes
    a test PKI of its own, and both find the database empty. The one that stores its
    certificates first starts; the other finds them there and refuses to start rather than
    replace them (``CertificateKept``): the stored certificates are the starter's own."""
    failed = []
    for round_ in range(3):
        dirs = [tmp_path / f"{round_}-{name}" for name in "ab"]
        with pg.fresh_schema("fc_http") as schema:
            containers = [
                build_container(settings_for("postgres", d, schema), validator=validator)
                for d in dirs
            ]
            started = await asyncio.gather(
                *(web_app(container) for container in containers), return_exceptions=True
            )
            refused = [i for i, app in enumerate(started) if isinstance(app, StartupError)]
            if len(refused) != 1:
                failed.append((round_, [repr(app) for app in started]))
            else:
                (winner,) = {0, 1} - set(refused)
                lost = str(started[refused[0]])
                if "may not replace" not in lost or str(dirs[refused[0]]) not in lost:
                    failed.append((round_, lost))
                stored = {
                    c.cert_pem for c in stored_certificates(containers[0].settings()).values()
                }
                own = container_certificates(containers[winner])
                if stored != own:
                    failed.append((round_, "the stored certificates are not the starter's"))
            for container in containers:
                await settle(container.shutdown_resources())
    assert not failed, failed


@pytest.mark.postgres
async def test_of_two_renewals_started_at_once_the_newer_is_stored(
    tmp_path: Path, shared_pki: Path, validator: Any
) -> None:
    """Two processes restart at once with two renewals of the stored AP certificate, one
    issued after the other, and set up the operator's records at the same moment. Each
    decides on the record it holds: the older one is stored and then renewed by the newer,
    or finds the newer stored and refuses; never does the older end up stored."""
    pki = load_test_pki(shared_pki)
    failed = []
    for round_ in range(4):
        dirs = [tmp_path / f"{round_}-{name}" for name in ("first", "older", "newer")]
        renewals = []
        for minutes, folder in ((1, dirs[1]), (2, dirs[2])):
            later = datetime.now(UTC) + timedelta(minutes=minutes)
            cert, key = current_leaf_pem(pki.ap_ca, pki.ap_ca_key, pki.seat_id, days=9, now=later)
            shutil.copytree(shared_pki, folder / "pki")
            for name, text in ((AP_CERT, cert), (AP_KEY, key)):
                (folder / "pki" / name).unlink()
                (folder / "pki" / name).write_text(text)
            renewals.append(cert)
        shutil.copytree(shared_pki, dirs[0] / "pki")
        with pg.fresh_schema("fc_http") as schema:
            first = build_container(settings_for("postgres", dirs[0], schema), validator=validator)
            await web_app(first)
            await settle(first.shutdown_resources())
            containers = [
                build_container(settings_for("postgres", d, schema), validator=validator)
                for d in dirs[1:]
            ]
            for container in containers:
                await settle(container.init_resources())
            # the operator's set-up of both at once, the older's first in one round, the
            # newer's in the next
            setups = [_setup(container) for container in containers]
            order = setups if round_ % 2 else setups[::-1]
            done = await asyncio.gather(*order, return_exceptions=True)
            newer = done[1] if round_ % 2 else done[0]
            if isinstance(newer, BaseException):
                failed.append((round_, repr(newer)))
            stored = stored_certificates(first.settings())
            if stored[Environment.TEST, Service.AP].cert_pem != renewals[1]:
                failed.append((round_, "the older renewal is stored"))
            for container in containers:
                await settle(container.shutdown_resources())
    assert not failed, failed


async def _setup(container: Any) -> None:
    """The operator's set-up of the TEST environment (one certificate record to race on: of
    two, the second read could find the first committed)."""
    ctx = await resolve(container.context)
    net = await resolve(container.network)
    await operator_setup.ensure_operator(ctx, net, container.operator_environments()[:1])


def container_certificates(container: Any) -> set[str]:
    """The AP and SMP certificates a process starts with."""
    return {
        pem for e in container.operator_environments() for pem in (e.ap_cert_pem, e.smp_cert_pem)
    }


async def _made(container: Any) -> dict[str, int]:
    """How many records of each of the operator's kinds the new database holds."""
    ctx = await resolve(container.context)
    async with ctx.uow() as uow:
        return {c.name: await uow.repository(c).count() for c in _KINDS}


def _once(container: Any) -> dict[str, int]:
    """What one process's start makes: the operator organisation; per environment its AP and
    SMP certificates, its SMP, its access point and its own participant ``0242:<spid>``."""
    envs = len(container.operator_environments())
    return dict(zip((c.name for c in _KINDS), (1, 2 * envs, envs, envs, envs), strict=True))


_KINDS = (ORGANISATIONS, CERTIFICATES, SMPS, ACCESS_POINTS, PARTICIPANTS)
