"""The typed public API (review 78): ``mypy --strict`` catches a user's typo or wrong type in a call, and at run time
the same mistakes are :class:`~synapse_nb.errors.ValidationError`\\ s saying what the call accepts."""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import synapse_nb as syn

ROOT = Path(__file__).resolve().parents[1]

#: A user's script: the first calls are right (no error may be reported on them), each later line holds one mistake.
USER_SCRIPT = '''\
import synapse_nb as syn
from synapse_nb import Checkpoint, Memory


def main(path: str) -> None:
    v = syn.open_vault(path)
    m: Memory = v.remember("project", "k", "v", tags=["a"], priority="high", expires="7d")
    c: Checkpoint = v.checkpoint("x", files=["a.py"], next_step="test", blockers="none")
    print(m, c, v.decide("d", rationale="r", tags="a,b"), v.checkpoints.latest(), v.lessons.in_force("main"))
    print(v.recall("q", files="a.py"), v.memories.update(m.id, tags={"b"}, expires=None))
    v.remember("project", "k", "v", prority="high")  # MISTAKE prority
    v.checkpoint("x", files=3)  # MISTAKE files
    v.checkpoint("x", blockers=3)  # MISTAKE blockers
    v.decide("x", tags=3)  # MISTAKE tags
    v.recall("q", files=3)  # MISTAKE recall files
    v.memories.update("id", tags=3)  # MISTAKE update tags
    v.checkpoints.latest(branch=3)  # MISTAKE latest branch
    v.lessons.create("s", files=3)  # MISTAKE lesson files
    v.memories.get("id", as_of=3)  # MISTAKE as_of
    syn.open_vault(5)  # MISTAKE open_vault
'''


def test_mypy_strict_reports_each_mistake_in_a_users_script(tmp_path: Path) -> None:
    script = tmp_path / "user.py"
    script.write_text(USER_SCRIPT, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    # a cold run over the package's imports takes about 15 s; --follow-imports=silent reads them for their types
    # and reports nothing of theirs
    out = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-error-summary",
                          "--cache-dir", str(tmp_path / "cache"), str(script)],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    errors = {int(n) for n in re.findall(r"user\.py:(\d+): error:", out.stdout)}
    lines = USER_SCRIPT.splitlines()
    mistakes = {i for i, line in enumerate(lines, 1) if "# MISTAKE" in line}
    assert errors == mistakes, out.stdout + out.stderr
    assert 'Unexpected keyword argument "prority"' in out.stdout
    assert '"int"; expected "str | Sequence[str] | None"' in out.stdout


def test_a_wrong_call_is_a_validation_error_that_names_what_it_takes(vault: syn.Vault) -> None:
    with pytest.raises(syn.ValidationError, match=r"unexpected keyword argument 'prority' \(did you mean "
                                                  r"'priority'\?\); it takes category, key, content, tags=, "
                                                  r"priority="):
        vault.remember("project", "k", "v", prority="high")  # type: ignore[call-arg]  # the mistake under test
    with pytest.raises(syn.ValidationError, match=r"list\(\): got an unexpected keyword argument 'limt'.*limit="):
        vault.checkpoints.list(limt=3)  # type: ignore[call-arg]  # the mistake under test
    with pytest.raises(syn.ValidationError, match=r"search.*'lmit'.*did you mean 'limit'"):
        vault.memories.search("x", lmit=3)  # type: ignore[call-arg]  # the mistake under test
    with pytest.raises(syn.ValidationError, match="missing a required argument: 'value'"):
        vault.settings.set("recall_top_k")  # type: ignore[call-arg]  # the mistake under test
    with pytest.raises(syn.ValidationError, match=r"open_vault.*'mnd'.*did you mean 'mind'"):
        syn.open_vault(vault.path, mnd="x")  # type: ignore[call-overload]  # the mistake under test
    with pytest.raises(syn.ValidationError, match=r"path must be a folder \(a str or pathlib\.Path\) or a team vault"):
        syn.open_vault(5)  # type: ignore[call-overload]  # the mistake under test
    with pytest.raises(syn.ValidationError, match="blockers must be text or a list of texts, got int"):
        vault.checkpoint("x", blockers=3)  # type: ignore[arg-type]  # the mistake under test
    from synapse_nb._calls import checked_call

    def boom(x: int) -> None:
        raise TypeError("from inside")

    with pytest.raises(TypeError, match="from inside") as caught:  # a TypeError inside is not a wrong call
        checked_call(boom)(1)
    assert not isinstance(caught.value, syn.SynapseError)


def test_the_shortcuts_take_their_managers_parameters(vault: syn.Vault) -> None:
    """One signature, written on the manager: ``help(v.remember)`` shows the parameters, and a list of blockers
    (any sequence) is joined as before."""
    assert inspect.signature(vault.remember) == inspect.signature(vault.memories.remember)
    assert inspect.signature(vault.checkpoint) == inspect.signature(vault.checkpoints.create)
    assert inspect.signature(vault.decide) == inspect.signature(vault.decisions.create)
    assert vault.checkpoint("x", blockers=("a", "b")).blockers == "a; b"
    assert vault.remember("project", "k", "v", priority="high").priority == "high"
