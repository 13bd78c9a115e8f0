"""The operator's certificates: the embedded test PKI, or files an operator configures.

``FOURCORNER_OPERATOR_CERTS_DIR`` names a directory with ``test/`` and ``prod/`` folders, each
holding ``ap.pem``, ``ap.key``, ``ap-chain.pem``, ``smp.pem``, ``smp.key``, ``smp-chain.pem``
(PEM); ``FOURCORNER_TRUST_ANCHORS_FILE`` the network's root certificates (a PEM bundle).
Without them, the service creates a self-signed test PKI in its data dir and uses it for both
environments, which only peers trusting that PKI accept. A configured file that is missing,
unreadable or holds no certificate raises ``ConfigError`` naming the setting and the file.

``network_trust`` is what a sender trusts in each environment: SMP answers signed under that
environment's SMP CA and endpoints certified by its AP CA, those CAs being the issuers of the
operator's own SMP and AP certificates of the environment. Given a ``RevocationChecker``,
every check here asks it too, once the chain checked out: a certificate its OCSP responder or
its issuer's revocation list says is revoked is refused (``adapters.pki.revocation``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path

from cryptography import x509

from fourcorner.adapters.pki import TestPki, ensure_test_pki
from fourcorner.adapters.pki.certificates import ChainError, verify_chain
from fourcorner.adapters.pki.revocation import RevocationChecker
from fourcorner.adapters.smp.trust import CertificateCheck, Trust
from fourcorner.application.operator_setup import OperatorEnvironment
from fourcorner.domain.network_services import Environment, smp_url
from fourcorner.entrypoints.config import SEE, ConfigError, Settings
from fourcorner.entrypoints.setting_values import PREFIX

OPERATOR_FILES = ("ap.pem", "ap.key", "ap-chain.pem", "smp.pem", "smp.key", "smp-chain.pem")

_loaded: dict[tuple[Path, str], TestPki] = {}


def test_pki(settings: Settings) -> TestPki:
    """The data dir's test PKI, created on first use and loaded once per process."""
    key = (Path(settings.data_dir).resolve(), settings.seat_id)
    if key not in _loaded:
        _loaded[key] = ensure_test_pki(settings.data_dir, seat_id=settings.seat_id)
    return _loaded[key]


def _anchors_file(settings: Settings) -> list[x509.Certificate]:
    """Every certificate of ``FOURCORNER_TRUST_ANCHORS_FILE``, at least one of them a root."""
    name = f"{PREFIX}TRUST_ANCHORS_FILE={settings.trust_anchors_file}"
    try:
        data = Path(settings.trust_anchors_file).read_bytes()
    except OSError as e:
        why = (e.strerror or str(e)).lower()
        raise ConfigError(f"{name} cannot be read ({why}); name a PEM bundle") from None
    try:
        certificates = x509.load_pem_x509_certificates(data)
    except ValueError:
        raise ConfigError(f"{name} holds no PEM certificate; name a PEM bundle") from None
    if not any(c.issuer == c.subject for c in certificates):
        raise ConfigError(f"{name} holds no (self-signed) root certificate; add the network's")
    return certificates


def operator_file(settings: Settings, environment: str, name: str) -> str:
    """The text of ``<FOURCORNER_OPERATOR_CERTS_DIR>/<environment>/<name>``."""
    path = Path(settings.operator_certs_dir) / environment / name
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        why = "it does not exist" if isinstance(e, FileNotFoundError) else "it is unreadable"
        raise ConfigError(
            f"{PREFIX}OPERATOR_CERTS_DIR: {path} cannot be read ({why}); test/ and prod/ "
            f"each hold {', '.join(OPERATOR_FILES)} ({SEE})"
        ) from None


def trust_anchors(settings: Settings) -> list[x509.Certificate]:
    if settings.trust_anchors_file:
        return _anchors_file(settings)
    return test_pki(settings).trust_anchors


def smp_urls(settings: Settings) -> dict[Environment, str]:
    """The base URL of the built-in SMP of each environment (``<base>/smp/test``, ``…/prod``)."""
    return {env: smp_url(settings.base_url + settings.smp_prefix, env) for env in Environment}


def environments(settings: Settings) -> list[OperatorEnvironment]:
    urls = smp_urls(settings)
    if settings.operator_certs_dir:
        out = []
        for env in Environment:

            def read(name: str, folder: str = env.value.lower()) -> str:
                return operator_file(settings, folder, name)

            out.append(
                OperatorEnvironment(
                    environment=env,
                    smp_url=urls[env],
                    ap_cert_pem=read("ap.pem"),
                    ap_chain_pem=read("ap-chain.pem"),
                    ap_key_pem=read("ap.key"),
                    smp_cert_pem=read("smp.pem"),
                    smp_chain_pem=read("smp-chain.pem"),
                    smp_key_pem=read("smp.key"),
                )
            )
        return out
    pki = test_pki(settings)
    return [
        OperatorEnvironment(
            environment=env,
            smp_url=urls[env],
            ap_cert_pem=pki.ap_certificate_pem,
            ap_chain_pem=pki.ap_chain_pem,
            ap_key_pem=pki.ap_key_pem,
            smp_cert_pem=pki.smp_certificate_pem,
            smp_chain_pem=pki.smp_chain_pem,
            smp_key_pem=pki.smp_key_pem,
        )
        for env in Environment
    ]


def intermediates(settings: Settings) -> list[x509.Certificate]:
    """CA certificates between the trust anchors and the network's leaf certificates."""
    if settings.trust_anchors_file:
        return [c for c in _anchors_file(settings) if c.issuer != c.subject]
    pki = test_pki(settings)
    return [pki.ap_ca, pki.smp_ca]


def roots(settings: Settings) -> list[x509.Certificate]:
    return [c for c in trust_anchors(settings) if c.issuer == c.subject]


def _issuing_cas(
    settings: Settings, own_pem: str, chain_pem: str, what: str, environment: Environment
) -> list[x509.Certificate]:
    """The CA certificates (among the trust anchors and the operator's own chain file) that
    issued the operator's ``what`` certificate of ``environment``: that environment's CA."""
    own = x509.load_pem_x509_certificate(own_pem.encode())
    pool = intermediates(settings)
    if chain_pem.strip():
        pool += x509.load_pem_x509_certificates(chain_pem.encode())
    found = [c for c in pool if c.subject == own.issuer and c.issuer != c.subject]
    if not found:
        raise ValueError(
            f"the {environment.value} {what} CA cannot be told: the CA that issued the "
            f"operator's {what} certificate ({own.issuer.rfc4514_string()}) is neither among "
            "the trust anchors (FOURCORNER_TRUST_ANCHORS_FILE) nor in its chain file"
        )
    return found


def issued_under(
    cas: list[x509.Certificate],
    anchors: list[x509.Certificate],
    what: str,
    revocation: RevocationChecker | None = None,
) -> CertificateCheck:
    """A check that a certificate is valid now and chains to ``anchors`` through one of
    ``cas`` (the environment's SMP CA or AP CA), then that ``revocation`` (when given) does not
    find it revoked; raises ``ChainError`` or ``CertificateRevoked`` (``ValueError`` both), or
    ``CertificateStatusPending``/``Unknown`` while neither an OCSP answer nor its issuer's
    revocation list is known."""
    names = " or ".join(sorted({f'"{c.subject.rfc4514_string()}"' for c in cas}))

    def check(cert: x509.Certificate, now: datetime) -> None:
        try:
            path = verify_chain(cert, cas, anchors, now)
        except ChainError as e:
            raise ChainError(f"{e} (an {what} certificate chains to the {what} CA {names})") from e
        if not any(ca in path for ca in cas):
            raise ChainError(
                f'the certificate "{cert.subject.rfc4514_string()}" is not issued by the '
                f"{what} CA {names}"
            )
        if revocation is not None:
            revocation.check(cert, path[0], now)

    return check


def network_trust(
    settings: Settings, revocation: RevocationChecker | None = None
) -> dict[Environment, Trust]:
    """``trust_of`` the operator's certificates of ``settings``."""
    return trust_of(settings, environments(settings), revocation)


def trust_of(
    settings: Settings,
    own: Iterable[OperatorEnvironment],
    revocation: RevocationChecker | None = None,
) -> dict[Environment, Trust]:
    """Per environment, what a sender trusts: SMP answers signed under the environment's SMP
    CA, endpoints whose certificates chain to its AP CA (both found as the issuers of the
    operator's own certificates of that environment, ``own``), under the trust anchors'
    roots, and not revoked (``revocation``)."""
    anchors = roots(settings)
    out: dict[Environment, Trust] = {}
    for env in own:
        smp_cas = _issuing_cas(
            settings, env.smp_cert_pem, env.smp_chain_pem, "SMP", env.environment
        )
        ap_cas = _issuing_cas(settings, env.ap_cert_pem, env.ap_chain_pem, "AP", env.environment)
        out[env.environment] = Trust(
            smp=issued_under(smp_cas, anchors, "SMP", revocation),
            access_point=issued_under(ap_cas, anchors, "AP", revocation),
        )
    return out


def sender_checks(
    trust: dict[Environment, Trust],
) -> dict[Environment, Callable[[x509.Certificate], None]]:
    """Per environment, whether a sender's AP certificate (on an AS4 message arriving at an
    access point of that environment) is valid now, chains to that environment's AP CA and is
    not revoked: the same trust a sender of that environment puts in an endpoint (``trust``,
    ``network_trust``)."""

    def now_check(one: Trust) -> Callable[[x509.Certificate], None]:
        return lambda cert: one.access_point(cert, datetime.now(UTC))

    return {env: now_check(one) for env, one in trust.items()}


def certificate_check(
    settings: Settings, revocation: RevocationChecker | None = None
) -> Callable[[x509.Certificate], None]:
    """Whether a peer access point's certificate chains to the network's trust anchors and is
    not revoked (``revocation``)."""
    anchors, between = roots(settings), intermediates(settings)

    def check(cert: x509.Certificate) -> None:
        now = datetime.now(UTC)
        path = verify_chain(cert, between, anchors, now)
        if revocation is not None:
            revocation.check(cert, path[0], now)

    return check
