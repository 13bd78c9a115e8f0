"""Identifiers: participant identifiers completed with their scheme's check-digit rule, and
document type and process identifiers from the bundled code lists.

Participant identifiers are completed with the check-digit rule of their scheme
(``domain.checkdigits``: the rules the service itself applies, documented in
docs/identifiers.md); an almost valid one differs from a valid one in one character or one
adjacent transposition that its rule catches. Document and process identifiers come from the
bundled code lists, in either spelling (the network's ``peppol-`` and the neutral ``net-``
scheme names).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping

import attrs
from hypothesis import strategies as st

from fourcorner.adapters.codelists import load_catalogue
from fourcorner.domain.catalogue import Catalogue, neutral
from fourcorner.domain.checkdigits import LA_POSTE_PREFIX, LEITWEG_REGIONS, RULES

DIGITS = "0123456789"
UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
PARTICIPANT_SCHEME = "iso6523-actorid-upis"
DOCUMENT_SCHEME = "busdox-docid-qns"
PROCESS_SCHEME = "cenbii-procid-ubl"


@functools.cache
def catalogue() -> Catalogue:
    """The bundled code lists (the service's own catalogue)."""
    return load_catalogue()


# --- participant identifiers ---------------------------------------------------------------


def _digits(n: int) -> st.SearchStrategy[str]:
    return st.text(DIGITS, min_size=n, max_size=n)


def _starting(first: str, rest: int) -> st.SearchStrategy[str]:
    return st.tuples(st.sampled_from(first), _digits(rest)).map("".join)


@attrs.frozen
class _Shape:
    """``prefix + payload + check`` (or ``check + payload`` with ``check_first``)."""

    payload: Callable[[], st.SearchStrategy[str]]
    width: int = 1
    prefix: str = ""
    check_first: bool = False


# The schemes whose rule has check digits, and the shape of their numbers.
_SHAPES: Mapping[str, _Shape] = {
    "0002": _Shape(lambda: _digits(8)),
    "0007": _Shape(lambda: _digits(9)),
    "0009": _Shape(lambda: _digits(13).filter(lambda p: not p.startswith(LA_POSTE_PREFIX))),
    "0088": _Shape(lambda: _digits(12)),
    "0151": _Shape(lambda: _digits(9), width=2, check_first=True),
    "0184": _Shape(lambda: _starting("123456789", 6)),
    "0192": _Shape(lambda: _digits(8)),
    "0198": _Shape(lambda: _digits(7), prefix="DK"),
    "0208": _Shape(lambda: _starting("01", 7), width=2),
    "0211": _Shape(lambda: _digits(10), prefix="IT"),
    "9925": _Shape(lambda: _starting("01", 7), width=2, prefix="BE"),
}
CHECKED_SCHEMES: tuple[str, ...] = (*sorted(_SHAPES), "0204")


def complete(icd: str, payload: str) -> str | None:
    """The valid local part of scheme ``icd`` with ``payload`` (the digits before, or for
    0151 after, the check digits), or ``None`` when no check digit completes it (mod 11)."""
    shape = _SHAPES[icd]
    for c in range(10**shape.width):
        check = f"{c:0{shape.width}d}"
        body = f"{check}{payload}" if shape.check_first else f"{payload}{check}"
        local = shape.prefix + body
        if RULES[icd](local) is None:
            return local
    return None


@st.composite
def _leitweg(draw: st.DrawFn) -> str:
    head = draw(st.sampled_from(sorted(LEITWEG_REGIONS))) + draw(st.text(DIGITS, max_size=6))
    middle = draw(st.none() | st.text(DIGITS + UPPER, min_size=1, max_size=8))
    body = head if middle is None else f"{head}-{middle}"
    for c in range(100):
        if RULES["0204"](f"{body}-{c:02d}") is None:
            return f"{body}-{c:02d}"
    raise AssertionError("ISO 7064 MOD 97-10 always has a check")  # pragma: no cover


@st.composite
def _local(draw: st.DrawFn, icd: str) -> str:
    if icd == "0204":
        return draw(_leitweg())
    shape = _SHAPES[icd]
    found = draw(shape.payload().map(functools.partial(complete, icd)).filter(bool))
    assert found is not None
    return found


def local_parts(icd: str) -> st.SearchStrategy[str]:
    """Valid values of scheme ``icd`` (one of ``CHECKED_SCHEMES``), without the scheme."""
    if icd not in CHECKED_SCHEMES:
        raise ValueError(f"{icd} has no check-digit rule; schemes: {', '.join(CHECKED_SCHEMES)}")
    return _local(icd)


def participant_identifiers(schemes: tuple[str, ...] = CHECKED_SCHEMES) -> st.SearchStrategy[str]:
    """``<icd>:<value>`` identifiers of schemes with a check-digit rule, each valid."""
    return st.sampled_from(schemes).flatmap(lambda icd: local_parts(icd).map(f"{icd}:".__add__))


def _variants(local: str) -> list[str]:
    """Each one-character change (a digit for a digit, a letter for a letter) and each swap
    of two adjacent, different characters of the same kind."""
    found = []
    for i, old in enumerate(local):
        alphabet = DIGITS if old in DIGITS else UPPER if old in UPPER else ""
        found += [local[:i] + new + local[i + 1 :] for new in alphabet.replace(old, "")]
    for i in range(len(local) - 1):
        a, b = local[i], local[i + 1]
        if a != b and ((a in DIGITS) == (b in DIGITS)) and a != "-" and b != "-":
            found.append(local[:i] + b + a + local[i + 2 :])
    return found


@st.composite
def almost_valid_participant_identifiers(
    draw: st.DrawFn, schemes: tuple[str, ...] = CHECKED_SCHEMES
) -> str:
    """Identifiers one wrong digit or one transposition away from a valid one, that their
    scheme's rule refuses (the service answers ``AT-1006``)."""
    icd = draw(st.sampled_from(schemes))
    local = draw(local_parts(icd))
    caught = [v for v in _variants(local) if RULES[icd](v) is not None]
    return f"{icd}:{draw(st.sampled_from(caught))}"


# --- document types and processes ----------------------------------------------------------


def document_type_ids(*, spelling: str = "either") -> st.SearchStrategy[str]:
    """``<scheme>::<value>`` of the code list's document types that are not removed;
    ``spelling`` ``wire`` (the network's scheme names), ``neutral`` (``net-...``) or either."""
    types = [d for d in catalogue().document_types if d.state != "removed"]
    pairs = sorted({(d.wire_scheme, d.scheme, d.value) for d in types})
    return st.sampled_from(pairs).flatmap(lambda p: _spelled(p[0], p[1], p[2], spelling))


def process_ids(*, spelling: str = "either") -> st.SearchStrategy[str]:
    """``<scheme>::<value>`` of the code list's processes."""
    pairs = sorted({(p.scheme, neutral(p.scheme), p.value) for p in catalogue().processes})
    return st.sampled_from(pairs).flatmap(lambda p: _spelled(p[0], p[1], p[2], spelling))


def _spelled(wire: str, ours: str, value: str, spelling: str) -> st.SearchStrategy[str]:
    schemes = {"wire": [wire], "neutral": [ours], "either": sorted({wire, ours})}[spelling]
    return st.sampled_from(schemes).map(lambda s: f"{s}::{value}")


def almost_valid_document_type_ids() -> st.SearchStrategy[str]:
    """A known document type's identifier with one character of its value changed."""
    return document_type_ids(spelling="wire").flatmap(
        lambda text: st.integers(len(text) - 20, len(text) - 1).map(
            lambda i: text[:i] + ("X" if text[i] != "X" else "Y") + text[i + 1 :]
        )
    )
