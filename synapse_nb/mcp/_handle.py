"""The MCP server's vault: a :class:`~synapse_nb.vault.VaultSession` acting as the agent, and what only the MCP adds.

The session opens the vault on first use (so a bad path is a tool error, not a crash), never creates it for a read,
creates it for the first write (and takes it back when that write is refused), falls back to this machine's stale
copy of an unreachable team vault for recall and search, and reads ``SYNAPSE_READONLY``. The MCP renders its
notices: a new or taken-back vault as one stderr line (stdout carries the protocol), a borrowed vault in every
answer; a read-only server refuses every writing tool in one line before it touches the vault.

>>> h = Handle("/tmp/project", "default", None, None, readonly=True)   # doctest: +SKIP
>>> h.read().actor                                                      # doctest: +SKIP
'agent'
"""

from __future__ import annotations

import hashlib
import secrets
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from synapse_nb.errors import OfflineError, StoreError, SynapseError, VaultNotFoundError
from synapse_nb.models import MAX_SHORT
from synapse_nb.vault import Notice, ReadableVault, Vault, VaultSession

if TYPE_CHECKING:
    from synapse_nb.offline import OfflineVault

__all__ = ["DEFAULT_ANSWER_TOKENS", "Handle"]

#: The default answer budget in tokens (the vault's ``mcp_answer_tokens`` setting overrides it).
DEFAULT_ANSWER_TOKENS = 8000


def _say(notice: Notice) -> None:
    """A vault notice on stderr (stdout carries the protocol), once."""
    print(notice.line("synapse-nb"), file=sys.stderr, flush=True)


class Handle:
    """The agent's vault for the tools: a :class:`~synapse_nb.vault.VaultSession` (``session``) and the MCP's
    read-only refusal, answer budget and borrowed field.

    ``vault`` (an open vault to serve) is used through ``as_agent()``. With ``readonly`` the vault is opened
    read-only and never created; every writing tool is refused with one line before it touches the vault.

    A ``recall``'s ``session_id`` is this server's own (:meth:`session_key`): every MCP server process names the
    same ids ("session-1", "main"), chosen by its model, and sharing them let one agent use up another's session.
    """

    def __init__(self, path: str | Path | None, mind: str, vault: Vault | None,
                 clock: Callable[[], datetime] | None, *, readonly: bool = False) -> None:
        self.readonly = readonly
        self.mind = mind
        self._path = path
        #: vaults a write tool created, said once the tool is over: a refused first write's vault is taken back and
        #: says nothing (the CLI's rule, review 78: "created", the error, "removed" for a vault nobody saw)
        self._unsaid: list[Notice] = []
        self.session = VaultSession(path, mind=mind, actor="agent", clock=clock, readonly=readonly, offline=True,
                                    vault=vault.as_agent() if vault is not None else None, on_notice=self._notice,
                                    surface="mcp")
        #: this server's sessions are its own (review 71): a random prefix no client names or reads back
        self.nonce = secrets.token_hex(8)

    def session_key(self, session_id: str | None) -> str | None:
        """The session a ``recall(session_id=...)`` of this server is kept under: ``<nonce>:<id>`` (the vault stores
        it as ``agent:mcp:<nonce>:<id>``, ``recall.delta.stored_session``), so no other MCP server process, another
        agent's conversation, shares its delta; a restarted server gives everything again. An id the recall refuses
        (empty, not printable) is passed as it is, refused in the recall's words; one too long with the prefix is
        kept by its digest.

        >>> h = Handle("/tmp/project", "default", None, None)
        >>> h.session_key("s1") == f"{h.nonce}:s1", h.session_key("s1") == Handle("/tmp/project", "default", None,
        ...                                                                        None).session_key("s1")
        (True, False)
        """
        if session_id is None or not session_id.strip() or not session_id.isprintable():
            return session_id
        key = f"{self.nonce}:{session_id}"
        if len(key) > MAX_SHORT:  # the recall takes at most 200 characters
            key = f"{self.nonce}:#{hashlib.sha256(session_id.encode('utf-8', 'surrogatepass')).hexdigest()}"
        return key

    def _notice(self, notice: Notice) -> None:
        if notice.kind == "created":
            self._unsaid.append(notice)
        elif notice.kind == "removed":
            held = [n for n in self._unsaid if n.path == notice.path]
            for n in held:
                self._unsaid.remove(n)
            if not held:  # a vault said before, taken back now
                _say(notice)

    def _say_created(self) -> None:
        while self._unsaid:
            _say(self._unsaid.pop(0))

    def read(self) -> Vault:
        """The vault for a read tool (never created; a stale copy is an OfflineError)."""
        return self.session.read()

    def new_project(self) -> Path | None:
        """Where the vault will be when this project has none yet (a new project: the reading tools answer "nothing
        stored yet" as a normal result, review 93), else None (the vault opens, or was open). Never creates one. No
        vault because the folder named does not exist stays the error it is: a typo must never read as an empty
        vault."""
        try:
            self.session.read_or_stale()
        except VaultNotFoundError as exc:
            from synapse_nb.vault.locate import find_vault_dir

            try:
                return find_vault_dir(self._path)[0]
            except SynapseError:
                raise exc from None
        return None

    def read_or_stale(self) -> ReadableVault:
        """The vault for recall and search: a team vault whose server cannot be reached is this machine's stale copy
        (``offline``: answers marked STALE); the server is tried again on the next call."""
        return self.session.read_or_stale()

    def write(self) -> Vault:
        """The vault for a write tool, created inside an existing folder only (refused first when read-only)."""
        self.refuse_if_readonly()
        v = self.session.write()
        self._say_created()
        return v

    @contextmanager
    def writing(self) -> Iterator[Vault]:
        """The vault for a write tool; a first write that is refused takes back the vault it has just created (as
        the CLI does), so a bad argument leaves no empty vault behind."""
        self.refuse_if_readonly()
        try:
            with self.session.writing() as v:
                yield v
        finally:
            self._say_created()

    def stale_copy(self, exc: OfflineError) -> OfflineVault:
        """This machine's stale copy once the server of the open team vault went away (``exc`` otherwise)."""
        return self.session.stale_copy(exc)

    def refuse_if_readonly(self, what: str = "this tool writes to the vault") -> None:
        """A one-line :class:`StoreError` when the server was started read-only."""
        if self.readonly:
            raise StoreError(f"the server is read-only (SYNAPSE_READONLY=1 in its environment): {what}, so it was "
                             "refused and nothing was written; the read tools still answer")

    def borrowed(self) -> dict[str, Any] | None:
        """Why the open vault is borrowed (it heads every answer), or None."""
        notice = self.session.notice("borrowed")
        return dict(notice.data) if notice is not None else None

    def answer_tokens(self) -> int:
        """The answer budget: the open vault's ``mcp_answer_tokens`` setting, else :data:`DEFAULT_ANSWER_TOKENS`."""
        v = self.session.current
        if v is None or v.offline:
            return DEFAULT_ANSWER_TOKENS
        try:
            return int(v.settings.get("mcp_answer_tokens"))
        except SynapseError:
            return DEFAULT_ANSWER_TOKENS
