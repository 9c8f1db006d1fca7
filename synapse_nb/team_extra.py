"""Whether this install can reach a team vault: :func:`require_psycopg` (standard library only until it is called).

A team vault (PostgreSQL) needs psycopg, which comes with the ``[team]`` extra; a wheel installed without it has
every other command. Every way to a team vault asks here first, so the answer is one line naming the extra, never a
``ModuleNotFoundError`` from deep inside (review 78: ``team init``, ``team status``, ``team grant``, ``team
search-local`` and ``team dev-server`` said ``unexpected error (ModuleNotFoundError): No module named 'psycopg'``).
"""

from __future__ import annotations

from synapse_nb.errors import StoreError

__all__ = ["TEAM_EXTRA", "require_psycopg"]

#: how to install what a team vault needs
TEAM_EXTRA = "pip install 'synapse_nb[team]'"


def require_psycopg() -> None:
    """Raise :class:`~synapse_nb.errors.StoreError` (what is missing, and :data:`TEAM_EXTRA`) when psycopg (or the
    libpq it needs) cannot be imported here; return when it can."""
    try:
        import psycopg  # noqa: F401  (imported to be checked)
    except ImportError as exc:
        raise StoreError(f"a team vault needs psycopg ({exc}); install it with: {TEAM_EXTRA}") from exc
