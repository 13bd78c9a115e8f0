"""The operator's set-up at start: its own participant 0242:<spid> in every environment, the
SMP publishing the access point certificate the operator has now (after a renewal too), and
stored certificates that files other than their successors do not replace."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from pathlib import Path

import attrs
import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding

from fourcorner.adapters.pki import ensure_test_pki
from fourcorner.adapters.pki.inspector import TrustAnchorInspector
from fourcorner.adapters.pki.testpki import (
    current_leaf_pem,
    load_test_pki,
)
from fourcorner.application import operator_setup
from fourcorner.application.collections import CERTIFICATES
from fourcorner.application.context import Context, Network
from fourcorner.application.repositories import Participants
from fourcorner.domain.certificates import Service
from fourcorner.domain.envelope import seat_spid, spid_participant
from fourcorner.domain.network_services import Environment
from fourcorner.entrypoints.config import Settings
from fourcorner.entrypoints.container import build_container, resolve

SEAT = "PFC000001"


async def published_certificate(ctx: Context, net: Network, env: Environment, ident: str) -> bytes:
    registrar = net.smp
    async with ctx.uow() as uow:
        reg = await registrar.lookup(uow, env, ident)
    assert reg is not None, (env, ident)
    [endpoint] = {e for s in reg.services for p in s.processes for e in p.endpoints}
    return base64.b64decode(endpoint.certificate)


def der(pem: str) -> bytes:
    return x509.load_pem_x509_certificate(pem.encode()).public_bytes(Encoding.DER)


async def test_the_operator_participant_is_in_every_environment_and_follows_a_renewal(
    tmp_path: Path,
) -> None:
    ensure_test_pki(tmp_path, seat_id=SEAT)
    container = build_container(Settings(data_dir=tmp_path, database_url="memory://"))
    await container.init_resources()
    try:
        ctx = await resolve(container.context)
        net = await resolve(container.network)
        pki = load_test_pki(tmp_path / "pki")

        def leaf(later: timedelta = timedelta(0)) -> tuple[str, str]:
            now = datetime.now(UTC) + later
            return current_leaf_pem(pki.ap_ca, pki.ap_ca_key, SEAT, days=30, now=now)

        # each environment's access point with a certificate of its own (the test PKI gives
        # both the same), so that a published certificate tells which environment it is from
        prod_cert, prod_key = leaf()
        environments = [
            attrs.evolve(e, ap_cert_pem=prod_cert, ap_key_pem=prod_key)
            if e.environment is Environment.PROD
            else e
            for e in container.operator_environments()
        ]
        own = {e.environment: e.ap_cert_pem for e in environments}
        assert own[Environment.TEST] != own[Environment.PROD]
        await operator_setup.ensure_operator(ctx, net, environments, seat_spid(SEAT))
        ident = spid_participant(seat_spid(SEAT)).value.lower()
        async with ctx.uow() as uow:
            found = {env: await Participants(uow).by_identifier(ident, env) for env in Environment}
        assert all(p is not None and p.environment is env for env, p in found.items()), found
        assert len({p.id for p in found.values() if p is not None}) == 2
        for env in Environment:
            published = await published_certificate(ctx, net, env, ident)
            assert published == der(own[env])

        # the TEST AP certificate is renewed (a new key, the same CA, a later start): the TEST
        # SMP publishes the new one at the next start, the PROD one keeps its own
        renewed, key = leaf(later=timedelta(minutes=1))
        changed = [
            attrs.evolve(e, ap_cert_pem=renewed, ap_key_pem=key)
            if e.environment is Environment.TEST
            else e
            for e in environments
        ]
        await operator_setup.ensure_operator(ctx, net, changed, seat_spid(SEAT))
        assert await published_certificate(ctx, net, Environment.TEST, ident) == der(renewed)
        prod = await published_certificate(ctx, net, Environment.PROD, ident)
        assert prod == der(own[Environment.PROD])
    finally:
        await container.shutdown_resources()


async def stored_pems(ctx: Context) -> dict[str, str]:
    async with ctx.uow() as uow:
        return {c.name: c.cert_pem for c in await uow.repository(CERTIFICATES).all()}


async def test_an_older_certificate_or_another_test_pkis_does_not_replace_the_stored_one(
    tmp_path: Path,
) -> None:
    """A process with older files (a restart before its files were renewed) or with a test PKI
    of its own (a data dir without the shared pki/) refuses, and the stored ones stay."""
    ensure_test_pki(tmp_path / "first", seat_id=SEAT)
    settings = Settings(data_dir=tmp_path / "first", database_url="memory://")
    container = build_container(settings)
    await container.init_resources()
    try:
        ctx = await resolve(container.context)
        net = await resolve(container.network)
        pki = load_test_pki(tmp_path / "first" / "pki")
        environments = container.operator_environments()
        # stored: a renewal, a minute later than the files the test PKI was made with
        later = datetime.now(UTC) + timedelta(minutes=1)
        renewed, key = current_leaf_pem(pki.ap_ca, pki.ap_ca_key, SEAT, days=30, now=later)
        current = [attrs.evolve(e, ap_cert_pem=renewed, ap_key_pem=key) for e in environments]
        await operator_setup.ensure_operator(ctx, net, current, seat_spid(SEAT))
        stored = await stored_pems(ctx)
        assert sum(pem == renewed for pem in stored.values()) == 2  # TEST and PROD AP

        with pytest.raises(operator_setup.CertificateKept) as older:
            await operator_setup.ensure_operator(ctx, net, environments, seat_spid(SEAT))
        assert older.value.service is Service.AP and "not newer" in older.value.problem
        assert await stored_pems(ctx) == stored

        # a process whose data dir made a test PKI of its own: its files, its trust anchors
        other = ensure_test_pki(tmp_path / "other", seat_id=SEAT)
        newer = later + timedelta(minutes=1)  # newer than the stored one, too
        cert, key = current_leaf_pem(other.ap_ca, other.ap_ca_key, SEAT, days=30, now=newer)
        foreign = [
            attrs.evolve(e, ap_cert_pem=cert, ap_key_pem=key, ap_chain_pem=other.ap_chain_pem)
            for e in current
        ]
        net = attrs.evolve(net, certificates=TrustAnchorInspector(lambda: other.trust_anchors))
        with pytest.raises(operator_setup.CertificateKept) as stranger:
            await operator_setup.ensure_operator(ctx, net, foreign, seat_spid(SEAT))
        assert "another test PKI" in stranger.value.problem
        assert await stored_pems(ctx) == stored
    finally:
        await container.shutdown_resources()
