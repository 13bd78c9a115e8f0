"""How the sending worker names a failed post (``sending.failure_of``): every refusal maps to
one TXE entry, and it is retried exactly when the transport said trying again may help; a
busy receiver's refusal is told apart (TXE-2006); the detail a failure carries is cut, and
only it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from fourcorner.application.ports import LookupFailed, LookupProblem, Refused
from fourcorner.application.sending import LOOKUP_FAILURES, failure_of
from fourcorner.domain import send_failures as txe

refusals = st.builds(
    Refused,
    code=st.sampled_from(["EBMS:0004", "HTTP 503", "connection: ServerDisconnectedError"]),
    detail=st.text(max_size=10),
    retryable=st.booleans(),
    not_serviced=st.booleans(),
    bad_receipt=st.booleans(),
    busy=st.booleans(),
)


@given(refusals)
def test_a_refused_post_is_one_entry_of_the_catalogue(refused: Refused) -> None:
    failure = failure_of(refused)
    assert failure in txe.TXE_CATALOGUE
    if refused.not_serviced:
        assert failure is txe.NOT_SERVICED and not failure.retryable
    elif refused.bad_receipt:
        assert failure is txe.RECEIPT_INVALID and not failure.retryable
    elif refused.busy:  # HTTP 503 or 429: tried again, as RetryPolicy.after_busy says
        assert failure is txe.AP_BUSY and failure.retryable and failure.busy
    else:
        assert not failure.busy
        assert failure.retryable is refused.retryable
        unreachable = refused.retryable and refused.code.startswith("connection")
        assert (failure is txe.AP_UNREACHABLE) is unreachable


def test_a_lookup_is_retried_exactly_when_its_failure_may_pass() -> None:
    """An unreachable DNS or SMP, and a certificate whose revocation cannot be checked yet;
    every other lookup failure is for good."""
    assert set(LOOKUP_FAILURES) == set(LookupProblem)
    retried = {p for p, f in LOOKUP_FAILURES.items() if f.retryable}
    assert retried == {p for p in LookupProblem if not LookupFailed("", p).permanent}
    assert retried == {LookupProblem.UNREACHABLE, LookupProblem.REVOCATION_UNKNOWN}
    assert all(f in txe.TXE_CATALOGUE for f in LOOKUP_FAILURES.values())


# short details, and long ones about as long as a detail may be and longer
details = (
    st.text(max_size=20)
    | st.text(min_size=txe.DETAIL_LENGTH - 200, max_size=txe.DETAIL_LENGTH + 2)
    | st.text(min_size=txe.DETAIL_LENGTH + 1, max_size=3 * txe.DETAIL_LENGTH)
)


@given(
    st.sampled_from(txe.TXE_CATALOGUE),
    details,
    st.just("") | st.text(min_size=1, max_size=200),
)
def test_a_failures_detail_is_kept_whole_up_to_its_length_then_cut(
    failure: txe.TransportFailure, detail: str, lead: str
) -> None:
    """The detail (the receiver's words) is cut at ``DETAIL_LENGTH``, and only it: what this
    service says before it (``lead``: when a busy receiver's document is tried again) is kept
    whole, the detail in parentheses after it, its closing one kept too."""
    message = failure.error(detail, lead=lead).message
    assert message.startswith(f"{failure.title}: ")
    said = message.removeprefix(f"{failure.title}: ")
    if lead:
        assert said.startswith(f"{lead} (") and said.endswith(")")
        said = said.removeprefix(f"{lead} (").removesuffix(")")
    if len(detail) <= txe.DETAIL_LENGTH:
        assert said == detail
    else:
        assert said == detail[: txe.DETAIL_LENGTH] + "…"
    # bounded by the detail's length and the lead's own size
    wrapper = len(f"{failure.title}: {lead} ()") if lead else len(f"{failure.title}: ")
    assert len(message) <= wrapper + txe.DETAIL_LENGTH + 1
