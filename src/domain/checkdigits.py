"""Format and check-digit rules of participant identifier schemes, as small pure functions.

The algorithms (``gs1_check_digit``, ``luhn_check_digit``, …) compute the check digit(s) that a
payload should carry. The rules (``RULES``, by ICD) take the local part of a participant
identifier (the text after ``NNNN:``) and return ``None`` when it holds, or a reason that names the
scheme and the numbers: ``"0088: check digit is 5, expected 3"``. Rules never raise.

The rules, and the published texts they follow (the network's Policy for use of Identifiers
4.4, the identifier checks of the BIS Billing 3.0 rules, the code lists' usage notes, the
registries' check-digit algorithms), are listed in ``docs/identifiers.md``. Participant values
are compared case-insensitively, so the rules accept letters in either case.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping

Rule = Callable[[str], str | None]

NO_WEIGHTS = (3, 2, 7, 6, 5, 4, 3, 2)  # 0192, then the check digit with weight 1
DK_WEIGHTS = (2, 7, 6, 5, 4, 3, 2)  # 0184, 0198, then the check digit with weight 1
ABN_WEIGHTS = (10, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19)  # 0151, first digit minus one
LA_POSTE_PREFIX = "356000000"  # SIRETs of La Poste: digit sum a multiple of 5 instead of Luhn
LEITWEG_REGIONS = frozenset({f"{n:02d}" for n in range(1, 17)} | {"99"})

# The code list's own pattern for these ICDs is wrong in practice and is replaced by the rule
# here: 0106 (NL KvK) still lists the old 17-digit form, real numbers have 8 digits.
REPLACES_CODE_LIST_PATTERN = frozenset({"0106"})

_LEITWEG = re.compile(r"[0-9]{2,12}(?:-[0-9A-Z]{0,30})?-[0-9]{2}")
_ALNUM = re.compile(r"[0-9A-Za-z]+")
# bytes.translate tables: ASCII digits to their values; a digit value to its Luhn double.
_VALUES = bytes.maketrans(b"0123456789", bytes(range(10)))
_LUHN_DOUBLE = bytes.maketrans(bytes(range(10)), bytes((0, 2, 4, 6, 8, 1, 3, 5, 7, 9)))
_LETTER_VALUES = str.maketrans({chr(65 + i): str(10 + i) for i in range(26)})


# --- the algorithms: ``payload`` is ASCII digits unless said otherwise --------------------


def digit_values(payload: str) -> bytes:
    """The values of the digits of ``payload``, right to left (check-digit side first)."""
    return payload.encode("ascii").translate(_VALUES)[::-1]


def gs1_check_digit(payload: str) -> int:
    """GS1 mod 10: weights 3,1,3,… leftwards from the digit next to the check digit."""
    values = digit_values(payload)
    return -(3 * sum(values[::2]) + sum(values[1::2])) % 10


def luhn_check_digit(payload: str) -> int:
    """Luhn: double every second digit leftwards, starting next to the check digit."""
    values = digit_values(payload)
    return -(sum(values[::2].translate(_LUHN_DOUBLE)) + sum(values[1::2])) % 10


def mod11_check_digit(payload: str, weights: tuple[int, ...]) -> int | None:
    """11 - (weighted sum mod 11), 11 becoming 0; ``None`` when that is 10 (no valid number).

    The weights run left to right over ``payload``, which has one digit per weight.
    """
    values = payload.encode("ascii").translate(_VALUES)
    total: int = sum(map(operator.mul, values, weights))
    check = -total % 11
    return None if check == 10 else check


def be_mod97_check(payload: str) -> int:
    """Belgian enterprise number: the last two digits are 97 - (first 8 digits mod 97)."""
    return 97 - int(payload) % 97


def abn_check_digits(rest: str) -> int:
    """The leading two digits (10-98) of an ABN whose last 9 digits are ``rest``.

    Valid ABNs satisfy sum(weight * digit) mod 89 == 0 after subtracting one from the first
    digit; when the answer is 10, 99 is valid too (10 and 99 differ by 89 in the weighted sum).
    """
    values = rest.encode("ascii").translate(_VALUES)
    total: int = sum(map(operator.mul, values, ABN_WEIGHTS[2:]))
    return 10 + -total % 89


def iso7064_digits(text: str) -> str:
    """The numeric string of ISO 7064 MOD 97-10 for alphanumerics: A=10 … Z=35."""
    return text.upper().translate(_LETTER_VALUES)


def iso7064_mod97_10_check(payload: str) -> int:
    """The two check digits (2-98) to append to ``payload`` (alphanumerics)."""
    return 98 - int(iso7064_digits(payload) + "00") % 97


# --- the rules, one per ICD -----------------------------------------------------------------


def _is_digits(text: str, *lengths: int) -> bool:
    return len(text) in lengths and text.isascii() and text.isdigit()


def _mismatch(icd: str, actual: str, expected: int | str, width: int = 1) -> str:
    noun = "check digit is" if width == 1 else "check digits are"
    if isinstance(expected, int):
        expected = f"{expected:0{width}d}"
    return f"{icd}: {noun} {actual}, expected {expected}"


def _luhn(icd: str, number: str) -> str | None:
    expected = luhn_check_digit(number[:-1])
    if ord(number[-1]) - 48 != expected:
        return _mismatch(icd, number[-1], expected)
    return None


def _mod11(icd: str, number: str, weights: tuple[int, ...]) -> str | None:
    payload = number[: len(weights)]
    expected = mod11_check_digit(payload, weights)
    if expected is None:
        return f"{icd}: {payload} has no valid check digit (the mod-11 check digit would be 10)"
    if ord(number[-1]) - 48 != expected:
        return _mismatch(icd, number[-1], expected)
    return None


def _siret(icd: str, number: str) -> str | None:
    if not number.startswith(LA_POSTE_PREFIX):
        return _luhn(icd, number)
    total = sum(digit_values(number))
    if total % 5 == 0:
        return None
    low = (int(number[-1]) - total) % 5
    return _mismatch(icd, number[-1], f"{low} or {low + 5} (La Poste: digit sum a multiple of 5)")


def _be_enterprise(icd: str, number: str) -> str | None:
    expected = be_mod97_check(number[:8])
    if int(number[8:]) != expected:
        return _mismatch(icd, number[8:], expected, width=2)
    return None


def check_0088(local: str) -> str | None:
    """GLN: 13 digits, GS1 mod 10."""
    if not _is_digits(local, 13):
        return "0088: a GLN is 13 digits"
    expected = gs1_check_digit(local[:12])
    return None if ord(local[12]) - 48 == expected else _mismatch("0088", local[12], expected)


def check_0192(local: str) -> str | None:
    """NO organisation number: 9 digits, mod 11 with weights 3,2,7,6,5,4,3,2."""
    if not _is_digits(local, 9):
        return "0192: an organisation number is 9 digits"
    return _mod11("0192", local, NO_WEIGHTS)


def check_0208(local: str) -> str | None:
    """BE enterprise number: 10 digits, the first 0 or 1, mod 97."""
    if not _is_digits(local, 10) or local[0] not in "01":
        return "0208: an enterprise number is 10 digits, the first 0 or 1"
    return _be_enterprise("0208", local)


def check_9925(local: str) -> str | None:
    """BE VAT: ``BE`` and the 10-digit enterprise number, mod 97."""
    number = local[2:]
    if local[:2].upper() != "BE" or not _is_digits(number, 10) or number[0] not in "01":
        return "9925: a Belgian VAT number is BE and 10 digits, the first 0 or 1"
    return _be_enterprise("9925", number)


def check_0184(local: str) -> str | None:
    """DK CVR: 8 digits, the first not 0, mod 11 with weights 2,7,6,5,4,3,2,1."""
    if not _is_digits(local, 8) or local[0] == "0":
        return "0184: a CVR number is 8 digits, the first not 0"
    return _mod11("0184", local, DK_WEIGHTS)


def check_0198(local: str) -> str | None:
    """DK SE number: ``DK`` and 8 digits, mod 11 with weights 2,7,6,5,4,3,2,1."""
    number = local[2:]
    if local[:2].upper() != "DK" or not _is_digits(number, 8):
        return "0198: an SE number is DK and 8 digits"
    return _mod11("0198", number, DK_WEIGHTS)


def check_0007(local: str) -> str | None:
    """SE organisation number: 10 digits, Luhn."""
    if not _is_digits(local, 10):
        return "0007: an organisation number is 10 digits"
    return _luhn("0007", local)


def check_0002(local: str) -> str | None:
    """FR SIREN (9 digits) or SIRET (14 digits), Luhn; La Poste SIRETs by digit sum."""
    if not _is_digits(local, 9, 14):
        return "0002: a SIREN is 9 digits, a SIRET 14"
    return _siret("0002", local) if len(local) == 14 else _luhn("0002", local)


def check_0009(local: str) -> str | None:
    """FR SIRET: 14 digits, Luhn; La Poste SIRETs by digit sum."""
    if not _is_digits(local, 14):
        return "0009: a SIRET is 14 digits"
    return _siret("0009", local)


def check_0151(local: str) -> str | None:
    """AU ABN: 11 digits, mod 89 with weights 10,1,3,…,19 after subtracting 1 from the first."""
    if not _is_digits(local, 11):
        return "0151: an ABN is 11 digits"
    expected = abn_check_digits(local[2:])
    actual = int(local[:2])
    if actual == expected or (expected == 10 and actual == 99):
        return None
    return _mismatch("0151", local[:2], expected, width=2)


def check_0204(local: str) -> str | None:
    """DE Leitweg-ID: digits[-alphanumerics]-check digits; ISO 7064 MOD 97-10: the whole
    number, hyphens removed and letters mapped A=10 … Z=35, is 1 mod 97."""
    upper = local.upper()
    if _LEITWEG.fullmatch(upper) is None:
        return (
            "0204: a Leitweg-ID is 2-12 digits, optionally -up to 30 alphanumerics, then -2 digits"
        )
    if upper[:2] not in LEITWEG_REGIONS:
        return f"0204: a Leitweg-ID starts with 01-16 or 99, not {upper[:2]}"
    compact = upper.replace("-", "")
    if int(iso7064_digits(compact)) % 97 == 1:
        return None
    return _mismatch("0204", compact[-2:], iso7064_mod97_10_check(compact[:-2]), width=2)


def check_0211(local: str) -> str | None:
    """IT Partita IVA: ``IT`` and 11 digits, the last a Luhn check digit."""
    number = local[2:]
    if local[:2].upper() != "IT" or not _is_digits(number, 11):
        return "0211: a Partita IVA is IT and 11 digits"
    return _luhn("0211", number)


def check_0106(local: str) -> str | None:
    """NL KvK: 8 digits, no check digit (the code list's 17-digit form is not used)."""
    return None if _is_digits(local, 8) else "0106: a KvK number is 8 digits"


def check_0190(local: str) -> str | None:
    """NL OIN: 20 digits, no check digit."""
    return None if _is_digits(local, 20) else "0190: an OIN is 20 digits"


def check_0060(local: str) -> str | None:
    """DUNS: 9 digits, no check digit."""
    return None if _is_digits(local, 9) else "0060: a DUNS number is 9 digits"


def check_0201(local: str) -> str | None:
    """IT IPA code: 6 alphanumerics."""
    if len(local) == 6 and _ALNUM.fullmatch(local):
        return None
    return "0201: an IPA code is 6 letters or digits"


def check_0210(local: str) -> str | None:
    """IT Codice Fiscale: 16 alphanumerics (persons) or 11 digits (legal persons)."""
    if (len(local) == 16 and _ALNUM.fullmatch(local)) or _is_digits(local, 11):
        return None
    return "0210: a Codice Fiscale is 16 letters or digits, or 11 digits"


RULES: Mapping[str, Rule] = {
    "0002": check_0002,
    "0007": check_0007,
    "0009": check_0009,
    "0060": check_0060,
    "0088": check_0088,
    "0106": check_0106,
    "0151": check_0151,
    "0184": check_0184,
    "0190": check_0190,
    "0192": check_0192,
    "0198": check_0198,
    "0201": check_0201,
    "0204": check_0204,
    "0208": check_0208,
    "0210": check_0210,
    "0211": check_0211,
    "9925": check_9925,
}
