"""The checks of the settings (``Settings.problems``): every value that cannot be used, one
line each, naming the setting, what is wrong and what to do."""

from __future__ import annotations

import contextlib
import re
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from fourcorner.adapters.pki.revocation import Policy
from fourcorner.adapters.pki.sealing import KeySealer
from fourcorner.domain.fields import published_contact_link
from fourcorner.entrypoints import lease_checks, setting_values, sml_setup
from fourcorner.entrypoints.setting_values import PREFIX

if TYPE_CHECKING:
    from fourcorner.entrypoints.config import Settings

LOG_LEVELS = ("debug", "info", "warning", "error", "critical")
REVOCATION_POLICIES = tuple(policy.value for policy in Policy)
MAX_REVOCATION_GRACE = 30 * 86_400
"""A list past its nextUpdate is used 30 days more at most: a CA that publishes none for longer
is not publishing, and a grace of any length would add past the last date there is."""
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
_SEAT_ID = re.compile(r"P[A-Z]{2}[0-9]{6}")
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # RFC 9110's token (a field name)
SML_ZONE_EXAMPLE = "participant.sml.test.tech.peppol.org."


def problems(s: Settings) -> list[str]:
    """What is wrong with ``s``, one line each: the setting, the problem, what to do."""
    out: list[str] = []

    def need(ok: bool, problem: str) -> None:
        if not ok:
            out.append(problem)

    try:
        s.storage_kind  # noqa: B018 - raises on an unknown scheme
    except ValueError:
        scheme = urlsplit(s.database_url).scheme or "(none)"
        out.append(
            f"{PREFIX}DATABASE_URL has an unknown scheme {scheme!r}; use "
            "postgresql://user@host/db, sqlite:///path/file.db or memory://"
        )
    need(
        s.auth_mode in ("local", "oidc"),
        f"{PREFIX}AUTH_MODE={s.auth_mode!r} is not a mode; use local or oidc",
    )
    need(
        s.auth_mode != "oidc" or bool(s.oidc_issuer and s.oidc_audience and s.oidc_jwks_url),
        f"{PREFIX}AUTH_MODE=oidc needs {PREFIX}OIDC_ISSUER, {PREFIX}OIDC_AUDIENCE and "
        f"{PREFIX}OIDC_JWKS_URL; set all three",
    )
    for name in ("retry_delays", "sending_delays", "directory_delays"):
        try:
            getattr(s, name)
        except ValueError as e:  # config.ConfigError
            out.append(str(e))
    need(
        0 <= s.mls_confirm_seconds <= 1200,
        f"{PREFIX}MLS_CONFIRM_SECONDS={s.mls_confirm_seconds:g} is out of range; "
        "use 0 to 1200 seconds",
    )
    need(
        s.smp_prefix.startswith("/") and not s.smp_prefix.endswith("/"),
        f"{PREFIX}SMP_PREFIX={s.smp_prefix!r} must start with / and not end with one, e.g. /smp",
    )
    need(
        not s.smp_technical_contact or published_contact_link(s.smp_technical_contact) != "",
        f"{PREFIX}SMP_TECHNICAL_CONTACT={s.smp_technical_contact[:80]!r} is not a contact an SMP "
        "publishes; use an http(s) URL or mailto: and an email address",
    )
    need(
        1 <= s.http_idle_seconds <= 3600,
        f"{PREFIX}HTTP_IDLE_SECONDS={s.http_idle_seconds:g} is out of range; use 1 to 3600 seconds",
    )
    need(
        s.http_connections_per_address >= 0,
        f"{PREFIX}HTTP_CONNECTIONS_PER_ADDRESS={s.http_connections_per_address} must be 0 "
        "(no limit) or more",
    )
    need(
        0 < s.port < 65536,
        f"{PREFIX}PORT={s.port} is not a TCP port; use 1 to 65535",
    )
    need(
        0 <= s.worker_port < 65536,
        f"{PREFIX}WORKER_PORT={s.worker_port} is not a TCP port; use 1 to 65535, or 0 for none",
    )
    need(
        s.log_level.lower() in LOG_LEVELS,
        f"{PREFIX}LOG_LEVEL={s.log_level!r} is not a log level; use one of "
        + ", ".join(LOG_LEVELS),
    )
    need(
        not s.database_schema or bool(_IDENTIFIER.fullmatch(s.database_schema)),
        f"{PREFIX}DATABASE_SCHEMA={s.database_schema!r} is not a plain identifier; use "
        "letters, digits and _ (or leave it unset for the server's default schema)",
    )
    need(
        bool(_SEAT_ID.fullmatch(s.seat_id)),
        f"{PREFIX}SEAT_ID={s.seat_id!r} is not a seat id; it is P, two capital letters "
        "and six digits, e.g. PFC000001",
    )
    for name, key, do in (
        (
            "AT_REST_KEY",
            s.at_rest_key,
            "make one with `openssl rand -base64 32`, or unset it to use the key file in the "
            "data dir",
        ),
        (
            "AT_REST_KEY_PREVIOUS",
            s.at_rest_key_previous,
            f"set it to the at-rest key being replaced, as {PREFIX}AT_REST_KEY held it (or "
            "`base64 -w0 keys/at-rest.key`), or unset it",
        ),
    ):
        if key.strip():
            try:  # a configured key is only decoded: no file is read or written
                KeySealer.from_config(key, s.data_dir)
            except ValueError:
                out.append(f"{PREFIX}{name} is not the base64 of 32 bytes; {do}")
    need(
        bool(_HEADER_NAME.fullmatch(s.webhook_hex_signature_header)),
        f"{PREFIX}WEBHOOK_HEX_SIGNATURE_HEADER={s.webhook_hex_signature_header[:80]!r} is not "
        "an HTTP header name; use letters, digits and -, e.g. x-webhook-sign",
    )
    token = s.metrics_token
    need(
        not token
        or (len(token) >= 16 and token.isascii() and token.isprintable() and " " not in token),
        f"{PREFIX}METRICS_TOKEN must be at least 16 printable ASCII characters without spaces "
        "(`openssl rand -base64 24`), or unset for public metrics",
    )
    for name in (
        "public_url",
        "ap_host",
        "smp_lookup_url",
        "directory_url_test",
        "directory_url_prod",
        "oidc_jwks_url",
    ):
        value = getattr(s, name)
        problem = setting_values.url_problem(value) if value else None
        need(problem is None, f"{PREFIX}{name.upper()}={value!r} {problem}")
    for name in (
        "db_pool_size",
        "max_body_bytes",
        "max_document_bytes",
        "webhook_concurrency",
        "send_attempts",
        "directory_attempts",
        "as4_inbound_concurrency",
    ):
        value = getattr(s, name)
        need(value >= 1, f"{PREFIX}{name.upper()}={value} must be at least 1")
    need(
        s.as4_inbound_per_address >= 0,
        f"{PREFIX}AS4_INBOUND_PER_ADDRESS={s.as4_inbound_per_address} must be 0 (no limit) or more",
    )
    need(
        s.webhook_per_host >= 0,
        f"{PREFIX}WEBHOOK_PER_HOST={s.webhook_per_host} must be 0 (half of "
        f"{PREFIX}WEBHOOK_CONCURRENCY) or more",
    )
    need(
        s.auth_failure_limit >= 0,
        f"{PREFIX}AUTH_FAILURE_LIMIT={s.auth_failure_limit} must be 0 (no limit) or more",
    )
    need(
        0 < s.auth_failure_window <= 86_400,
        f"{PREFIX}AUTH_FAILURE_WINDOW={s.auth_failure_window:g} is out of range; use "
        "more than 0 and at most 86400 seconds",
    )
    need(
        s.auth_failure_tracked >= 1,
        f"{PREFIX}AUTH_FAILURE_TRACKED={s.auth_failure_tracked} must be at least 1",
    )
    need(
        s.discovery in ("", "sml", "fixed"),
        f"{PREFIX}DISCOVERY={s.discovery!r} is not a discovery; use sml or fixed",
    )
    for env, zone in (("TEST", s.sml_zone_test), ("PROD", s.sml_zone_prod)):
        labels = zone.strip().rstrip(".").split(".")
        need(
            all(labels) and not any(c.isspace() for c in zone.strip()),
            f"{PREFIX}SML_ZONE_{env}={zone!r} is not a DNS name; use e.g. {SML_ZONE_EXAMPLE}",
        )
    try:
        s.nameservers  # noqa: B018 - raises when malformed, naming the setting
    except ValueError as e:
        out.append(str(e))
    try:
        s.proxy_networks  # noqa: B018 - raises on an entry that is no address or network
    except ValueError as e:
        out.append(str(e))
    out += sml_setup.problems(s)
    if s.directory_ca_file:
        problem = setting_values.pem_certificates_problem(s.directory_ca_file)
        need(
            problem is None,
            f"{PREFIX}DIRECTORY_CA_FILE={s.directory_ca_file!r} {problem}; name a PEM bundle of "
            "the CAs of the directory's TLS certificate, or unset it to use the system's",
        )
    need(
        s.blob_sweep_grace_seconds >= 1,
        f"{PREFIX}BLOB_SWEEP_GRACE_SECONDS={s.blob_sweep_grace_seconds:g} must be at "
        "least 1 second",
    )
    need(
        s.blob_sweep_interval_seconds > 0,
        f"{PREFIX}BLOB_SWEEP_INTERVAL_SECONDS={s.blob_sweep_interval_seconds:g} must be "
        "more than 0 seconds",
    )
    blobs = s.blob_store.strip().lower()
    need(
        blobs in ("", "filesystem", "postgres"),
        f"{PREFIX}BLOB_STORE={s.blob_store!r} is not a blob store; use filesystem or postgres",
    )
    with contextlib.suppress(ValueError):  # an unknown database scheme is named above
        need(
            blobs != "postgres" or s.storage_kind == "postgres",
            f"{PREFIX}BLOB_STORE=postgres needs a PostgreSQL database; set "
            f"{PREFIX}DATABASE_URL=postgresql://..., or use {PREFIX}BLOB_STORE=filesystem",
        )
    need(
        s.validation_workers >= 0,
        f"{PREFIX}VALIDATION_WORKERS={s.validation_workers} must be 0 (one per core but one) "
        "or more",
    )
    need(
        s.validation_cache_mib >= 0,
        f"{PREFIX}VALIDATION_CACHE_MIB={s.validation_cache_mib} must be 0 (no cache) or more",
    )
    need(
        s.validation_timeout > 0,
        f"{PREFIX}VALIDATION_TIMEOUT={s.validation_timeout:g} must be more than 0 seconds",
    )
    need(
        s.revocation.strip().lower() in REVOCATION_POLICIES,
        f"{PREFIX}REVOCATION={s.revocation!r} is not a revocation policy; use "
        + ", ".join(REVOCATION_POLICIES),
    )
    need(
        0 <= s.revocation_wait_seconds <= 60,
        f"{PREFIX}REVOCATION_WAIT_SECONDS={s.revocation_wait_seconds:g} is out of range; "
        "use 0 to 60 seconds",
    )
    need(
        0 <= s.revocation_grace_seconds <= MAX_REVOCATION_GRACE,
        f"{PREFIX}REVOCATION_GRACE_SECONDS={s.revocation_grace_seconds:g} is out of range; "
        f"use 0 to {MAX_REVOCATION_GRACE} seconds (30 days)",
    )
    need(
        0 < s.revocation_timeout <= 600,
        f"{PREFIX}REVOCATION_TIMEOUT={s.revocation_timeout:g} is out of range; use more than "
        "0 and at most 600 seconds",
    )
    for name in lease_checks.SECONDS:
        value = getattr(s, name)
        need(value > 0, f"{PREFIX}{name.upper()}={value:g} must be more than 0 seconds")
    out += lease_checks.problems(s)
    return out
