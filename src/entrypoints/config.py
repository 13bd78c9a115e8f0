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

import contextlib
import difflib
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import attrs

from fourcorner.adapters.pki.sealing import KeySealer
from fourcorner.entrypoints import setting_values, sml_setup

PREFIX = "FOURCORNER_"
CONFIG_FILE = PREFIX + "CONFIG_FILE"
# Variables with the prefix that are not settings of the service: the file's name, and the
# test suite's database (read by tests/pg.py only).
NOT_SETTINGS = frozenset({CONFIG_FILE, PREFIX + "TEST_DATABASE_URL"})
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")
SEE = "see docs/operations.md"
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
_SEAT_ID = re.compile(r"P[A-Z]{2}[0-9]{6}")


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
    if not delays or any(d < 0 for d in delays) or (exactly and len(delays) != exactly):
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
    public_url: str = ""
    auth_mode: str = "local"
    oidc_issuer: str = ""
    oidc_audience: str = ""
    oidc_jwks_url: str = ""
    oidc_superadmin_claim: str = "roles"
    max_body_bytes: int = 1024 * 1024
    log_level: str = "info"
    db_pool_size: int = 10
    ap_host: str = ""
    smp_prefix: str = "/smp"
    seat_id: str = "PFC000001"
    at_rest_key: str = ""
    directory_url: str = ""
    trust_anchors_file: str = ""
    operator_certs_dir: str = ""
    webhook_allow_private_targets: bool = False
    webhook_retry_delays: str = "30,300"
    webhook_hex_signature_header: str = "x-webhook-sign"
    webhook_concurrency: int = 128
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
    send_lease_seconds: float = 120.0
    as4_inbound_concurrency: int = 8
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
            raise ValueError(f"FOURCORNER_DNS_NAMESERVERS: {e}") from None

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
        out: list[str] = []

        def need(ok: bool, problem: str) -> None:
            if not ok:
                out.append(problem)

        try:
            self.storage_kind  # noqa: B018 - raises on an unknown scheme
        except ValueError:
            scheme = urlsplit(self.database_url).scheme or "(none)"
            out.append(
                f"{PREFIX}DATABASE_URL has an unknown scheme {scheme!r}; use "
                "postgresql://user@host/db, sqlite:///path/file.db or memory://"
            )
        need(
            self.auth_mode in ("local", "oidc"),
            f"{PREFIX}AUTH_MODE={self.auth_mode!r} is not a mode; use local or oidc",
        )
        need(
            self.auth_mode != "oidc"
            or bool(self.oidc_issuer and self.oidc_audience and self.oidc_jwks_url),
            f"{PREFIX}AUTH_MODE=oidc needs {PREFIX}OIDC_ISSUER, {PREFIX}OIDC_AUDIENCE and "
            f"{PREFIX}OIDC_JWKS_URL; set all three",
        )
        for name in ("retry_delays", "sending_delays"):
            try:
                getattr(self, name)
            except ConfigError as e:
                out.append(str(e))
        need(
            0 <= self.mls_confirm_seconds <= 1200,
            f"{PREFIX}MLS_CONFIRM_SECONDS={self.mls_confirm_seconds:g} is out of range; "
            "use 0 to 1200 seconds",
        )
        need(
            self.smp_prefix.startswith("/") and not self.smp_prefix.endswith("/"),
            f"{PREFIX}SMP_PREFIX={self.smp_prefix!r} must start with / and not end with one, "
            "e.g. /smp",
        )
        need(
            0 < self.port < 65536,
            f"{PREFIX}PORT={self.port} is not a TCP port; use 1 to 65535",
        )
        need(
            self.log_level.lower() in LOG_LEVELS,
            f"{PREFIX}LOG_LEVEL={self.log_level!r} is not a log level; use one of "
            + ", ".join(LOG_LEVELS),
        )
        need(
            not self.database_schema or bool(_IDENTIFIER.fullmatch(self.database_schema)),
            f"{PREFIX}DATABASE_SCHEMA={self.database_schema!r} is not a plain identifier; use "
            "letters, digits and _ (or leave it unset for the server's default schema)",
        )
        need(
            bool(_SEAT_ID.fullmatch(self.seat_id)),
            f"{PREFIX}SEAT_ID={self.seat_id!r} is not a seat id; it is P, two capital letters "
            "and six digits, e.g. PFC000001",
        )
        if self.at_rest_key.strip():
            try:  # a configured key is only decoded: no file is read or written
                KeySealer.from_config(self.at_rest_key, self.data_dir)
            except ValueError:
                out.append(
                    f"{PREFIX}AT_REST_KEY is not the base64 of 32 bytes; make one with "
                    "`openssl rand -base64 32`, or unset it to use the key file in the data dir"
                )
        for name in ("public_url", "ap_host", "smp_lookup_url", "directory_url", "oidc_jwks_url"):
            value = getattr(self, name)
            problem = setting_values.url_problem(value) if value else None
            need(problem is None, f"{PREFIX}{name.upper()}={value!r} {problem}")
        for name in (
            "db_pool_size",
            "max_body_bytes",
            "max_document_bytes",
            "webhook_concurrency",
            "send_attempts",
            "as4_inbound_concurrency",
        ):
            value = getattr(self, name)
            need(value >= 1, f"{PREFIX}{name.upper()}={value} must be at least 1")
        need(
            self.auth_failure_limit >= 0,
            f"{PREFIX}AUTH_FAILURE_LIMIT={self.auth_failure_limit} must be 0 (no limit) or more",
        )
        need(
            0 < self.auth_failure_window <= 86_400,
            f"{PREFIX}AUTH_FAILURE_WINDOW={self.auth_failure_window:g} is out of range; use "
            "more than 0 and at most 86400 seconds",
        )
        need(
            self.auth_failure_tracked >= 1,
            f"{PREFIX}AUTH_FAILURE_TRACKED={self.auth_failure_tracked} must be at least 1",
        )
        need(
            self.discovery in ("", "sml", "fixed"),
            f"{PREFIX}DISCOVERY={self.discovery!r} is not a discovery; use sml or fixed",
        )
        for env, zone in (("TEST", self.sml_zone_test), ("PROD", self.sml_zone_prod)):
            labels = zone.strip().rstrip(".").split(".")
            need(
                all(labels) and not any(c.isspace() for c in zone.strip()),
                f"{PREFIX}SML_ZONE_{env}={zone!r} is not a DNS name; use e.g. {SML_ZONE_TEST}",
            )
        try:
            self.nameservers  # noqa: B018 - raises when malformed
        except ValueError as e:
            out.append(f"{PREFIX}DNS_NAMESERVERS={self.dns_nameservers!r}: {e}")
        out += sml_setup.problems(self)
        need(
            self.blob_sweep_grace_seconds >= 1,
            f"{PREFIX}BLOB_SWEEP_GRACE_SECONDS={self.blob_sweep_grace_seconds:g} must be at "
            "least 1 second",
        )
        need(
            self.blob_sweep_interval_seconds > 0,
            f"{PREFIX}BLOB_SWEEP_INTERVAL_SECONDS={self.blob_sweep_interval_seconds:g} must be "
            "more than 0 seconds",
        )
        blobs = self.blob_store.strip().lower()
        need(
            blobs in ("", "filesystem", "postgres"),
            f"{PREFIX}BLOB_STORE={self.blob_store!r} is not a blob store; use filesystem or "
            "postgres",
        )
        with contextlib.suppress(ValueError):  # an unknown database scheme is named above
            need(
                blobs != "postgres" or self.storage_kind == "postgres",
                f"{PREFIX}BLOB_STORE=postgres needs a PostgreSQL database; set "
                f"{PREFIX}DATABASE_URL=postgresql://..., or use {PREFIX}BLOB_STORE=filesystem",
            )
        need(
            self.validation_workers >= 0,
            f"{PREFIX}VALIDATION_WORKERS={self.validation_workers} must be 0 (one per core) "
            "or more",
        )
        need(
            self.validation_cache_mib >= 0,
            f"{PREFIX}VALIDATION_CACHE_MIB={self.validation_cache_mib} must be 0 (no cache) "
            "or more",
        )
        need(
            self.validation_timeout > 0,
            f"{PREFIX}VALIDATION_TIMEOUT={self.validation_timeout:g} must be more than 0 seconds",
        )
        for name in ("webhook_timeout", "webhook_lease_seconds", "send_lease_seconds"):
            value = getattr(self, name)
            need(value > 0, f"{PREFIX}{name.upper()}={value:g} must be more than 0 seconds")
        return out

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
