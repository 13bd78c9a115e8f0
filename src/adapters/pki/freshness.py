"""What the revocation check (``adapters.pki.revocation``) keeps of a revocation list or an
OCSP answer, by time: when it is fetched again, ahead of its nextUpdate (``refresh_at``), and
when it no longer counts (``lapsed``); and ``Unusable``, what either is when it cannot be
fetched or used."""

from __future__ import annotations

from datetime import datetime, timedelta

import attrs

CLOCK_SKEW = timedelta(minutes=5)  # a list or answer issued this little in the future is taken
REFRESH_EVERY = timedelta(hours=1)
"""A kept list or answer is fetched again this long after it was fetched (or halfway to its
nextUpdate when that is sooner): a CA publishes new ones before the old ones' nextUpdate."""
REFRESH_LEAST = timedelta(minutes=5)
"""A kept list or answer is never fetched again sooner than this after it was fetched,
whatever its nextUpdate says: past it (the CA is late publishing the next one) halfway there
is now, and every check would fetch it again."""


class Unusable(Exception):
    """A revocation list or OCSP answer that cannot be fetched or used; the message says
    why."""


@attrs.frozen
class Fresh:
    """A revocation list or OCSP answer that verified, by time."""

    this_update: datetime
    next_update: datetime
    fetched_at: datetime

    @property
    def refresh_at(self) -> datetime:
        """When to fetch it again: ``REFRESH_EVERY`` after it was fetched, or halfway to its
        nextUpdate when that is sooner, but no sooner than ``REFRESH_LEAST``."""
        halfway = max(self.next_update - self.fetched_at, timedelta(0)) / 2
        return self.fetched_at + max(REFRESH_LEAST, min(REFRESH_EVERY, halfway))

    def lapsed(self, now: datetime, grace: timedelta) -> bool:
        """Whether it is past its nextUpdate by ``grace`` or more at ``now``, and no longer
        counts (a nextUpdate near the end of time never lapses)."""
        try:
            return now >= self.next_update + grace
        except OverflowError:
            return False

    def older_than(self, kept: Fresh) -> bool:
        """Whether it was issued before ``kept``, the one it would replace (an old copy,
        maybe replayed, does not)."""
        return self.this_update < kept.this_update

    def logged(self) -> dict[str, object]:
        """What the log line of its fetch says of it."""
        return {}
