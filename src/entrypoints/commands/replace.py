"""``fourcorner replace-operator-certificate``: the operator's deliberate replacement of the
stored operator certificates by this data dir's files, for a certificate that is no renewal
of the stored one (another subject: another SMP name, another organisation beside the seat
id), which ``serve`` and ``worker`` refuse to store (``adapters.pki.renewal``). The seat id
stays (``operator_setup.SeatChanged``).

It reads what ``serve`` reads (``FOURCORNER_OPERATOR_CERTS_DIR``, or the test PKI in
``<data dir>/pki``, which it never creates), checks each file that differs from the stored
certificate (``deliberate_problems``: it chains to the trust anchors, is valid now, its key
matches, it has the key usages its use needs), and replaces none when one of them fails.
Otherwise it stores them as a start would (``operator_setup.replace_certificates``, which logs
each replacement): from then on processes started with the older files are refused, as any
process with files that are not the stored ones."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from fourcorner.adapters.pki.renewal import deliberate_problems
from fourcorner.application import operator_setup
from fourcorner.application.sealed import CERTIFICATE_KEY
from fourcorner.domain.certificates import Service
from fourcorner.domain.envelope import seat_spid
from fourcorner.domain.errors import SecretUnusable
from fourcorner.entrypoints import operator, operator_guard, preflight
from fourcorner.entrypoints.commands.common import DB_WAIT, say
from fourcorner.entrypoints.config import Settings
from fourcorner.entrypoints.preflight import StartupError
from fourcorner.entrypoints.setting_values import PREFIX


def replace_operator_certificates(settings: Settings, db_wait: float = DB_WAIT) -> list[str]:
    """Replace the stored operator certificates that differ from this data dir's files; the
    lines that say which were replaced (or that none differ). ``StartupError`` (nothing
    replaced) when the database holds none, this data dir has no test PKI, the at-rest key is
    missing, or a file fails the checks."""
    if settings.storage_kind == "memory":
        raise StartupError("memory:// keeps nothing between runs: there is nothing to replace")
    preflight.wait_for_database(settings, db_wait, say)
    stored = operator_guard.read(settings)
    if not stored:
        raise StartupError(
            "the database holds no operator certificates: there is nothing to replace "
            "(fourcorner serve stores this data dir's at its first start)"
        )
    missing = operator_guard.missing_file(settings)
    if missing is not None:
        raise StartupError(
            f"{missing} does not exist: this data dir holds no test PKI to store, and this "
            f"command makes none; put the new files in its pki/, or set "
            f"{PREFIX}OPERATOR_CERTS_DIR ({operator_guard.REPLACING})"
        )
    if settings.operator_certs_dir and not settings.trust_anchors_file:
        raise StartupError(
            f"{PREFIX}TRUST_ANCHORS_FILE is not set: name the network's roots, which the files "
            f"of {PREFIX}OPERATOR_CERTS_DIR are checked against (this command makes no test PKI)"
        )
    key_file = preflight.at_rest_key_file(settings)
    if key_file is not None and not key_file.exists():
        raise StartupError(
            f"the at-rest key {key_file} does not exist: the new private keys would be sealed "
            f"with a key of their own, which the other processes lack; copy keys/ from a "
            f"running process, or set {PREFIX}AT_REST_KEY"
        )
    environments = operator.environments(settings)
    anchors, now = operator.trust_anchors(settings), datetime.now(UTC)
    changed, refused = False, []
    for env in environments:
        for service, new in (
            (Service.AP, (env.ap_cert_pem, env.ap_chain_pem, env.ap_key_pem)),
            (Service.SMP, (env.smp_cert_pem, env.smp_chain_pem, env.smp_key_pem)),
        ):
            cert = stored.get((env.environment, service))
            if cert is None or cert.cert_pem == new[0]:
                continue
            file = operator_guard.local_file(settings, env.environment, service)
            changed = True
            problems = deliberate_problems(
                service, cert.cert_pem, new, anchors, now, settings.seat_id
            )
            found = f"{file}: {', '.join(problems)}"
            if problems and found not in refused:  # a test PKI's file serves TEST and PROD
                refused.append(found)
    if refused:
        raise StartupError(
            f"nothing was replaced: {'; '.join(refused)}; correct the files and run it again"
        )
    if not changed:
        return [
            "the database holds this data dir's operator certificates already: nothing to replace"
        ]
    replaced = asyncio.run(_replace(settings, environments, stored))
    return [
        f"replaced the operator's {r.environment.value} {r.service.value} certificate "
        f'"{r.stored.subject}" with "{r.new.subject}" '
        f"({operator_guard.local_file(settings, r.environment, r.service)})"
        for r in replaced
    ] + ["restart every process with these files: one started with the older files is refused"]


async def _replace(
    settings: Settings,
    environments: list[operator_setup.OperatorEnvironment],
    stored: operator_guard.Stored,
) -> list[operator_setup.Replacement]:
    """Store ``environments``' certificates in place of ``stored``, once the at-rest key in use
    opens the stored private keys (the new ones are sealed with it, for every process)."""
    from fourcorner.entrypoints.container import build_container, resolve, settle

    container = build_container(settings)
    await settle(container.init_resources())
    try:
        sealer = await resolve(container.sealer)
        for cert in stored.values():
            try:
                CERTIFICATE_KEY.open(sealer, cert)
            except SecretUnusable as e:
                raise StartupError(
                    f"nothing was replaced: the at-rest key in use does not open the stored "
                    f"private key of the operator's certificate {cert.id} ({e.reason}); give "
                    f"this process the key of the running ones ({PREFIX}AT_REST_KEY or keys/)"
                ) from None
        try:
            return await operator_setup.replace_certificates(
                await resolve(container.context),
                await resolve(container.network),
                environments,
                {key: cert.cert_pem for key, cert in stored.items()},
                seat_spid(settings.seat_id),
            )
        except operator_setup.SeatChanged as e:
            line = operator_guard.seat_line(settings, e)
            raise StartupError(f"nothing was replaced: {line}") from None
        except operator_setup.CertificateKept as e:  # stored by a start since it was read
            raise StartupError(
                f"nothing was replaced: the operator's {e.environment.value} "
                f'{e.service.value} certificate is "{e.stored.subject}" now: {e.problem}; '
                f"run it again"
            ) from None
    finally:
        await settle(container.shutdown_resources())
