"""Settings from the environment, or an optional TOML file.

Precedence: environment, then the file named by ``FOURCORNER_CONFIG_FILE``, then defaults.
In the file, keys are the variable names without the ``FOURCORNER_`` prefix, lower-cased
(``database_url = "postgresql://..."``). Reading happens only when ``Settings.load`` is called.

Every setting is a field of ``Settings``; the names the environment and the file may use are
derived from those fields, so a setting added there is known everywhere at once. A value that
cannot be used raises ``ConfigError``, whose text is one line: which setting (by the name it
was given under: ``FOURCORNER_PORT``, or ``port in /etc/fourcorner.toml``), what is wrong, and
what to do. Unknown keys in the file are refused with the closest known name;
``unknown_environment`` names ``FOURCORNER_`` variables that are not settings, for a warning.
"""

from __future__ import annotations

import difflib
import math
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import attrs

from fourcorner.application.context import DIRECTORY_ATTEMPTS, DIRECTORY_DELAYS
from fourcorner.entrypoints import setting_checks, setting_values
from fourcorner.entrypoints.setting_values import PREFIX

CONFIG_FILE = PREFIX + "CONFIG_FILE"
# Variables with the prefix that are not settings of the service: the file's name, and the
# test suite's database (read by tests/pg.py only).
NOT_SETTINGS = frozenset({CONFIG_FILE, PREFIX + "TEST_DATABASE_URL"})
SEE = "see docs/operations.md"
# Settings that were replaced, with what to set instead. Given, they are refused at start (a
# value ignored would look as if it still worked).
RETIRED = {
    "directory_url": (
        "is no longer a setting: one indexer for both environments mixed the TEST and PROD "
        f"cards of an identifier; set {PREFIX}DIRECTORY_URL_TEST and/or "
        f"{PREFIX}DIRECTORY_URL_PROD, the directory's indexer of each environment"
    ),
}


class ConfigError(ValueError):
    """A setting that cannot be used; ``str()`` is one line: which, what is wrong, what to do."""


def setting_names() -> tuple[str, ...]:
    """The settings' names as the file writes them (``database_url``), from ``Settings``."""
    return tuple(a.name for a in attrs.fields(Settings))


def _closest(name: str, known: list[str] | tuple[str, ...], prefix: str = "") -> str:
    """`` (did you mean <prefix>X?)`` for the known name X closest to ``name``, or ``""``."""
    match = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return f" (did you mean {prefix}{match[0]}?)" if match else ""


def unknown_environment(environ: Mapping[str, str]) -> list[str]:
    """One warning line per ``FOURCORNER_`` variable that is not a setting (it is ignored)."""
    known = [n.upper() for n in setting_names()]
    return [
        f"{name} is not a setting and is ignored"
        + _closest(name.removeprefix(PREFIX), known, PREFIX)
        for name in sorted(environ)
        if name.startswith(PREFIX)
        and name.removeprefix(PREFIX) not in known
        and name not in NOT_SETTINGS
    ]


def _read_file(file: str) -> dict[str, Any]:
    """The settings of the TOML file ``file``, keys lower-cased; unknown keys refused."""
    what = f"the configuration file {file} (named by {CONFIG_FILE})"
    try:
        with open(file, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f"{what} does not exist; create it, or unset {CONFIG_FILE}") from None
    except IsADirectoryError:
        raise ConfigError(f"{what} is a directory; name a TOML file") from None
    except OSError as e:
        raise ConfigError(f"{what} cannot be read: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{file} is not valid TOML: {e}; correct that line") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{file} is not valid TOML: it is not UTF-8 text") from None
    values = {k.lower(): v for k, v in data.items()}
    for name in values.keys() & RETIRED.keys():
        raise ConfigError(f"{file}: {name!r} {RETIRED[name]} ({SEE})")
    known = setting_names()
    unknown = [k for k in values if k not in known]
    if unknown:
        names = ", ".join(
            f"{k!r}{_closest(k.removeprefix(PREFIX.lower()), known)}" for k in unknown
        )
        noun = "an unknown setting" if len(unknown) == 1 else "unknown settings"
        raise ConfigError(f"{file} has {noun}: {names}; correct or remove it ({SEE})")
    return values


# The network's SML zones (the older edelivery.tech.ec.europa.eu zones are deprecated).
SML_ZONE_PROD = "participant.sml.prod.tech.peppol.org."
SML_ZONE_TEST = "participant.sml.test.tech.peppol.org."


def _delays(text: str, name: str, exactly: int | None = None) -> tuple[float, ...]:
    try:
        delays = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        delays = ()
    if (
        not delays
        or any(d < 0 or not math.isfinite(d) for d in delays)
        or (exactly and len(delays) != exactly)
    ):
        count = f"{exactly} " if exactly else ""
        raise ConfigError(
            f"{name}={text!r} is not a comma-separated list of {count}seconds; write e.g. 30,300"
        )
    return delays


@attrs.frozen
class Settings:
    data_dir: Path = Path("var")
    database_url: str = ""
    database_schema: str = ""
    host: str = "127.0.0.1"
    port: int = 8080
    # where `fourcorner worker` serves /healthz, /readyz and /metrics (on host); 0: nowhere
    worker_port: int = 0
    public_url: str = ""
    auth_mode: str = "local"
    oidc_issuer: str = ""
    oidc_audience: str = ""
    oidc_jwks_url: str = ""
    oidc_superadmin_claim: str = "roles"
    max_body_bytes: int = 1024 * 1024
    # seconds a connection may wait for a request's head (whole), the first or the next, before
    # it is closed: aiohttp's server alone waits an hour (web.run_app and nginx: 75)
    http_idle_seconds: float = 75.0
    # connections one client address may have open at once per process (a listed proxy's
    # are not counted); one more is answered 503 AT-1506 and closed; 0: no limit
    http_connections_per_address: int = 256
    log_level: str = "info"
    db_pool_size: int = 10
    ap_host: str = ""
    smp_prefix: str = "/smp"
    # the built-in SMP's TechnicalContactUrl for an endpoint whose organisation names no
    # technical contact and no website: an http(s) URL or mailto:<address>; empty: left empty
    smp_technical_contact: str = ""
    seat_id: str = "PFC000001"
    at_rest_key: str = ""
    # while the at-rest key is rotated: the key it replaces, to open what that key sealed
    at_rest_key_previous: str = ""
    metrics_token: str = ""  # empty: /metrics is public
    # the directory's indexer per environment (business cards); unset: none in that environment
    directory_url_test: str = ""
    directory_url_prod: str = ""
    directory_ca_file: str = ""  # CAs of the directories' TLS certificates; empty: the system's
    # seconds before the directory is asked again for an OUTDATED card, the last one repeated
    # (default: context.DIRECTORY_DELAYS, 30,300,1800)
    directory_retry_delays: str = ",".join(f"{d.total_seconds():g}" for d in DIRECTORY_DELAYS)
    # unanswered attempts after which the workers stop asking (context.DIRECTORY_ATTEMPTS)
    directory_attempts: int = DIRECTORY_ATTEMPTS
    trust_anchors_file: str = ""
    operator_certs_dir: str = ""
    # peers' certificates checked against their CAs' revocation lists: off, soft or hard
    revocation: str = "soft"
    revocation_wait_seconds: float = 5.0  # a first check waits this long for the list
    revocation_grace_seconds: float = 86_400.0  # a list past its nextUpdate is used this long
    revocation_timeout: float = 30.0  # seconds one fetch of a list may take
    webhook_allow_private_targets: bool = False
    webhook_retry_delays: str = "30,300"
    webhook_hex_signature_header: str = "x-webhook-sign"
    # a finished send waits in flight for its outcome's write: 256 rather than 128 lets claims
    # and writes take more at a time (bench_webhooks: 2,136 and 2,659 deliveries/s against
    # 2,008 and 2,195, 299 and 257 µs of CPU each against 305 and 280)
    webhook_concurrency: int = 256
    # deliveries to one host (and port), whoever's webhooks point there, sending and waiting
    # in a worker (DeliverySettings.per_host); 0: half of webhook_concurrency
    webhook_per_host: int = 0
    webhook_timeout: float = 15.0
    webhook_lease_seconds: float = 60.0
    workers: bool = True
    max_document_bytes: int = 100 * 1024 * 1024
    send_retry_delays: str = "30,300"
    send_attempts: int = 3
    smp_lookup_url: str = ""
    discovery: str = ""  # sml or fixed; empty: fixed on the embedded test PKI, else sml
    sml_zone_test: str = SML_ZONE_TEST
    sml_zone_prod: str = SML_ZONE_PROD
    dns_nameservers: str = ""  # empty: the system's resolvers
    allow_http_peers: bool = False
    # the SML management endpoint per environment (registration of our SMP and participants);
    # unset: no SML registration in that environment
    sml_url_test: str = ""
    sml_url_prod: str = ""
    smp_id_test: str = ""  # our SMP's id in the SML, required with the SML URL
    smp_id_prod: str = ""
    sml_ca_file: str = ""  # CAs of the SML's TLS certificate; empty: the system's
    sml_timeout: float = 30.0
    mls_confirm_seconds: float = 0.0
    # the defaults' send waits up to 60 (AS4) + 3 × 10 (SMP) + 3 × 5 (revocation lists) + 5 (DNS,
    # sml discovery) = 110 s, and 1.25 times that is 137.5 s (entrypoints.lease_checks)
    send_lease_seconds: float = 150.0
    # what one send may wait on the network, part by part (the lease must outlast them all:
    # entrypoints.lease_checks)
    as4_timeout: float = 60.0  # the AS4 exchange: the message posted, the answer read
    smp_timeout: float = 10.0  # one request to a receiver's SMP (a lookup makes up to three)
    dns_timeout: float = 5.0  # the SML's DNS answer for a receiver (sml discovery)
    as4_inbound_concurrency: int = 8
    # inbound AS4 messages one client address may have in flight at once (0: no limit): as
    # many as this service's sending worker sends at once (sending.Exchange.concurrency), so a
    # peer running it (one worker process an address) is not refused for a burst
    as4_inbound_per_address: int = 16
    # the reverse proxies whose forwarding headers are believed (entrypoints.http.proxy):
    # comma-separated addresses and CIDR networks; empty: none, the peer is the client
    trusted_proxies: str = ""
    auth_failure_limit: int = 10
    auth_failure_window: float = 60.0
    auth_failure_tracked: int = 100_000
    blob_sweep_grace_seconds: float = 3600.0
    blob_sweep_interval_seconds: float = 600.0
    blob_store: str = ""  # filesystem or postgres; empty: postgres on PostgreSQL, else files
    validation_workers: int = 0
    validation_timeout: float = 300.0
    validation_cache_mib: int = 16

    @property
    def database(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'fourcorner.db'}"

    @property
    def storage_kind(self) -> str:
        url = self.database
        if url.startswith("memory://"):
            return "memory"
        if url.startswith("sqlite://"):
            return "sqlite"
        if url.startswith(("postgresql://", "postgres://")):
            return "postgres"
        raise ValueError(f"FOURCORNER_DATABASE_URL: unknown scheme in {url!r}")

    @property
    def blob_kind(self) -> str:
        """Where documents and artefacts are kept: ``postgres`` (the database), ``filesystem``
        (``<data dir>/blobs``) or ``memory`` (the default on a ``memory://`` database)."""
        if self.blob_store:
            return self.blob_store.strip().lower()
        kind = self.storage_kind
        return kind if kind in ("postgres", "memory") else "filesystem"

    @property
    def sqlite_path(self) -> str:
        return self.database.removeprefix("sqlite:///") if self.storage_kind == "sqlite" else ""

    @property
    def base_url(self) -> str:
        return (self.public_url or f"http://{self.host}:{self.port}").rstrip("/")

    @property
    def https(self) -> bool:
        """The public URL is https: answers carry ``Strict-Transport-Security``."""
        return self.base_url.lower().startswith("https://")

    @property
    def access_point_host(self) -> str:
        return (self.ap_host or f"{self.base_url}/as4").rstrip("/")

    @property
    def retry_delays(self) -> tuple[float, ...]:
        return _delays(self.webhook_retry_delays, "FOURCORNER_WEBHOOK_RETRY_DELAYS", exactly=2)

    @property
    def directory_delays(self) -> tuple[float, ...]:
        return _delays(self.directory_retry_delays, "FOURCORNER_DIRECTORY_RETRY_DELAYS")

    @property
    def sending_delays(self) -> tuple[float, ...]:
        return _delays(self.send_retry_delays, "FOURCORNER_SEND_RETRY_DELAYS")

    @property
    def discovery_mode(self) -> str:
        """How receivers' SMPs are found: ``sml`` (DNS) or ``fixed`` (one SMP)."""
        return self.discovery or ("sml" if self.operator_certs_dir else "fixed")

    @property
    def nameservers(self) -> tuple[tuple[str, int], ...]:
        try:
            return setting_values.nameservers(self.dns_nameservers)
        except ValueError as e:
            raise ValueError(f"{PREFIX}DNS_NAMESERVERS: {e}") from None

    @property
    def proxy_networks(self) -> tuple[setting_values.Network, ...]:
        """The trusted reverse proxies' addresses and networks (``FOURCORNER_TRUSTED_PROXIES``)."""
        try:
            return setting_values.networks(self.trusted_proxies)
        except ValueError as e:
            raise ValueError(f"{PREFIX}TRUSTED_PROXIES: {e}") from None

    @property
    def as4_prefix(self) -> str:
        return urlsplit(self.access_point_host).path.rstrip("/") or "/as4"

    def check(self) -> Settings:
        """This settings object, when every value can be used; else ``ConfigError``."""
        for problem in self.problems():
            raise ConfigError(problem)
        return self

    def problems(self) -> list[str]:
        """What is wrong, one line each: the setting, the problem, what to do."""
        return setting_checks.problems(self)

    @classmethod
    def load(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """The settings of ``environ`` (default: the process environment), its configuration
        file and ``overrides``; ``ConfigError`` names the first value that cannot be used."""
        return cls.read(environ, **overrides).check()

    @classmethod
    def read(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """As ``load``, but without ``check``: values are converted to their types only (for
        ``fourcorner check``, which lists every ``problems()`` line)."""
        env = dict(os.environ if environ is None else environ)
        for name in sorted(RETIRED):
            if PREFIX + name.upper() in env:
                raise ConfigError(f"{PREFIX}{name.upper()} {RETIRED[name]} ({SEE})")
        values: dict[str, Any] = {}
        source: dict[str, str] = {}
        file = env.get(CONFIG_FILE)
        if file:
            values.update(_read_file(file))
            source.update({k: f"{k} in {file}" for k in values})
        for a in attrs.fields(cls):
            key = PREFIX + a.name.upper()
            if key in env:
                values[a.name] = env[key]
                source[a.name] = key
        values.update(overrides)
        source.update({k: k for k in overrides})
        typed: dict[str, Any] = {}
        for a in attrs.fields(cls):
            if a.name not in values:
                continue
            raw = values[a.name]
            try:
                typed[a.name] = setting_values.convert(a.type, raw)
            except ValueError as e:
                raise ConfigError(f"{source[a.name]}={raw!r} {e}; correct it ({SEE})") from None
        return cls(**typed)
