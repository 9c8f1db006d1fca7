"""psycopg's errors as the package's :class:`~synapse_nb.errors.SynapseError` tree, with a message saying what
happened (a refused value, a conflict, an unreachable server)."""

from __future__ import annotations

import psycopg
from psycopg import errors as pgerr
from psycopg_pool import PoolTimeout

from synapse_nb.errors import (
    BusyError,
    CommitUnknownError,
    ConflictError,
    NotFoundError,
    OfflineError,
    PermissionDeniedError,
    QuotaExceededError,
    StoreError,
    SynapseError,
    ValidationError,
)

__all__ = ["OFFLINE_HINT", "map_error"]


def map_error(exc: BaseException, *, committing: bool = False) -> SynapseError:
    """A psycopg error as the package's error tree, with a message saying what happened."""
    diag = getattr(exc, "diag", None)
    msg = (diag.message_primary if diag is not None and diag.message_primary else str(exc)).strip()
    msg = " ".join(msg.split("\n")[0].split())  # libpq's connection errors span several lines
    hint = f" ({diag.message_hint})" if diag is not None and diag.message_hint else ""
    if isinstance(exc, pgerr.LockNotAvailable):
        from synapse_nb.store.postgres.migrate import IDLE_IN_TRANSACTION_TIMEOUT, LOCK_TIMEOUT

        return BusyError(f"another client held the team vault's write lock for {LOCK_TIMEOUT} (lock_timeout), so "
                         "nothing was written; try again (the server ends a client's transaction left idle for "
                         f"{IDLE_IN_TRANSACTION_TIMEOUT}; `synapse-nb team status` shows who is connected)")
    if isinstance(exc, pgerr.ConfigurationLimitExceeded):  # migration 12: a quota a human set, held by the server
        return QuotaExceededError(f"agent write refused by the team vault: {msg.removeprefix('synapse: ')}{hint}")
    if isinstance(exc, pgerr.InsufficientPrivilege):
        return PermissionDeniedError(f"the team vault refused: {msg}{hint}")
    if isinstance(exc, pgerr.ObjectNotInPrerequisiteState | pgerr.UniqueViolation | pgerr.ExclusionViolation):
        return ConflictError(f"{msg}{hint}")
    if isinstance(exc, pgerr.NoDataFound):
        return NotFoundError(msg)
    if isinstance(exc, pgerr.CheckViolation | pgerr.NotNullViolation | pgerr.InvalidParameterValue
                  | pgerr.InvalidTextRepresentation | pgerr.StringDataRightTruncation | pgerr.UntranslatableCharacter
                  | pgerr.CharacterNotInRepertoire):
        return ValidationError(f"the team vault refused a value: {msg}{hint}")
    if isinstance(exc, psycopg.OperationalError | PoolTimeout):
        if committing:
            return CommitUnknownError(
                f"the team vault server went away while committing ({msg}) and could not be asked whether the commit "
                "happened; once the server is back, make the same call again on this machine (the same command, or "
                "the same method with the same arguments): it asks the server first and returns what was written "
                "instead of writing it twice")
        return OfflineError(f"the team vault server is unreachable or went away ({msg}); nothing was written; "
                          "the next call reconnects")
    return StoreError(f"the team vault failed: {msg}{hint}")


#: What an unreachable server means for this machine, in every message that says so.
OFFLINE_HINT = ("this machine is offline from the team vault, so it cannot write (no local fork is ever made); "
                "reads (`synapse-nb recall`, `synapse-nb memory search`, open_vault(url, offline=True)) answer from "
                "this machine's stale copy; check the URL, the network and the server")
