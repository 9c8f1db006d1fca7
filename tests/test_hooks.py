"""Git hooks: install/uninstall (synapse_nb.gitscope.githook_install) and the hook process
(synapse_nb.gitscope.githook)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from synapse_nb.errors import ConflictError, GitError
from synapse_nb.gitscope import find_repo, install_hooks, uninstall_hooks
from synapse_nb.gitscope.githook import LEGACY_NOTE
from synapse_nb.gitscope.githook import main as hook_main
from synapse_nb.gitscope.githook_install import CHAIN_SUFFIX, HOOK_NAMES, hooks_dir, is_managed
from synapse_nb.gitscope.testing import ScratchRepo

FAKE = '''
"""The hook processes of these tests: the vault's revert scan replaced by a recording fake."""
import json, os, sys, time

if os.environ.get("FAKE_OUT"):
    from synapse_nb.kinds.lessons import Lessons

    def record(self, *args, **kwargs):
        mode = os.environ.get("FAKE_MODE", "ok")
        with open(os.environ["FAKE_OUT"], "a") as fh:
            fh.write(json.dumps([os.getcwd(), sys.argv[1:], sorted(k for k in os.environ if k.startswith("GIT_"))])
                     + "\\n")
        if mode == "raise":
            raise RuntimeError("scan exploded")
        if mode == "sleep":
            time.sleep(30)
        if mode == "gate":  # until the test opens the gate (a file), 60 s at most
            end = time.monotonic() + 60
            while not os.path.exists(os.environ["FAKE_GATE"]) and time.monotonic() < end:
                time.sleep(0.02)
        if mode == "exit":
            sys.exit(3)
        from synapse_nb.models import RecordList

        return RecordList()

    Lessons.scan = record
'''


@pytest.fixture()
def repo(tmp_path: Path) -> ScratchRepo:
    r = ScratchRepo.init(tmp_path / "repo")
    r.commit_file("a.txt", "a\n", "Add a")
    return r


@pytest.fixture()
def fake_scan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Record the hook's scan instead of running it: the hook runs in a child process started by git, so a
    ``sitecustomize`` module on its PYTHONPATH replaces ``Lessons.scan`` there (the hook itself is the real one:
    it finds the vault, takes its lock, opens it through a VaultSession and logs)."""
    mod_dir = tmp_path / "fakemod"
    mod_dir.mkdir()
    (mod_dir / "sitecustomize.py").write_text(FAKE)
    out = tmp_path / "calls.jsonl"
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(mod_dir), os.environ.get("PYTHONPATH", "")]).rstrip(":"))
    monkeypatch.setenv("FAKE_OUT", str(out))
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    return out


def _vault(root: Path) -> Path:
    """A real (empty) vault in ``root``, as the hook expects to find one."""
    from synapse_nb.vault import open_vault

    v = open_vault(root)
    v.close()
    return v.path


def _snapshot(directory: Path) -> dict[str, tuple[bytes, int, int]]:
    return {
        p.name: (p.read_bytes(), p.stat().st_mode, p.stat().st_mtime_ns)
        for p in sorted(directory.iterdir())
        if p.is_file()
    }


def test_install_writes_executable_managed_hooks_and_is_idempotent(repo: ScratchRepo) -> None:
    info = find_repo(repo.root)
    assert info is not None
    paths = install_hooks(info, python="/opt/my py/bin/python")
    assert paths == [info.common_dir / "hooks" / n for n in HOOK_NAMES]
    for p in paths:
        assert is_managed(p)
        assert p.stat().st_mode & stat.S_IXUSR
        assert "'/opt/my py/bin/python' -P -m synapse_nb.gitscope.githook" in p.read_text()
    before = _snapshot(info.common_dir / "hooks")
    assert install_hooks(info, python="/opt/my py/bin/python") == paths
    assert _snapshot(info.common_dir / "hooks") == before
    install_hooks(info, python="/usr/bin/python3")  # a different interpreter rewrites in place
    assert "/usr/bin/python3 -P -m" in paths[0].read_text()
    assert not (info.common_dir / "hooks" / f"post-commit{CHAIN_SUFFIX}").exists()


def test_uninstall_restores_exactly_what_was_there(repo: ScratchRepo) -> None:
    hooks = repo.root / ".git" / "hooks"
    original = b"#!/bin/sh\necho original >> \"$(git rev-parse --git-dir)/../chained.log\"\nexit 7\n"
    (hooks / "post-commit").write_bytes(original)
    os.chmod(hooks / "post-commit", 0o750)
    before = _snapshot(hooks)
    install_hooks(repo.root, background=False)
    assert (hooks / f"post-commit{CHAIN_SUFFIX}").read_bytes() == original
    assert is_managed(hooks / "post-commit") and is_managed(hooks / "post-rewrite")
    repo.commit_file("b.txt", "b\n", "Add b")  # the chained hook runs; its exit 7 does not fail a post hook
    assert (repo.root / "chained.log").read_text() == "original\n"
    assert uninstall_hooks(repo.root) == [hooks / "post-commit", hooks / "post-rewrite"]
    after = _snapshot(hooks)
    assert {k: v[:2] for k, v in after.items()} == {k: v[:2] for k, v in before.items()}
    assert uninstall_hooks(repo.root) == []  # nothing of ours left


def test_an_agent_can_neither_install_nor_remove_the_git_hooks(repo: ScratchRepo,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Review 36: an agent's ``uninstall_hooks`` silently stopped the person's revert-to-lesson pipeline, and its
    ``install_hooks('.', python='/agent/python')`` wrote a hook that ran an interpreter of its choosing at the
    person's next commit. Both are a person's: refused in an agent's environment, by the core and by the CLI."""
    from typer.testing import CliRunner

    from synapse_nb.cli import app
    from synapse_nb.errors import PermissionDeniedError

    hooks = repo.root / ".git" / "hooks"
    install_hooks(repo.root)  # the person's
    before = _snapshot(hooks)
    monkeypatch.setenv("CLAUDECODE", "1")
    with pytest.raises(PermissionDeniedError, match="agent's environment"):
        install_hooks(repo.root, python="/agent/python")
    with pytest.raises(PermissionDeniedError, match="agent's environment"):
        uninstall_hooks(repo.root)
    for cmd in ("install", "uninstall"):
        out = CliRunner().invoke(app, ["hooks", cmd, str(repo.root)])
        assert out.exit_code == 1 and "person's" in out.output and "CLAUDECODE" in out.output, out.output
    assert _snapshot(hooks) == before
    assert "/agent/python" not in (hooks / "post-commit").read_text()
    monkeypatch.delenv("CLAUDECODE")
    assert uninstall_hooks(repo.root) == [hooks / "post-commit", hooks / "post-rewrite"]  # the person's own


def test_foreign_hook_plus_existing_chain_is_a_conflict(repo: ScratchRepo) -> None:
    hooks = repo.root / ".git" / "hooks"
    (hooks / "post-commit").write_text("#!/bin/sh\nexit 0\n")
    (hooks / f"post-commit{CHAIN_SUFFIX}").write_text("#!/bin/sh\nexit 0\n")
    with pytest.raises(ConflictError, match="already exists"):
        install_hooks(repo.root, background=False)


def test_core_hooks_path_is_respected(repo: ScratchRepo) -> None:
    repo.git("config", "core.hooksPath", "tools/hooks")
    info = find_repo(repo.root)
    assert info is not None
    assert hooks_dir(info) == (repo.root / "tools" / "hooks").resolve()
    paths = install_hooks(info, background=False)
    assert paths[0] == (repo.root / "tools" / "hooks" / "post-commit").resolve()
    assert not (repo.root / ".git" / "hooks" / "post-commit").exists()


def test_worktree_installs_into_shared_hooks(repo: ScratchRepo, tmp_path: Path) -> None:
    wt = tmp_path / "wt"
    repo.git("worktree", "add", "-q", "-b", "side", str(wt))
    paths = install_hooks(wt)
    assert paths[0] == (repo.root / ".git" / "hooks" / "post-commit").resolve()


def test_not_a_repo(tmp_path: Path) -> None:
    with pytest.raises(GitError):
        install_hooks(tmp_path)


def test_real_commit_runs_the_hook_with_a_clean_git_env(repo: ScratchRepo, fake_scan: Path) -> None:
    _vault(repo.root)
    install_hooks(repo.root, background=False)
    repo.write("x.txt", "x\n")
    repo.git("add", "x.txt")
    repo.git("commit", "-q", "-m", "Add x", "--", "x.txt")  # pathspec commit: git sets GIT_INDEX_FILE
    calls = [line for line in fake_scan.read_text().splitlines() if line]
    assert len(calls) == 1
    assert '"post-commit"' in calls[0] and str(repo.root.resolve()) in calls[0]
    log = (repo.root / ".synapse" / "hook.log").read_text().splitlines()
    assert len(log) == 1 and " post-commit " in log[0] and "ok: 0 new pending lessons" in log[0]
    repo.git("commit", "-q", "--amend", "-m", "Add x (amended)")
    log = (repo.root / ".synapse" / "hook.log").read_text().splitlines()
    assert [line.split()[1] for line in log] == ["post-commit", "post-commit", "post-rewrite"]


def test_hooks_installed_before_the_rename_still_run_and_are_refreshed(repo: ScratchRepo, fake_scan: Path) -> None:
    """A hook script written before the entry became ``githook`` runs ``-m synapse_nb.gitscope.hook``: it still
    scans, the log says how to refresh it, and installing again rewrites it."""
    _vault(repo.root)
    paths = install_hooks(repo.root, background=False)
    for p in paths:  # what the earlier version wrote
        p.write_text(p.read_text().replace("synapse_nb.gitscope.githook", "synapse_nb.gitscope.hook"))
    repo.commit_file("old.txt", "x\n", "Add old")
    assert len(fake_scan.read_text().splitlines()) == 1
    log = (repo.root / ".synapse" / "hook.log").read_text().splitlines()
    assert "ok: 0 new pending lessons" in log[-1] and log[-1].endswith(LEGACY_NOTE)
    assert install_hooks(repo.root, background=False) == paths
    assert all("-m synapse_nb.gitscope.githook " in p.read_text() for p in paths)
    repo.commit_file("new.txt", "x\n", "Add new")
    assert not (repo.root / ".synapse" / "hook.log").read_text().splitlines()[-1].endswith(LEGACY_NOTE)


@pytest.mark.parametrize("mode", ["raise", "exit"])
def test_failing_scan_never_fails_the_commit(
    repo: ScratchRepo, fake_scan: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    _vault(repo.root)
    install_hooks(repo.root, background=False)
    monkeypatch.setenv("FAKE_MODE", mode)
    sha = repo.commit_file("y.txt", "y\n", "Add y")  # raises if git commit failed
    assert repo.git("log", "-1", "--format=%s") == "Add y" and len(sha) == 40
    log = (repo.root / ".synapse" / "hook.log").read_text()
    assert "error: " in log
    assert ("scan exploded" in log) if mode == "raise" else ("SystemExit" in log)


def test_stuck_scan_is_abandoned_after_the_time_limit(
    repo: ScratchRepo, fake_scan: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _vault(repo.root)
    install_hooks(repo.root, background=False)
    monkeypatch.setenv("FAKE_MODE", "sleep")
    monkeypatch.setenv("SYNAPSE_HOOK_TIMEOUT", "0.3")
    repo.commit_file("z.txt", "z\n", "Add z")
    assert "timeout: gave up after 0.3 s" in (repo.root / ".synapse" / "hook.log").read_text()


def test_no_vault_means_nothing_runs(repo: ScratchRepo, fake_scan: Path) -> None:
    install_hooks(repo.root, background=False)
    repo.commit_file("b.txt", "b\n", "Add b")
    assert not fake_scan.exists()
    assert not (repo.root / ".synapse").exists()


def test_synapse_home_chooses_the_vault(
    repo: ScratchRepo, fake_scan: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SYNAPSE_HOME names a project folder (or a vault folder), as --vault does: the hook uses that vault."""
    home = tmp_path / "elsewhere"
    home.mkdir()
    _vault(home)
    monkeypatch.setenv("SYNAPSE_HOME", str(home))
    install_hooks(repo.root, background=False)
    repo.commit_file("b.txt", "b\n", "Add b")
    assert "ok: 0 new pending lessons" in (home / ".synapse" / "hook.log").read_text()
    assert len(fake_scan.read_text().splitlines()) == 1
    assert not (home / "hook.log").exists() and not (repo.root / ".synapse").exists()


def test_main_in_process_returns_zero_everywhere(
    tmp_path: Path, repo: ScratchRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # not a repo
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    assert hook_main(["post-commit"]) == 0
    monkeypatch.chdir(repo.root)
    (repo.root / ".synapse").mkdir()  # a vault folder without a vault: the scan fails, the hook does not
    monkeypatch.setenv("SYNAPSE_HOOK_TIMEOUT", "not-a-number")
    assert hook_main([]) == 0
    assert "error: VaultNotFoundError: no vault at" in (repo.root / ".synapse" / "hook.log").read_text()
    assert not (repo.root / ".synapse" / "synapse.db").exists()  # a hook never creates a vault


def test_hook_log_is_rotated(repo: ScratchRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    vault = repo.root / ".synapse"
    vault.mkdir()
    (vault / "hook.log").write_text("x" * (600 * 1024))
    monkeypatch.chdir(repo.root)
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    hook_main(["post-commit"])  # no vault in the folder: one error line
    assert (vault / "hook.log.1").stat().st_size == 600 * 1024
    assert (vault / "hook.log").read_text().count("\n") == 1


def test_hook_module_imports_stay_light() -> None:
    code = (
        "import sys, synapse_nb.gitscope.githook\n"
        "heavy = [m for m in ('pandas', 'lancedb', 'sklearn', 'typer', 'numpy', 'watchdog', 'pyarrow') "
        "if m in sys.modules]\n"
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_real_vault_gets_a_pending_lesson_from_a_revert(repo: ScratchRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    from synapse_nb.vault import open_vault

    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    monkeypatch.setenv("SYNAPSE_HOOK_TIMEOUT", "30")  # a cold import on a busy CI box must not time out here
    open_vault(repo.root).close()  # the vault exists: the hook has somewhere to write
    install_hooks(repo.root, background=False)
    repo.commit_file("pay.py", "retry = 3\n", "Add retry to payment client")
    repo.git("revert", "--no-edit", "HEAD")
    log = (repo.root / ".synapse" / "hook.log").read_text().splitlines()
    assert [line.split(" ", 3)[3] for line in log] == [
        "ok: 0 new pending lessons",
        "ok: 1 new pending lesson",
    ]
    with open_vault(repo.root) as v:
        (lesson,) = v.lessons.pending()
        assert lesson.summary.startswith('Reverted "Add retry to payment client"')


def test_background_hook_returns_before_the_scan_finishes(
    repo: ScratchRepo, fake_scan: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.conftest import wait_for

    _vault(repo.root)
    paths = install_hooks(repo.root)  # background by default
    assert "& )" in paths[0].read_text()
    log = repo.root / ".synapse" / "hook.log"

    def said(word: str) -> bool:  # (the file appears before its line does: reading at its creation saw it empty)
        return word in (log.read_text() if log.exists() else "")

    # the scan held until the test lets it go: nothing is logged before, so the commit returned while it ran
    # (with a sleeping scan and a 1 s limit, "no log yet" raced the hook's own time-out: a busy machine can lose it)
    gate = repo.root.parent / "gate"
    monkeypatch.setenv("FAKE_MODE", "gate")
    monkeypatch.setenv("FAKE_GATE", str(gate))
    monkeypatch.setenv("SYNAPSE_HOOK_TIMEOUT", "120")
    repo.commit_file("b.txt", "b\n", "Add b")
    assert not log.exists()  # the commit returned while the (held) scan still runs ...
    assert wait_for(fake_scan.exists, 60)  # ... and it did start: it is held at the gate
    gate.touch()
    assert wait_for(lambda: said("ok:"), 60), log.read_text() if log.exists() else "no log"
    assert len(fake_scan.read_text().splitlines()) == 1
    # a scan past the limit is given up, in the background too
    monkeypatch.setenv("FAKE_MODE", "sleep")
    monkeypatch.setenv("SYNAPSE_HOOK_TIMEOUT", "1")
    repo.commit_file("c.txt", "c\n", "Add c")
    assert wait_for(lambda: said("gave up"), 60), log.read_text()
    assert "timeout: gave up after 1 s" in log.read_text()


def test_the_old_installer_module_name_still_imports_and_warns() -> None:
    import importlib
    import sys

    import synapse_nb.gitscope.githook_install as installer

    sys.modules.pop("synapse_nb.gitscope.hooks", None)
    with pytest.warns(DeprecationWarning, match="githook_install"):
        old = importlib.import_module("synapse_nb.gitscope.hooks")
    assert old.install_hooks is installer.install_hooks and old.__all__ == installer.__all__


def test_a_package_planted_in_the_work_tree_is_never_imported_by_the_hook(
        repo: ScratchRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    """git runs hooks from the work tree's root, and ``python -m`` put it first on ``sys.path``: a
    ``synapse_nb/__init__.py`` an agent wrote there ran in the human's process at the next commit (a review approved
    the agent's lesson that way). The hook runs ``python -P``: the installed package is the one imported."""
    from synapse_nb.vault import open_vault

    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    monkeypatch.setenv("SYNAPSE_HOOK_TIMEOUT", "30")
    open_vault(repo.root).close()
    install_hooks(repo.root, background=False)
    planted = repo.root / "synapse_nb"
    planted.mkdir()
    ran = repo.root / "planted-ran.txt"
    (planted / "__init__.py").write_text(f"open({str(ran)!r}, 'w').write('imported')\n")
    (repo.root / ".git" / "info" / "exclude").write_text("synapse_nb/\nplanted-ran.txt\n")
    repo.commit_file("c.txt", "c\n", "Add c")
    assert not ran.exists()
    assert "ok: 0 new pending lessons" in (repo.root / ".synapse" / "hook.log").read_text()


def test_a_detached_scan_after_an_agents_commit_is_the_agents(
        repo: ScratchRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    """The background scan is handed to init when the hook's shell exits, out of the committer's tree: after
    ``env -u CLAUDECODE git revert`` in an agent's shell it acted as the human, and its lessons were a person's,
    past the agents' cap of pending lessons (found by review). The hook script passes the pid of the process that
    ran git, read while it still runs; a review then showed the scan starts after the committer's shell has exited,
    so the hook's script reads the committer's processes itself and passes what it found."""
    import shlex

    from synapse_nb.vault import open_vault
    from tests.conftest import wait_for

    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    monkeypatch.setenv("SYNAPSE_HOOK_TIMEOUT", "30")
    open_vault(repo.root).close()
    install_hooks(repo.root)  # background, as by default
    repo.commit_file("pay.py", "retry = 3\n", "Add retry to payment client")
    log = repo.root / ".synapse" / "hook.log"
    # the human's commit's own scan is done (a later one would find the revert as the human); waited for, not
    # assumed after a while: a scan still running on a busy machine would take the revert's turn
    assert wait_for(lambda: "ok:" in (log.read_text() if log.exists() else ""), 120)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | {"CLAUDECODE": "1"}
    root = shlex.quote(str(repo.root))
    # the agent's shell exits at once: nothing of the committer's tree is left when the detached scan starts
    script = f"cd {root} && env -u CLAUDECODE git revert --no-edit HEAD >/dev/null; exit 0"
    subprocess.run(["setsid", "bash", "-c", script], env=env, check=True, timeout=60)
    assert wait_for(lambda: log.read_text().count("ok:") >= 2, 120), log.read_text()  # the revert's scan is done
    assert "ok: scanned as the agent" in log.read_text().splitlines()[-1]
    with open_vault(repo.root) as v:
        (lesson,) = v.lessons.pending()
        assert lesson.source == "agent", lesson
