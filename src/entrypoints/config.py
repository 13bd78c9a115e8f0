"""Settings from the environment (names of API.md "Running"), or an optional TOML file.

Precedence: environment, then the file named by ``FOURCORNER_CONFIG_FILE``, then defaults.
In the file, keys are the variable names without the ``FOURCORNER_`` prefix, lower-cased
(``database_url = "postgresql://..."``). Reading happens only when ``Settings.load`` is called.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import attrs

PREFIX = "FOURCORNER_"


def _bool(text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"{text!r} is not true or false")


def _delays(text: str, name: str, exactly: int | None = None) -> tuple[float, ...]:
    try:
        delays = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        delays = ()
    if not delays or any(d < 0 for d in delays) or (exactly and len(delays) != exactly):
        raise ValueError(f"{name} is a comma-separated list of seconds, e.g. 30,300")
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
    mls_confirm_seconds: float = 0.0
    send_lease_seconds: float = 120.0
    validation_workers: int = 0
    validation_timeout: float = 300.0

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
    def sqlite_path(self) -> str:
        return self.database.removeprefix("sqlite:///") if self.storage_kind == "sqlite" else ""

    @property
    def base_url(self) -> str:
        return (self.public_url or f"http://{self.host}:{self.port}").rstrip("/")

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
    def as4_prefix(self) -> str:
        return urlsplit(self.access_point_host).path.rstrip("/") or "/as4"

    def check(self) -> Settings:
        self.storage_kind  # noqa: B018 - raises on an unknown scheme
        if self.auth_mode not in ("local", "oidc"):
            raise ValueError("FOURCORNER_AUTH_MODE is local or oidc")
        if self.auth_mode == "oidc" and not (
            self.oidc_issuer and self.oidc_audience and self.oidc_jwks_url
        ):
            raise ValueError(
                "oidc mode needs FOURCORNER_OIDC_ISSUER, FOURCORNER_OIDC_AUDIENCE "
                "and FOURCORNER_OIDC_JWKS_URL"
            )
        self.retry_delays  # noqa: B018 - raises when malformed
        self.sending_delays  # noqa: B018 - raises when malformed
        if not 0 <= self.mls_confirm_seconds <= 1200:
            raise ValueError("FOURCORNER_MLS_CONFIRM_SECONDS is between 0 and 1200")
        if not self.smp_prefix.startswith("/") or self.smp_prefix.endswith("/"):
            raise ValueError("FOURCORNER_SMP_PREFIX starts with / and does not end with one")
        if self.validation_workers < 0:
            raise ValueError("FOURCORNER_VALIDATION_WORKERS is 0 (one per core) or more")
        if not self.validation_timeout > 0:
            raise ValueError("FOURCORNER_VALIDATION_TIMEOUT is a number of seconds above 0")
        if not 0 < self.port < 65536:
            raise ValueError("FOURCORNER_PORT is a TCP port number")
        return self

    def as_config(self) -> dict[str, Any]:
        """The values the container's ``Configuration`` provider holds."""
        out = {a.name: getattr(self, a.name) for a in attrs.fields(Settings)}
        out |= {
            "data_dir": str(self.data_dir),
            "database": self.database,
            "storage_kind": self.storage_kind,
            "sqlite_path": self.sqlite_path,
            "base_url": self.base_url,
            "access_point_host": self.access_point_host,
            "as4_prefix": self.as4_prefix,
        }
        return out

    @classmethod
    def load(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        env = dict(os.environ if environ is None else environ)
        values: dict[str, Any] = {}
        file = env.get(PREFIX + "CONFIG_FILE")
        if file:
            with open(file, "rb") as f:
                values.update({k.lower(): v for k, v in tomllib.load(f).items()})
        for a in attrs.fields(cls):
            key = PREFIX + a.name.upper()
            if key in env:
                values[a.name] = env[key]
        values.update(overrides)
        typed: dict[str, Any] = {}
        for a in attrs.fields(cls):
            if a.name not in values:
                continue
            raw = values[a.name]
            try:
                if a.type in (int, "int"):
                    typed[a.name] = int(raw)
                elif a.type in (float, "float"):
                    typed[a.name] = float(raw)
                elif a.type in (bool, "bool"):
                    typed[a.name] = raw if isinstance(raw, bool) else _bool(str(raw))
                elif a.type in (Path, "Path"):
                    typed[a.name] = Path(raw)
                else:
                    typed[a.name] = str(raw)
            except ValueError as e:
                raise ValueError(f"{PREFIX}{a.name.upper()}: {e}") from None
        return cls(**typed).check()
