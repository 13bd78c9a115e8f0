"""The SML registration's settings: their checks (``Settings.problems``) and the locator they
configure (the container's ``locator``)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from fourcorner.adapters.sml import SmlEndpoint, SoapLocator
from fourcorner.application.locator import NoLocator, ServiceLocator
from fourcorner.application.operator_setup import OperatorEnvironment
from fourcorner.domain.network_services import Environment
from fourcorner.entrypoints.setting_values import PREFIX, url_problem

_SMP_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")


def problems(settings: Any) -> list[str]:
    """What is wrong with the SML settings of ``settings`` (a ``Settings``), one line each."""
    out: list[str] = []
    for env in ("test", "prod"):
        url, smp_id = getattr(settings, f"sml_url_{env}"), getattr(settings, f"smp_id_{env}")
        name = f"{PREFIX}SML_URL_{env.upper()}"
        if url:
            problem = url_problem(url)
            if problem is None and not url.lower().startswith("https://"):
                problem = "is not https: the SML is reached over TLS with the SMP certificate"
            if problem is not None:
                out.append(f"{name}={url!r} {problem}")
            if not smp_id:
                out.append(
                    f"{name} needs {PREFIX}SMP_ID_{env.upper()}: the id our SMP has (or is to "
                    "have) in that SML"
                )
        if smp_id and not _SMP_ID.fullmatch(smp_id):
            out.append(
                f"{PREFIX}SMP_ID_{env.upper()}={smp_id!r} is not an SMP id; use letters, "
                "digits, '-', '_' and '.' (at most 63), e.g. FOURCORNER-SMP-01"
            )
    ca_file = settings.sml_ca_file
    if ca_file and not Path(ca_file).is_file():
        out.append(
            f"{PREFIX}SML_CA_FILE={ca_file!r} is not a file; name a PEM bundle of the CAs of "
            "the SML's TLS certificate, or unset it to use the system's"
        )
    if not 0 < settings.sml_timeout <= 600:
        out.append(
            f"{PREFIX}SML_TIMEOUT={settings.sml_timeout:g} is out of range; use more than 0 and "
            "at most 600 seconds"
        )
    return out


def locator(settings: Any, environments: Iterable[OperatorEnvironment]) -> ServiceLocator:
    """The SML of each environment whose management URL is set, reached with that
    environment's SMP certificate; no SML registration at all when none is."""
    urls = {Environment.TEST: settings.sml_url_test, Environment.PROD: settings.sml_url_prod}
    ids = {Environment.TEST: settings.smp_id_test, Environment.PROD: settings.smp_id_prod}
    if not any(urls.values()):
        return NoLocator()
    endpoints = {
        env.environment: SmlEndpoint(
            url=urls[env.environment],
            smp_id=ids[env.environment],
            cert_pem=env.smp_cert_pem,
            key_pem=env.smp_key_pem,
            chain_pem=env.smp_chain_pem,
        )
        for env in environments
        if urls[env.environment]
    }
    return SoapLocator(endpoints, timeout=settings.sml_timeout, cafile=settings.sml_ca_file)
