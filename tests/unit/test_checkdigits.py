"""Check-digit rules: generated valid numbers pass, the errors each algorithm catches are caught.

Valid numbers are built from random payload digits and a check digit found with a textbook
reference implementation written here, independently of ``domain.checkdigits``. Mutation tests
assert only what each algorithm guarantees:

- GS1 mod 10 catches every single-digit change; it misses adjacent transpositions of two digits
  that differ by 5 (weights 3 and 1: 2 x 5 = 10).
- Luhn catches every single-digit change; it misses the transposition 09 <-> 90.
- Weighted mod 11 (NO, DK), mod 97 (BE), mod 89 (AU ABN) and ISO 7064 MOD 97-10 (digits for
  digits, letters for letters) catch every single change and every adjacent transposition.
- La Poste SIRETs (digit sum a multiple of 5) miss changes by 5 and every transposition.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Iterator

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from fourcorner.domain.checkdigits import (
    LA_POSTE_PREFIX,
    LEITWEG_REGIONS,
    RULES,
    abn_check_digits,
    gs1_check_digit,
    iso7064_mod97_10_check,
    luhn_check_digit,
    mod11_check_digit,
)

DIGITS = "0123456789"
UPPER = string.ascii_uppercase

# --- textbook reference implementations -------------------------------------------------------


def ref_gs1(number: str) -> bool:
    return sum(int(d) * (1 if i % 2 == 0 else 3) for i, d in enumerate(reversed(number))) % 10 == 0


def ref_luhn(number: str) -> bool:
    total = 0
    for i, d in enumerate(reversed(number)):
        n = int(d) * (2 if i % 2 else 1)
        total += n - 9 if n > 9 else n
    return total % 10 == 0


def ref_weighted(weights: tuple[int, ...], modulus: int) -> Callable[[str], bool]:
    def valid(number: str) -> bool:
        return sum(w * int(d) for w, d in zip(weights, number, strict=True)) % modulus == 0

    return valid


ref_no = ref_weighted((3, 2, 7, 6, 5, 4, 3, 2, 1), 11)
ref_dk = ref_weighted((2, 7, 6, 5, 4, 3, 2, 1), 11)


def ref_be(number: str) -> bool:
    return int(number[8:]) == 97 - int(number[:8]) % 97


def ref_abn(number: str) -> bool:
    digits = [int(d) for d in number]
    digits[0] -= 1
    weights = (10, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19)
    return number[0] != "0" and sum(w * d for w, d in zip(weights, digits, strict=True)) % 89 == 0


def ref_iso7064(text: str) -> bool:
    return int("".join(str(int(c, 36)) for c in text.replace("-", ""))) % 97 == 1


# --- generators of valid numbers ---------------------------------------------------------------


def digits(n: int) -> st.SearchStrategy[str]:
    return st.text(DIGITS, min_size=n, max_size=n)


@st.composite
def completed(
    draw: st.DrawFn,
    payload: st.SearchStrategy[str],
    valid: Callable[[str], bool],
    width: int = 1,
    prefix: str = "",
) -> str:
    """``prefix + payload + check``, the check found by ``valid``; payloads without one skipped."""
    body = draw(payload)
    found = [f"{body}{c:0{width}d}" for c in range(10**width) if valid(f"{body}{c:0{width}d}")]
    assume(found)  # e.g. mod 11 payloads whose check digit would be 10
    return prefix + draw(st.sampled_from(found))


@st.composite
def abn(draw: st.DrawFn) -> str:
    rest = draw(digits(9))
    found = [f"{c}{rest}" for c in range(10, 100) if ref_abn(f"{c}{rest}")]
    return draw(st.sampled_from(found))


def no_la_poste(number: str) -> bool:
    return not number.startswith(LA_POSTE_PREFIX)


@st.composite
def leitweg(draw: st.DrawFn) -> str:
    head = draw(st.sampled_from(sorted(LEITWEG_REGIONS))) + draw(st.text(DIGITS, max_size=10))
    middle = draw(st.none() | st.text(DIGITS + UPPER, max_size=30))
    body = head if middle is None else f"{head}-{middle}"
    checks = [f"{c:02d}" for c in range(100) if ref_iso7064(f"{body}{c:02d}")]
    return f"{body}-{draw(st.sampled_from(checks))}"


def gs1_misses(a: str, b: str) -> bool:
    return abs(int(a) - int(b)) == 5


def luhn_misses(a: str, b: str) -> bool:
    return {a, b} == {"0", "9"}


def never(a: str, b: str) -> bool:
    return False


def starting(first: str, rest: int) -> st.SearchStrategy[str]:
    """A digit of ``first`` and ``rest`` more digits."""
    return st.tuples(st.sampled_from(first), digits(rest)).map("".join)


# (ICD, valid numbers, characters before the checked digits, transpositions it misses)
CASES = [
    pytest.param("0088", completed(digits(12), ref_gs1), 0, gs1_misses, id="0088-gln"),
    pytest.param("0192", completed(digits(8), ref_no), 0, never, id="0192-no"),
    pytest.param("0208", completed(starting("01", 7), ref_be, 2), 0, never, id="0208-be"),
    pytest.param("9925", completed(starting("01", 7), ref_be, 2, "BE"), 2, never, id="9925-be-vat"),
    pytest.param("0184", completed(starting("123456789", 6), ref_dk), 0, never, id="0184-dk-cvr"),
    pytest.param("0198", completed(digits(7), ref_dk, prefix="DK"), 2, never, id="0198-dk-se"),
    pytest.param("0007", completed(digits(9), ref_luhn), 0, luhn_misses, id="0007-se"),
    pytest.param("0002", completed(digits(8), ref_luhn), 0, luhn_misses, id="0002-siren"),
    pytest.param(
        "0002",
        completed(digits(13), ref_luhn).filter(no_la_poste),
        0,
        luhn_misses,
        id="0002-siret",
    ),
    pytest.param(
        "0009",
        completed(digits(13), ref_luhn).filter(no_la_poste),
        0,
        luhn_misses,
        id="0009-siret",
    ),
    pytest.param(
        "0211", completed(digits(10), ref_luhn, prefix="IT"), 2, luhn_misses, id="0211-it"
    ),
    pytest.param("0151", abn(), 0, never, id="0151-abn"),
    pytest.param("0204", leitweg(), 0, never, id="0204-leitweg"),
]


def substitutions(number: str, start: int) -> Iterator[tuple[str, str, str]]:
    """Every change of one digit to another digit, or of one letter to another letter."""
    for i in range(start, len(number)):
        old = number[i]
        alphabet = DIGITS if old in DIGITS else UPPER if old in UPPER else ""
        for new in alphabet.replace(old, ""):
            yield old, new, number[:i] + new + number[i + 1 :]


def transpositions(number: str, start: int) -> Iterator[tuple[str, str, str]]:
    """Every swap of two adjacent, different digits (or two different letters)."""
    for i in range(start, len(number) - 1):
        a, b = number[i], number[i + 1]
        same_kind = (a in DIGITS and b in DIGITS) or (a in UPPER and b in UPPER)
        if a != b and same_kind:
            yield a, b, number[:i] + b + a + number[i + 2 :]


@pytest.mark.parametrize(("icd", "numbers", "start", "misses"), CASES)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_generated_numbers_pass_and_their_errors_are_caught(icd, numbers, start, misses, data):
    number = data.draw(numbers)
    rule = RULES[icd]
    assert rule(number) is None
    assert rule(number.lower()) is None  # participant values ignore case
    for _old, _new, mutant in substitutions(number, start):
        if icd in ("0002", "0009") and not no_la_poste(mutant):
            continue  # judged by the La Poste rule instead; see the La Poste test
        assert rule(mutant) is not None, mutant
    for a, b, mutant in transpositions(number, start):
        if icd in ("0002", "0009") and not no_la_poste(mutant):
            continue
        if misses(a, b):
            assert rule(mutant) is None, mutant  # the algorithm's known blind spot
        else:
            assert rule(mutant) is not None, mutant


@settings(max_examples=60, deadline=None)
@given(tail=digits(4), icd=st.sampled_from(["0002", "0009"]), data=st.data())
def test_la_poste_sirets_use_the_digit_sum(tail, icd, data):
    body = LA_POSTE_PREFIX + tail
    total = sum(int(d) for d in body)
    last = data.draw(st.sampled_from([d for d in range(10) if (total + d) % 5 == 0]))
    number = f"{body}{last}"
    rule = RULES[icd]
    assert rule(number) is None
    for i in range(len(LA_POSTE_PREFIX), len(number)):
        for new in DIGITS.replace(number[i], ""):
            mutant = number[:i] + new + number[i + 1 :]
            caught = (int(new) - int(number[i])) % 5 != 0
            assert (rule(mutant) is not None) == caught, mutant
    for _a, _b, mutant in transpositions(number, len(LA_POSTE_PREFIX)):
        assert rule(mutant) is None  # a digit sum cannot see a transposition


@given(payload=digits(12))
def test_gs1_matches_the_reference(payload):
    assert ref_gs1(payload + str(gs1_check_digit(payload)))


@given(payload=st.text(DIGITS, min_size=1, max_size=20))
def test_luhn_matches_the_reference(payload):
    assert ref_luhn(payload + str(luhn_check_digit(payload)))


@given(payload=digits(8))
def test_mod11_gives_no_digit_exactly_when_none_exists(payload):
    check = mod11_check_digit(payload, (3, 2, 7, 6, 5, 4, 3, 2))
    valid = [d for d in DIGITS if ref_no(payload + d)]
    assert valid == ([] if check is None else [str(check)])


@given(rest=digits(9))
def test_abn_check_digits_match_the_reference(rest):
    check = abn_check_digits(rest)
    assert 10 <= check <= 98
    assert ref_abn(f"{check}{rest}")


@given(payload=st.text(DIGITS + UPPER, min_size=1, max_size=40))
def test_iso7064_check_matches_the_reference(payload):
    check = iso7064_mod97_10_check(payload)
    assert 2 <= check <= 98
    assert ref_iso7064(f"{payload}{check:02d}")


@settings(max_examples=200)
@given(icd=st.sampled_from(sorted(RULES)), text=st.text(max_size=60))
def test_rules_never_raise(icd, text):
    reason = RULES[icd](text)
    assert reason is None or reason.startswith(f"{icd}: ")


@pytest.mark.parametrize(
    ("icd", "value", "reason"),
    [
        ("0088", "1548079098356", "0088: check digit is 6, expected 5"),
        ("0088", "154807909835", "0088: a GLN is 13 digits"),
        ("0192", "745707328", "0192: check digit is 8, expected 7"),
        ("0007", "2120000788", "0007: check digit is 8, expected 7"),
        ("0208", "0899965308", "0208: check digits are 08, expected 07"),
        ("0208", "2899965307", "0208: an enterprise number is 10 digits, the first 0 or 1"),
        ("9925", "BE0899965308", "9925: check digits are 08, expected 07"),
        ("0184", "13585629", "0184: check digit is 9, expected 8"),
        ("0184", "03585628", "0184: a CVR number is 8 digits, the first not 0"),
        ("0198", "DK26769389", "0198: check digit is 9, expected 8"),
        ("0151", "52824753556", "0151: check digits are 52, expected 51"),
        ("0204", "991-33333TEST-34", "0204: check digits are 34, expected 33"),
        ("0204", "17-12345-67", "0204: a Leitweg-ID starts with 01-16 or 99, not 17"),
        ("0211", "IT06363391002", "0211: check digit is 2, expected 1"),
        ("0002", "784301773", "0002: check digit is 3, expected 2"),
    ],
)
def test_reasons_name_the_rule_and_the_numbers(icd, value, reason):
    assert RULES[icd](value) == reason


def test_mod11_payload_without_a_check_digit_is_refused_whatever_the_last_digit():
    payload = next(
        p for p in (f"{n:08d}" for n in range(1000)) if not any(ref_no(p + d) for d in DIGITS)
    )
    for d in DIGITS:
        reason = RULES["0192"](payload + d)
        assert (
            reason
            == f"0192: {payload} has no valid check digit (the mod-11 check digit would be 10)"
        )


def test_abn_check_digits_10_and_99_are_both_valid():
    # The 9 trailing zeros weigh 0, so the leading pair may weigh 0 ("10") or 89 ("99").
    assert RULES["0151"]("10000000000") is None
    assert RULES["0151"]("99000000000") is None
    assert RULES["0151"]("05000000000") == "0151: check digits are 05, expected 10"


def test_la_poste_reason_names_the_digit_sum_rule():
    assert RULES["0002"]("35600000000048") == (
        "0002: check digit is 8, expected 2 or 7 (La Poste: digit sum a multiple of 5)"
    )


def test_iso7064_accepts_every_check_pair_that_leaves_1_mod_97():
    # The generated check digits are 02-98, but the rule is "mod 97 == 1", so for a body whose
    # generated pair is 97 the pair 00 is valid too (README: the whole number mod 97 must be 1).
    body = next(f"99-{n}" for n in range(1000) if iso7064_mod97_10_check(f"99{n}") == 97)
    assert RULES["0204"](f"{body}-97") is None
    assert RULES["0204"](f"{body}-00") is None


@pytest.mark.parametrize(
    ("icd", "good", "bad"),
    [
        ("0106", ["12345678"], ["1234567", "123456789", "12345678901234567", "1234567A"]),
        ("0190", ["00000001820029336000"], ["0000000182002933600", "0000000182002933600A"]),
        ("0060", ["812810734"], ["81281073", "8128107345"]),
        ("0201", ["ABC123", "abc123"], ["ABC12", "ABC1234", "ABC-12"]),
        (
            "0210",
            ["RSSMRA85T10A562S", "12345678901"],
            ["RSSMRA85T10A562", "1234567890", "RSSMRA85T10A562-"],
        ),
    ],
)
def test_format_rules(icd, good, bad):
    for value in good:
        assert RULES[icd](value) is None, value
    for value in bad:
        assert RULES[icd](value) is not None, value


# The harness's public strategies (fourcorner.entrypoints.harness.strategies) complete their
# numbers with the service's own rules; the textbook references above judge them here.
HARNESS_REFERENCES = {
    "0002": ref_luhn,
    "0007": ref_luhn,
    "0009": ref_luhn,
    "0088": ref_gs1,
    "0151": ref_abn,
    "0184": ref_dk,
    "0192": ref_no,
    "0198": lambda n: n.startswith("DK") and ref_dk(n[2:]),
    "0204": ref_iso7064,
    "0208": ref_be,
    "0211": lambda n: n.startswith("IT") and ref_luhn(n[2:]),
    "9925": lambda n: n.startswith("BE") and ref_be(n[2:]),
}


def test_the_harness_covers_every_scheme_it_names():
    from fourcorner.entrypoints.harness.strategies import CHECKED_SCHEMES

    assert set(CHECKED_SCHEMES) == set(HARNESS_REFERENCES)


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_the_harness_identifiers_pass_the_reference_implementations(data):
    from fourcorner.entrypoints.harness import strategies as hs

    icd, _, local = data.draw(hs.participant_identifiers()).partition(":")
    assert HARNESS_REFERENCES[icd](local), f"{icd}:{local}"
    wrong_icd, _, wrong = data.draw(hs.almost_valid_participant_identifiers((icd,))).partition(":")
    assert wrong_icd == icd
    if icd in ("0002", "0009") and not no_la_poste(wrong):
        return  # La Poste SIRETs: judged by their digit sum
    assert not HARNESS_REFERENCES[icd](wrong), f"{icd}:{wrong}"
