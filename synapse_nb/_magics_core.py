"""The plain logic behind the notebook magics, testable without IPython.

Everything here takes and returns plain Python values: comma lists, a ``%%decision`` cell split into
decision and rationale, ``on``/``off`` switches, git's list of changed files, the auto-checkpoint
counter and the stable notebook session id. The magics in :mod:`synapse_nb.magics` only parse the
line, call these and the vault, and render; errors raised here are :class:`~synapse_nb.errors.ValidationError`
and become one-line ``UsageError`` messages at the magic edge.

Examples
--------
>>> split_list("a.py, b.py,,c.py")
['a.py', 'b.py', 'c.py']
>>> split_decision_cell("Use SQLite WAL mode\\nReaders never block writers.\\n")
('Use SQLite WAL mode', 'Readers never block writers.')
>>> auto = AutoCheckpoint(every=2)
>>> auto.enabled = True
>>> [auto.observe(success=True, changed=["a.py"]) for _ in range(3)]
[False, True, False]
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from synapse_nb.errors import ValidationError

__all__ = [
    "AutoCheckpoint",
    "default_session_id",
    "git_changed_files",
    "keep_recall_questions",
    "parse_switch",
    "split_decision_cell",
    "split_list",
    "split_options",
]


def split_list(text: str | None) -> list[str]:
    """Split ``"a, b,c"`` into ``["a", "b", "c"]`` (empty items dropped, order kept); ``None`` gives ``[]``."""
    if text is None:
        return []
    return [part.strip() for part in text.split(",") if part.strip()]


def split_options(argv: list[str], options: tuple[str, ...]) -> tuple[dict[str, str], list[str]]:
    """Pull ``--name value`` / ``--name=value`` for the given option names out of ``argv``; keep the rest in order.

    Anything else, including unknown ``--flags``, stays a word of the free text, so
    ``%remember procedure clean python clean.py --wave 2025 --tags data`` keeps ``--wave 2025`` in the
    content. After a lone ``--`` every word is text.

    >>> split_options(["k", "python", "x.py", "--wave", "1", "--tags=a,b", "--", "--tags"], ("--tags",))
    ({'--tags': 'a,b'}, ['k', 'python', 'x.py', '--wave', '1', '--tags'])
    """
    found: dict[str, str] = {}
    words: list[str] = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        i += 1
        if tok == "--":
            words.extend(argv[i:])
            break
        name, eq, value = tok.partition("=")
        if name in options:
            if not eq:
                if i >= len(argv):
                    raise ValidationError(f"{name} needs a value")
                value = argv[i]
                i += 1
            if name in found:
                raise ValidationError(f"{name} given twice")
            found[name] = value
            continue
        words.append(tok)
    return found, words


def split_decision_cell(body: str) -> tuple[str, str | None]:
    """Split a ``%%decision`` cell: the first non-blank line is the decision, the rest the rationale.

    Raises
    ------
    ValidationError
        When the cell has no text at all.
    """
    lines = body.splitlines()
    while lines and not lines[0].strip():
        lines.pop(0)
    if not lines:
        raise ValidationError("a %%decision cell needs the decision on its first line "
                              "(and the rationale, if any, on the following lines)")
    decision = lines[0].strip()
    rationale = "\n".join(lines[1:]).strip()
    return decision, (rationale or None)


def parse_switch(value: str) -> bool:
    """``"on"`` -> True, ``"off"`` -> False (case-insensitive); anything else is refused."""
    v = value.strip().lower()
    if v in ("on", "off"):
        return v == "on"
    raise ValidationError(f"expected 'on' or 'off', got {value!r}")


def git_changed_files(work_tree: str | Path, *, exclude: str | Path | None = None,
                      timeout: float = 5.0) -> list[str] | None:
    """Files git reports as changed in ``work_tree`` (``git status --porcelain``), sorted.

    Paths inside ``exclude`` (the vault folder, which lives in the work tree) are left out, so the
    vault's own writes never count as a change. Returns ``None`` when git cannot answer (not a
    repository, git missing, timeout).
    """
    try:
        proc = subprocess.run(
            ["git", "-C", str(work_tree), "status", "--porcelain", "-z", "--untracked-files=all"],
            capture_output=True, timeout=timeout, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    entries = proc.stdout.decode("utf-8", "replace").split("\0")
    skip_prefix: str | None = None
    if exclude is not None:
        try:
            rel = Path(exclude).resolve().relative_to(Path(work_tree).resolve())
            skip_prefix = rel.as_posix().rstrip("/") + "/"
        except ValueError:
            skip_prefix = None
    out: set[str] = set()
    i = 0
    while i < len(entries):
        entry = entries[i]
        i += 1
        if len(entry) < 4:
            continue
        code, path = entry[:2], entry[3:]
        if code[0] in "RC":  # a rename/copy is followed by its source path
            i += 1
        if skip_prefix and (path + "/").startswith(skip_prefix):
            continue
        out.add(path)
    return sorted(out)


@dataclass
class AutoCheckpoint:
    """Counts executed cells that changed something; says when an automatic checkpoint is due.

    A cell counts when it ran without error and, inside git, git reports changed files (outside git
    every successful cell counts). Every ``every`` counted cells, :meth:`observe` returns True and
    the count starts again.
    """

    every: int = 10
    enabled: bool = False
    count: int = 0
    cells_seen: int = 0
    last_files: list[str] = field(default_factory=list)

    def set_every(self, n: int) -> None:
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 100_000:
            raise ValidationError(f"--every must be a whole number of cells from 1 to 100000, got {n!r}")
        self.every = n

    def observe(self, *, success: bool, changed: list[str] | None) -> bool:
        """Record one executed cell; True when a checkpoint is due now.

        ``changed`` is git's list of changed files, or ``None`` outside git.
        """
        if not self.enabled:
            return False
        self.cells_seen += 1
        if not success or (changed is not None and not changed):
            return False
        self.count += 1
        self.last_files = list(changed or [])
        if self.count >= self.every:
            self.count = 0
            return True
        return False

    def describe(self) -> str:
        if not self.enabled:
            return "auto checkpoints: off"
        cells = "cell that changes" if self.every == 1 else f"{self.every} cells that change"
        return (f"auto checkpoints: on, every {cells} something "
                f"({self.count} counted since the last one)")


def default_session_id() -> str:
    """A session id stable for this kernel: derived from the Jupyter connection file when there is one.

    ``nb-`` and 12 hex digits. Outside a Jupyter kernel it is random (the magics make it once and keep it).
    """
    if "ipykernel" in sys.modules:
        try:
            from ipykernel import get_connection_file

            path = get_connection_file()
            return "nb-" + hashlib.sha1(str(path).encode("utf-8")).hexdigest()[:12]
        except Exception:  # no kernel app running (plain IPython with ipykernel imported)
            pass
    return f"nb-{uuid.uuid4().hex[:12]}"


_RECALL_QUESTION = re.compile(r"^(?P<lead>\s*(?:[A-Za-z_][A-Za-z0-9_]*\s*=\s*)?)%recall[ \t]+(?P<args>\S.*?\?)\s*$")


def keep_recall_questions(lines: list[str]) -> list[str]:
    r"""IPython input transformer: keep ``%recall how do we deploy?`` a recall, not a help request.

    IPython reads a line ending in ``?`` as "show help for the last word". A ``%recall`` line (or
    ``r = %recall ...``) with a query is rewritten to the explicit magic call; ``%recall?`` alone
    still shows the help.

    >>> keep_recall_questions(["r = %recall how do we deploy?\n"])
    ["r = get_ipython().run_line_magic('recall', 'how do we deploy?')\n"]
    >>> keep_recall_questions(["%recall?\n", "x = 1?\n"])
    ['%recall?\n', 'x = 1?\n']
    """
    out = []
    for line in lines:
        m = _RECALL_QUESTION.match(line)
        if m and m.group("args").strip("?").strip():
            end = "\n" if line.endswith("\n") else ""
            line = f"{m.group('lead')}get_ipython().run_line_magic('recall', {m.group('args')!r}){end}"
        out.append(line)
    return out
