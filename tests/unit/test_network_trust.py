"""What the sender trusts per environment, built from the operator's configuration: the SMP CA
and AP CA are the issuers of the operator's own certificates, under the trust anchors' roots."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from fourcorner.adapters.pki.testpki import (
    TestPki,
    cert_pem,
    ensure_test_pki,
    issue_leaf,
    key_pem,
    new_ca,
)
from fourcorner.domain.network_services import Environment
from fourcorner.entrypoints.config import Settings
from fourcorner.entrypoints.operator import network_trust, sender_checks

# Every certificate here is made at NOW, never at the wall clock: a suite that runs longer than
# the test PKI's five minutes of backdating between import and use must still pass.
NOW = datetime.now(UTC)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> TestPki:
    return ensure_test_pki(tmp_path_factory.mktemp("trust"), clock=lambda: NOW)


def operator_dir(base: Path, pki: TestPki, *, smp_chain: str | None = None) -> Path:
    for env in ("test", "prod"):
        d = base / "certs" / env
        d.mkdir(parents=True)
        files = {
            "ap.pem": pki.ap_certificate_pem,
            "ap.key": pki.ap_key_pem,
            "ap-chain.pem": pki.ap_chain_pem,
            "smp.pem": pki.smp_certificate_pem,
            "smp.key": pki.smp_key_pem,
            "smp-chain.pem": pki.smp_chain_pem if smp_chain is None else smp_chain,
        }
        for name, text in files.items():
            (d / name).write_text(text)
    return base / "certs"


def leaf(ca: Any, key: Any, name: str = "PEER") -> Any:
    return issue_leaf(
        ca, key, name, not_before=NOW - timedelta(hours=1), not_after=NOW + timedelta(days=1)
    )[0]


def test_operator_certificates_name_the_cas(tmp_path: Path, pki: TestPki) -> None:
    anchors = tmp_path / "anchors.pem"
    anchors.write_text(cert_pem(pki.root))  # the roots only: the CAs come from the chain files
    settings = Settings(
        data_dir=tmp_path,
        operator_certs_dir=str(operator_dir(tmp_path, pki)),
        trust_anchors_file=str(anchors),
    )
    assert settings.discovery_mode == "sml"
    trust = network_trust(settings)
    assert set(trust) == set(Environment)
    for env in Environment:
        trust[env].smp(leaf(pki.smp_ca, pki.smp_ca_key, "ANOTHER SMP"), NOW)
        trust[env].access_point(leaf(pki.ap_ca, pki.ap_ca_key, "POP000777"), NOW)
        with pytest.raises(ValueError, match="SMP CA"):
            trust[env].smp(leaf(pki.ap_ca, pki.ap_ca_key), NOW)
        with pytest.raises(ValueError, match="AP CA"):
            trust[env].access_point(leaf(pki.smp_ca, pki.smp_ca_key), NOW)
        stranger, stranger_key = new_ca("STRANGER ROOT", not_before=NOW - timedelta(hours=1))
        with pytest.raises(ValueError, match=r"not trusted|neither"):
            trust[env].access_point(leaf(stranger, stranger_key), NOW)
        with pytest.raises(ValueError, match="expired"):
            trust[env].access_point(pki.ap_certificate, NOW + timedelta(days=3 * 365))


def test_an_operator_whose_ca_is_unknown_is_refused_at_start(tmp_path: Path, pki: TestPki) -> None:
    anchors = tmp_path / "anchors.pem"
    anchors.write_text(cert_pem(pki.root))
    settings = Settings(
        data_dir=tmp_path,
        operator_certs_dir=str(operator_dir(tmp_path, pki, smp_chain="")),
        trust_anchors_file=str(anchors),
    )
    with pytest.raises(ValueError, match="TEST SMP CA cannot be told"):
        network_trust(settings)


def test_the_embedded_test_pki_trusts_itself(tmp_path: Path) -> None:
    pki = ensure_test_pki(tmp_path, clock=lambda: NOW)  # the PKI network_trust finds there
    settings = Settings(data_dir=tmp_path)
    assert settings.discovery_mode == "fixed"
    trust = network_trust(settings)
    trust[Environment.TEST].smp(pki.smp_certificate, NOW)
    trust[Environment.PROD].access_point(pki.ap_certificate, NOW)


def test_an_access_point_trusts_senders_of_its_own_environment_only(
    tmp_path: Path, pki: TestPki
) -> None:
    """TEST and PROD with AP certificates from different AP CAs (under one root here): a
    message signed under the PROD AP CA is refused at the TEST access point, and the reverse."""
    prod_ca, prod_ca_key = new_ca(
        "PROD ACCESS POINT CA",
        issuer_cert=pki.root,
        issuer_key=pki.root_key,
        not_before=NOW - timedelta(hours=1),
    )
    certs = operator_dir(tmp_path, pki)
    prod_ap, prod_key = issue_leaf(
        prod_ca,
        prod_ca_key,
        pki.seat_id,
        not_before=NOW - timedelta(hours=1),
        not_after=NOW + timedelta(days=1),
    )
    (certs / "prod" / "ap.pem").write_text(cert_pem(prod_ap))
    (certs / "prod" / "ap.key").write_text(key_pem(prod_key))
    (certs / "prod" / "ap-chain.pem").write_text(cert_pem(prod_ca))
    anchors = tmp_path / "anchors.pem"
    anchors.write_text(cert_pem(pki.root))
    settings = Settings(
        data_dir=tmp_path, operator_certs_dir=str(certs), trust_anchors_file=str(anchors)
    )
    checks = sender_checks(network_trust(settings))
    test_peer = leaf(pki.ap_ca, pki.ap_ca_key, "POP000001")
    prod_peer = leaf(prod_ca, prod_ca_key, "POP000002")
    checks[Environment.TEST](test_peer)
    checks[Environment.PROD](prod_peer)
    with pytest.raises(ValueError, match="AP CA"):
        checks[Environment.TEST](prod_peer)
    with pytest.raises(ValueError, match="AP CA"):
        checks[Environment.PROD](test_peer)
