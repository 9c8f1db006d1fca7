"""The MCP server's vault handle: opened on first use, as the agent, read-only when the environment says so.

>>> h = Handle("/tmp/project", "default", None, None, readonly=True)   # doctest: +SKIP
>>> h.get().actor                                                       # doctest: +SKIP
'agent'
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from synapse_nb.errors import OfflineError, StoreError, SynapseError
from synapse_nb.vault import Vault, open_vault

__all__ = ["DEFAULT_ANSWER_TOKENS", "Handle"]

#: The default answer budget in tokens (the vault's ``mcp_answer_tokens`` setting overrides it).
DEFAULT_ANSWER_TOKENS = 8000


class Handle:
    """The agent's vault handle, opened on first use (so a bad path is a tool error, not a crash).

    With ``readonly`` the vault is opened read-only and never created; every writing tool is refused with one line
    before it touches the vault.
    """

    def __init__(self, path: str | Path | None, mind: str, vault: Vault | None,
                 clock: Callable[[], datetime] | None, *, readonly: bool = False) -> None:
        self._path = path
        self._mind = mind
        self._clock = clock
        self._vault = vault.as_agent() if vault is not None else None
        self._given = vault is not None
        self.readonly = readonly

    def get(self, *, write: bool = False) -> Vault:
        """The vault; read tools never create one, write tools create it inside an existing folder only.

        A team vault whose server cannot be reached is this machine's stale copy (``offline``: recall and search
        answer marked STALE, everything else is an OfflineError); the server is tried again on the next call."""
        if write:
            self.refuse_if_readonly()
        if self._vault is not None and self._vault.offline:
            self._vault = None  # never stay offline once the server is back
        if self._vault is None:
            self._vault = open_vault(self._path, mind=self._mind, actor="agent", clock=self._clock,
                                     create=write and not self.readonly, readonly=self.readonly, offline=True)
            if self._vault.created:  # stdout carries the protocol: say it on stderr, once
                print(f"synapse-nb: created a new vault at {self._vault.path}", file=sys.stderr, flush=True)
        return self._vault

    def refuse_if_readonly(self, what: str = "this tool writes to the vault") -> None:
        """A one-line :class:`StoreError` when the server was started read-only."""
        if self.readonly:
            raise StoreError(f"the server is read-only (SYNAPSE_READONLY=1 in its environment): {what}, so it was "
                             "refused and nothing was written; the read tools still answer")

    def stale_copy(self, exc: OfflineError) -> Any:
        """This machine's stale copy once the server of the open team vault went away (``exc``, raised by a read
        the copy can answer); ``exc`` again when the server answers or there is no copy. The live handle is
        closed, so the next call tries the server again."""
        if self._given or self._vault is None:
            raise exc
        self._vault.close()
        self._vault = None
        v = self.get()
        if not v.offline:
            raise exc
        return v

    def borrowed(self) -> dict[str, Any] | None:
        """Why the open vault is borrowed (it heads every answer), or None."""
        v = self._vault
        b = None if v is None or v.offline else v.borrowed  # a team vault is never file-borrowed
        return b.to_dict() if b is not None else None

    def answer_tokens(self) -> int:
        """The answer budget: the open vault's ``mcp_answer_tokens`` setting, else :data:`DEFAULT_ANSWER_TOKENS`."""
        v = self._vault
        if v is None or v.offline:
            return DEFAULT_ANSWER_TOKENS
        try:
            return int(v.settings.get("mcp_answer_tokens"))
        except SynapseError:
            return DEFAULT_ANSWER_TOKENS

    @contextmanager
    def writing(self) -> Iterator[Vault]:
        """The vault for a write tool. A first write that is refused takes back the vault it has just created
        (as the CLI does), so a bad argument leaves no empty vault behind."""
        fresh = self._vault is None
        v = self.get(write=True)
        try:
            yield v
        except SynapseError:
            if fresh and not v.offline and v.discard_if_unused():
                self._vault = None
                print(f"synapse-nb: removed the vault it had just created at {v.path} (nothing was written)",
                      file=sys.stderr, flush=True)
            raise
