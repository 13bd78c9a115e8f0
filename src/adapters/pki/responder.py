"""How the revocation check (``adapters.pki.revocation``) asks OCSP beyond one request: the
responders a certificate names, in turn until one gives an answer that counts, all within one
time budget (``in_turn``); and whether a delegated responder that signed an answer may be
believed, its own revocation told by its CA's list or by another responder's answer, all
within one time budget too (``delegate_checked``, RFC 6960 §4.2.2.2.1)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime

from cryptography import x509

from fourcorner.adapters.pki.certificates import instant
from fourcorner.adapters.pki.crl import KnownCrl, distribution_points
from fourcorner.adapters.pki.freshness import Unusable
from fourcorner.adapters.pki.ocsp import KnownOcsp, OcspRefused, responders

log = logging.getLogger("fourcorner.revocation")

Ask = Callable[[str, float | None], Awaitable[KnownOcsp]]
"""Asks the responder at a URL, within the seconds given (None: the fetch's own timeout)."""
ListOf = Callable[[str, float | None], Awaitable[tuple[KnownCrl | None, str]]]
"""The list kept (or fetched) from a distribution point that counts for the delegate (its CA's),
else why there is none, waiting for a fetch the seconds given at most (None: the timeout)."""
AnswerFrom = Callable[[Sequence[str], float | None], Awaitable[tuple[KnownOcsp | None, str]]]
"""The answer kept (or fetched) from those responders that counts, else why there is none,
waiting for a fetch the seconds given at most (None: the timeout)."""


async def in_turn(urls: Sequence[str], ask: Ask, budget: float | None) -> KnownOcsp:
    """The first answer that counts of the responders at ``urls`` asked by ``ask`` in their
    order, all of them within ``budget`` seconds (None: no bound but each fetch's); each that
    gave none when the next one is asked is logged (``revocation.responder_failed``), those
    left once the budget is over are not asked. None answering is ``OcspRefused``, saying
    what each met."""
    loop = asyncio.get_running_loop()
    deadline = None if budget is None else loop.time() + budget
    failures: list[str] = []
    for n, url in enumerate(urls):
        left = None if deadline is None or n == 0 else deadline - loop.time()  # the first: all
        if left is not None and left <= 0:
            failures += [f"{u}: not asked: the {budget:g} s to ask in are over" for u in urls[n:]]
            break
        if n > 0:
            log.warning(
                "an OCSP responder gave no answer, the next one is asked",
                extra={
                    "event": "revocation.responder_failed",
                    "url": urls[n - 1],
                    "reason": failures[-1].removeprefix(f"{urls[n - 1]}: "),
                },
            )
        try:
            return await ask(url, left)
        except Unusable as e:
            failures.append(f"{url}: {e}")
    if len(failures) == 1:
        raise OcspRefused(failures[0].removeprefix(f"{urls[0]}: "))
    raise OcspRefused("no responder answered (" + "; ".join(failures) + ")")


async def delegate_checked(
    delegate: x509.Certificate,
    cert: x509.Certificate,
    url: str,
    *,
    list_of: ListOf,
    answer_from: AnswerFrom,
    hard: bool,
    budget: float | None,
) -> None:
    """``OcspRefused`` when ``delegate``, the responder at ``url`` that signed an answer for
    ``cert``, is revoked, or, when ``hard``, when that cannot be told: by its CA's list
    (``list_of``) where it names distribution points, else by the answer (``answer_from``)
    of the responders it names other than ``url``; all within ``budget`` seconds (None: no
    bound but each wait's), each wait given what is left of them, none once they are over. Not
    ``hard``, the answer is taken then, with a warning (``revocation.unchecked``)."""
    who = f"its signer {delegate.subject.rfc4514_string()!r}"
    if delegate.serial_number == cert.serial_number:
        raise OcspRefused(f"{who} is the certificate it answers for")
    loop = asyncio.get_running_loop()
    deadline = None if budget is None else loop.time() + budget
    reasons: list[str] = []

    def left(where: str) -> float | None:
        """The seconds left to wait for ``where``: 0, its reason added, once they are over."""
        if deadline is None:
            return None
        seconds = deadline - loop.time()
        if seconds <= 0:
            reasons.append(f"{where}: not asked: the {budget:g} s to tell it in are over")
        return max(seconds, 0.0)

    others = [u for u in responders(delegate) if u != url]
    for point in distribution_points(delegate):
        within = left(point)
        if within == 0:
            break
        crl, why = await list_of(point, within)
        if crl is not None:
            _not_revoked(who, crl.revoked_on(delegate.serial_number), f"revocation list at {point}")
            return
        reasons.append(why)
    else:
        within = left(others[0]) if others else None
        if others and within != 0:
            answer, why = await answer_from(others, within)
            if answer is not None:
                _not_revoked(who, answer.revoked_on, f"OCSP responder at {answer.responder}")
                return
            reasons.append(why)
    why = f"{who}'s own revocation cannot be told: " + (
        "; ".join(reasons) or "it names no revocation list, nor another OCSP responder"
    )
    if hard:
        raise OcspRefused(why)
    log.warning(
        "an OCSP answer was taken without its delegated signer's revocation checked",
        extra={"event": "revocation.unchecked", "url": url, "reason": why},
    )


def _not_revoked(who: str, revoked_on: datetime | None, by: str) -> None:
    if revoked_on is not None:
        raise OcspRefused(f"{who} is revoked since {instant(revoked_on)} (the {by})")
