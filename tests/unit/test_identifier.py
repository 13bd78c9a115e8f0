"""ParticipantIdentifier: the general form, case-insensitive equality, the scheme rule."""

from __future__ import annotations

import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fourcorner.domain.errors import InvalidIdentifier
from fourcorner.domain.identifier import (
    PARTICIPANT_SCHEME,
    ParticipantIdentifier,
    SchemeRule,
    code_list_patterns,
    local_part_problem,
)

LOCAL_ALPHABET = string.ascii_letters + string.digits + "-._~"

icds = st.text("0123456789", min_size=4, max_size=4)
locals_ = st.text(LOCAL_ALPHABET, min_size=1, max_size=130)


def test_parse_reads_icd_and_local_part():
    pid = ParticipantIdentifier.parse("0088:1548079098355")
    assert (pid.icd, pid.local) == ("0088", "1548079098355")
    assert str(pid) == "0088:1548079098355"


def test_parse_accepts_the_scheme_prefix():
    pid = ParticipantIdentifier.parse("iso6523-actorid-upis::9925:BE0899965307")
    assert pid == ParticipantIdentifier("9925", "BE0899965307")
    assert pid.uri == "iso6523-actorid-upis::9925:be0899965307"


def test_comparison_ignores_case_and_canonical_is_lower_case():
    upper = ParticipantIdentifier.parse("9925:BE0899965307")
    lower = ParticipantIdentifier.parse("9925:be0899965307")
    assert upper == lower
    assert hash(upper) == hash(lower)
    assert len({upper, lower}) == 1
    assert upper.canonical == lower.canonical == "9925:be0899965307"
    assert str(upper) == "9925:BE0899965307"  # shown as given


@given(icd=icds, local=locals_)
def test_every_well_formed_value_parses_and_round_trips(icd, local):
    pid = ParticipantIdentifier.parse(f"{icd}:{local}")
    assert ParticipantIdentifier.parse(str(pid)) == pid
    assert ParticipantIdentifier.parse(pid.canonical) == pid
    assert ParticipantIdentifier.parse(pid.uri) == pid
    assert pid.canonical == pid.canonical.lower()
    assert len(str(pid)) <= 135


@given(text=st.text(max_size=150))
def test_anything_else_is_refused_with_invalid_identifier(text):
    try:
        pid = ParticipantIdentifier.parse(text)
    except InvalidIdentifier as e:
        assert e.value == text
        assert e.rule
    else:
        assert text.removeprefix(f"{PARTICIPANT_SCHEME}::") == str(pid)


@given(icd=icds, local=locals_, at=st.integers(min_value=0), bad=st.sampled_from(" /:@#é\n\t,;+"))
def test_a_forbidden_character_is_refused(icd, local, at, bad):
    i = at % (len(local) + 1)
    with pytest.raises(InvalidIdentifier, match="may contain only"):
        ParticipantIdentifier.parse(f"{icd}:{local[:i]}{bad}{local[i:]}")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("1548079098355", "a participant identifier has the form <4-digit ICD>:<identifier>"),
        ("088:1548079098355", "must be a 4-digit ICD such as 0088, not '088'"),
        ("00881:1548079098355", "must be a 4-digit ICD such as 0088, not '00881'"),
        ("GLN:1548079098355", "must be a 4-digit ICD such as 0088, not 'GLN'"),
        ("0088:", "must be 1 to 130 characters, not 0"),
        ("0088:" + "1" * 131, "must be 1 to 130 characters, not 131"),
        ("0088:1548 079098355", "may contain only A-Z a-z 0-9 - . _ ~, not ' '"),
        ("ISO6523-ACTORID-UPIS::0088:1548079098355", "4-digit ICD"),  # the scheme is case-sensitive
        ("iso6523-actorid-upis:0088:1548079098355", "4-digit ICD"),
    ],
)
def test_malformed_values_say_why(text, reason):
    with pytest.raises(InvalidIdentifier) as caught:
        ParticipantIdentifier.parse(text, field="businessCard.participant")
    assert reason in caught.value.rule
    assert caught.value.field == "businessCard.participant"
    assert caught.value.value == text


def test_the_longest_local_part_is_130_characters():
    pid = ParticipantIdentifier.parse("0088:" + "a" * 130)
    assert len(str(pid)) == 135


def test_the_constructor_checks_the_form_too():
    with pytest.raises(InvalidIdentifier, match="4-digit ICD"):
        ParticipantIdentifier("88", "x")
    with pytest.raises(InvalidIdentifier, match="may contain only"):
        ParticipantIdentifier("0088", "a b")


def test_local_part_problem():
    assert local_part_problem("BE0899965307") is None
    assert local_part_problem("") is not None
    assert local_part_problem("a/b") is not None


def test_code_list_patterns_read_every_regex_line():
    rules = (
        "RegEx: [0-9]{11} (company identification)\nCheck digit: Luhn\n\nRegEx: [A-Z]{6}[0-9]{2}"
    )
    assert code_list_patterns(rules) == ["[0-9]{11}", "[A-Z]{6}[0-9]{2}"]
    assert code_list_patterns("Character Repertoire: A to Z") == []
    assert code_list_patterns(None) == []


def test_scheme_rule_matches_the_whole_value_ignoring_case():
    rule = SchemeRule.of("9999", "RegEx: DK[0-9]{8}")
    assert rule.problem("DK12345678") is None
    assert rule.problem("dk12345678") is None
    assert rule.problem("XDK12345678") == "9999: the identifier must match the pattern DK[0-9]{8}"
    assert rule.problem("DK123456789") is not None


def test_scheme_rule_takes_several_patterns_as_alternatives():
    rule = SchemeRule.of("9999", "RegEx: [0-9]{3}\nRegEx: [A-Z]{2}")
    assert rule.problem("123") is None
    assert rule.problem("AB") is None
    assert rule.problem("1AB") == "9999: the identifier must match the pattern [0-9]{3} or [A-Z]{2}"


def test_scheme_rule_applies_the_check_digits_after_the_pattern():
    rule = SchemeRule.of("0088", "RegEx: [0-9]{13}")
    assert rule.problem("1548079098355") is None
    assert rule.problem("1548079098356") == "0088: check digit is 6, expected 5"
    assert rule.problem("15480790983") == "0088: the identifier must match the pattern [0-9]{13}"


def test_the_kvk_rule_replaces_the_code_lists_17_digit_pattern():
    rule = SchemeRule.of("0106", "RegEx: [0-9]{17}\nCheck Digits: mod97")
    assert rule.pattern is None
    assert rule.problem("12345678") is None
    assert rule.problem("12345678901234567") == "0106: a KvK number is 8 digits"


def test_a_scheme_without_rules_accepts_any_local_part():
    rule = SchemeRule.of("9930", None)
    assert rule.problem("DE123456789") is None
