"""The operator's set-up at start: its own participant 0242:<spid> in every environment, and
the SMP publishing the access point certificate the operator has now (after a renewal too)."""

from __future__ import annotations

import base64
from pathlib import Path

import attrs
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding

from fourcorner.adapters.pki import ensure_test_pki
from fourcorner.adapters.pki.testpki import (
    current_leaf_pem,
    load_test_pki,
)
from fourcorner.application import operator_setup
from fourcorner.application.context import Context, Network
from fourcorner.application.repositories import Participants
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

        def leaf() -> tuple[str, str]:
            return current_leaf_pem(pki.ap_ca, pki.ap_ca_key, SEAT, days=30)

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

        # the TEST AP certificate is renewed (a new key, the same CA): the TEST SMP publishes
        # the new one at the next start, the PROD one keeps its own
        renewed, key = leaf()
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
