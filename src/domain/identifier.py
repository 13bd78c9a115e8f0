"""Participant identifiers (``0088:1548079098355``) and the rule that checks one scheme's values.

A participant identifier is ``<ICD>:<local part>`` in the scheme ``iso6523-actorid-upis``: a
4-digit ICD, a colon, then 1-130 characters of ``A-Z a-z 0-9 - . _ ~``. Values compare
case-insensitively; ``canonical`` (lower case) is the form to store and look up.
"""

from __future__ import annotations

import re

import attrs

from fourcorner.domain.checkdigits import REPLACES_CODE_LIST_PATTERN, RULES, Rule
from fourcorner.domain.errors import InvalidIdentifier
from fourcorner.domain.text import quoted

PARTICIPANT_SCHEME = "iso6523-actorid-upis"
MAX_LOCAL_LENGTH = 130

_PREFIX = PARTICIPANT_SCHEME + "::"
_FORM = re.compile(r"(?:iso6523-actorid-upis::)?([0-9]{4}):([A-Za-z0-9._~-]{1,130})")
_ICD = re.compile(r"[0-9]{4}")
_LOCAL = re.compile(r"[A-Za-z0-9._~-]{1,130}")
_BAD_CHAR = re.compile(r"[^A-Za-z0-9._~-]")
_REGEX_LINE = re.compile(r"RegEx:\s*(\S+)")


def local_part_problem(local: str) -> str | None:
    """Why ``local`` cannot be the part after the colon, or ``None`` when it can."""
    if not 1 <= len(local) <= MAX_LOCAL_LENGTH:
        return f"the identifier after the ICD must be 1 to 130 characters, not {len(local)}"
    bad = _BAD_CHAR.search(local)
    if bad is not None:
        return f"the identifier after the ICD may contain only A-Z a-z 0-9 - . _ ~, not {bad[0]!r}"
    return None


def _form_problem(text: str) -> str:
    rest = text.removeprefix(_PREFIX)
    icd, colon, local = rest.partition(":")
    if not colon:
        return "a participant identifier has the form <4-digit ICD>:<identifier>, e.g. 0088:…"
    if _ICD.fullmatch(icd) is None:
        return f"the scheme code before the colon must be a 4-digit ICD such as 0088, not {quoted(icd)}"
    return local_part_problem(local) or "not a participant identifier"


@attrs.frozen
class ParticipantIdentifier:
    """``icd:local``; equal and hashed case-insensitively, shown as given."""

    icd: str
    local: str = attrs.field(eq=str.lower)

    def __attrs_post_init__(self) -> None:
        if _ICD.fullmatch(self.icd) is None or _LOCAL.fullmatch(self.local) is None:
            value = f"{self.icd}:{self.local}"
            raise InvalidIdentifier(value=value, rule=_form_problem(value))

    @classmethod
    def parse(cls, text: str, *, field: str = "participantIdentifier") -> ParticipantIdentifier:
        """Read ``NNNN:local`` or ``iso6523-actorid-upis::NNNN:local``; raise InvalidIdentifier."""
        match = _FORM.fullmatch(text)
        if match is None:
            raise InvalidIdentifier(value=text, rule=_form_problem(text), field=field)
        # The match has checked what __attrs_post_init__ checks; skip it on this hot path.
        identifier = object.__new__(cls)
        object.__setattr__(identifier, "icd", match[1])
        object.__setattr__(identifier, "local", match[2])
        return identifier

    @property
    def canonical(self) -> str:
        """Lower case ``icd:local``: the form to store and to look up by."""
        return f"{self.icd}:{self.local.lower()}"

    @property
    def uri(self) -> str:
        """The canonical value with its scheme, as SMP URLs carry it."""
        return f"{_PREFIX}{self.icd}:{self.local.lower()}"

    def __str__(self) -> str:
        return f"{self.icd}:{self.local}"


def code_list_patterns(validation_rules: str | None) -> list[str]:
    """The patterns of the ``RegEx:`` lines of a scheme's ``validation-rules``."""
    return _REGEX_LINE.findall(validation_rules or "")


@attrs.frozen
class SchemeRule:
    """What one scheme checks of a local part: the code list's pattern, then ``check``."""

    icd: str
    pattern: re.Pattern[str] | None = None
    check: Rule | None = None
    source: str = ""  # the code list's pattern(s), for messages

    @classmethod
    def of(cls, icd: str, validation_rules: str | None) -> SchemeRule:
        """The rule of the scheme ``icd``; several ``RegEx:`` lines are alternatives.

        Patterns match the whole local part and ignore case, like participant values.
        """
        found = [] if icd in REPLACES_CODE_LIST_PATTERN else code_list_patterns(validation_rules)
        if not found:
            return cls(icd, None, RULES.get(icd))
        pattern = re.compile("|".join(f"(?:{p})" for p in found), re.IGNORECASE)
        return cls(icd, pattern, RULES.get(icd), " or ".join(found))

    def problem(self, local: str) -> str | None:
        """Why ``local`` is not a value of this scheme (``"0088: check digit …"``), or ``None``."""
        if self.pattern is not None and self.pattern.fullmatch(local) is None:
            return f"{self.icd}: the identifier must match the pattern {self.source}"
        if self.check is not None:
            return self.check(local)
        return None
