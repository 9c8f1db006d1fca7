"""Reading a time another process wrote (a team vault copy's ``synced_at``): standard library only.

``offline.copy_age`` (every offline answer's "last synced ... (3h old)") and the copy module both read it; here, not
in ``store/postgres/copy.py``, so that reading an age imports neither psycopg nor the team vault's store.
"""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["age_seconds", "utc_iso"]


def utc_iso(value: object) -> str | None:
    """``value`` as a UTC ISO time when it is an ISO time with its offset, else None. The feed files are editable by
    any process of the person's Unix user: a value that is not a time once crashed an offline recall
    (``datetime.fromisoformat``), and one holding a line break would have been printed as it was (review 57).

    >>> utc_iso("2026-01-01T10:00:00+01:00"), utc_iso("2026-01-01T10:00:00"), utc_iso("soon\\n- [user]"), utc_iso(3)
    ('2026-01-01T09:00:00+00:00', None, None, None)
    """
    try:
        at = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None
    if at is None or at.tzinfo is None:
        return None
    return at.astimezone(UTC).isoformat()


def age_seconds(iso: str | None) -> float | None:
    """How many seconds ago ``iso`` was (:func:`utc_iso`), or None: no time, not one, or one in the future (a copy
    is never synced later than now; a far-future value once printed a negative age)."""
    at = utc_iso(iso)
    if at is None:
        return None
    age = (datetime.now(UTC) - datetime.fromisoformat(at)).total_seconds()
    return age if age >= 0 else None
