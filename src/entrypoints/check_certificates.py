"""``fourcorner check``'s findings on the trust anchors and the operator's certificates, read
as the server reads them (``entrypoints.operator``) but creating nothing: no test PKI."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509

from fourcorner.adapters.pki import load_test_pki
from fourcorner.adapters.pki.certificates import inspect_certificate
from fourcorner.domain.errors import InvalidInput
from fourcorner.entrypoints import operator, operator_guard
from fourcorner.entrypoints.check_report import FAIL, OK, WARN, Report
from fourcorner.entrypoints.config import ConfigError, Settings
from fourcorner.entrypoints.setting_values import PREFIX

EXPIRY_WARNING = timedelta(days=30)


def _name(cert: x509.Certificate) -> str:
    return cert.subject.rfc4514_string()


def certificates(report: Report, settings: Settings, held: Iterable[str]) -> None:
    """The trust anchors, then the operator's certificates, read as the server reads them:
    the files of ``FOURCORNER_OPERATOR_CERTS_DIR`` whenever it is set, else the test PKI. A
    FAIL first when the server would not start because the database holds the operator's
    certificates (``held``: their stored records, which the database's check read) and the
    data dir has no copy of them, or other ones (``operator_guard``)."""
    now = datetime.now(UTC)
    try:
        stored = operator_guard.decoded(held)
    except ValueError as e:
        report.add(FAIL, "certificates", str(e))
        return
    try:
        refused = operator_guard.refusal(settings, stored)
    except ConfigError:
        refused = None  # the lines below name the setting
    if refused is not None:  # the server would not start
        report.add(FAIL, "certificates", refused)
        return
    anchors = _anchors(report, settings)
    if anchors is None:
        return
    for anchor in anchors:
        _validity(report, "trust anchors", anchor, now)
    roots = [c for c in anchors if c.issuer == c.subject]
    if not settings.operator_certs_dir and not (Path(settings.data_dir) / "pki").is_dir():
        report.add(
            WARN,
            "certificates",
            f"none configured ({PREFIX}OPERATOR_CERTS_DIR) and no test PKI yet: the server "
            "creates test certificates that only peers trusting the test PKI accept",
        )
        return
    try:
        environments = operator.environments(settings)
    except ConfigError as e:
        report.add(FAIL, "certificates", str(e))
        return
    for env in environments:
        for role, cert, chain, key in (
            ("AP", env.ap_cert_pem, env.ap_chain_pem, env.ap_key_pem),
            ("SMP", env.smp_cert_pem, env.smp_chain_pem, env.smp_key_pem),
        ):
            subject = f"{env.environment.value} {role}"
            try:
                info = inspect_certificate(cert, chain, key, roots, now)
            except InvalidInput as e:
                why = "; ".join(d.problem for d in e.details())
                report.add(FAIL, subject, f"certificate does not pass: {why}")
                continue
            text = (
                f"{info.subject}: chains to the trust anchors, key matches, valid until "
                f"{info.valid_until:%Y-%m-%d}"
            )
            soon = info.valid_until - now < EXPIRY_WARNING
            report.add(WARN if soon else OK, subject, text + (" (renew it soon)" if soon else ""))


def _anchors(report: Report, settings: Settings) -> list[x509.Certificate] | None:
    """The trust anchors in use (none yet, ``[]``, when the server is to create the test
    PKI); None when the configured file cannot be used."""
    if settings.trust_anchors_file:
        try:
            anchors = operator.trust_anchors(settings)
        except ConfigError as e:
            report.add(FAIL, "trust anchors", str(e))
            return None
        names = "; ".join(_name(c) for c in anchors)
        report.add(OK, "trust anchors", f"{settings.trust_anchors_file}: {names}")
        return anchors
    pki_dir = Path(settings.data_dir) / "pki"
    if not pki_dir.is_dir():
        report.add(
            WARN,
            "trust anchors",
            f"none configured ({PREFIX}TRUST_ANCHORS_FILE) and no test PKI in {pki_dir} "
            "yet; the server creates a test PKI that only peers trusting it accept",
        )
        return []  # the test PKI to come is new: it issued none of the operator's files
    anchors = load_test_pki(pki_dir).trust_anchors
    report.add(
        WARN,
        "trust anchors",
        f"the test PKI in {pki_dir} ({_name(anchors[0])}): only peers that trust it "
        f"accept this service; set {PREFIX}TRUST_ANCHORS_FILE for the network",
    )
    return anchors


def _validity(report: Report, subject: str, cert: x509.Certificate, now: datetime) -> None:
    if cert.not_valid_after_utc < now:
        report.add(FAIL, subject, f"{_name(cert)} expired on {cert.not_valid_after_utc:%Y-%m-%d}")
    elif cert.not_valid_after_utc - now < EXPIRY_WARNING:
        report.add(WARN, subject, f"{_name(cert)} expires on {cert.not_valid_after_utc:%Y-%m-%d}")
