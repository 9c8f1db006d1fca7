"""A typo never creates a vault: who may create one, where, and what everyone else says instead.

Rules, through the CLI, the Python API and the MCP server:

- a read (status, list, search, recall, restore, export, index check, MCP read tools) never creates a vault;
  it fails with "no vault at PATH (looked for .synapse/ ...); create one with `synapse-nb init` or by
  writing a memory";
- a write creates a vault only inside an existing folder (never missing parent folders) and says so once
  on stderr; ``synapse-nb init`` does it on purpose, idempotently;
- ``SYNAPSE_HOME`` and ``--vault`` mean the same thing (a project folder or a vault folder).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from conftest import run_git
from typer.testing import CliRunner

import synapse_nb as syn
from synapse_nb.cli import CREATING_COMMANDS, app
from synapse_nb.gitscope.vaultdir import GITIGNORE_TEXT
from synapse_nb.vault import find_vault_dir

NO_VAULT = "(looked for .synapse/ at the git root, or in the folder outside git"
HOW_TO = "create one with `synapse-nb init` or by writing a memory"

#: Every reading command, with arguments; each must fail cleanly on a folder without a vault and create nothing.
READS = [
    ["memory", "status"], ["memory", "status", "--json"], ["memory", "list"], ["memory", "search", "deploy"],
    ["memory", "expiring"], ["memory", "export"], ["memory", "verify", "--yes"],
    ["memory", "verify", "--yes", "mem_1234"],
    ["memory", "prune", "--yes"], ["recall", "how do we deploy?"], ["recall", "query", "deploy", "--json"],
    ["checkpoint", "list"], ["checkpoint", "restore"], ["decision", "list"], ["lessons", "list"],
    ["lessons", "review", "--yes"], ["lessons", "approve", "--yes", "les_1234"],
    ["lessons", "reject", "--yes", "les_1234"], ["lessons", "withdraw", "--yes", "les_1234"],
    ["lessons", "adopt", "--yes"], ["index", "check"], ["index", "rebuild"],
    ["memory", "history", "deploy"], ["memory", "revisions"], ["memory", "conflicts"],
    ["memory", "revert", "--yes", "mem_1234", "--to", "1"], ["memory", "accept", "--yes", "rev_1234"],
    ["memory", "reject", "--yes", "rev_1234"], ["memory", "resolve", "--yes", "lnk_1234", "merge"],
    ["memory", "purge", "--yes", "mem_1234"], ["memory", "prune-history", "--yes", "--older-than", "30d"],
    ["settings", "list"], ["settings", "get", "recall_floor"], ["settings", "reset", "recall_top_k", "--yes"],
]
#: Every command that writes, with arguments (``watch`` runs until stopped: covered by the table check below).
WRITES = [
    ["remember", "project", "status_line", "v1 deployed"], ["checkpoint", "create", "--doing", "Refactoring"],
    ["decision", "log", "Use WAL"], ["memory", "import", "--yes", "-"], ["init"],
    ["settings", "set", "recall_top_k", "3", "--yes"],
]
#: Commands that never open a vault of the project (their own data or a throwaway one).
NO_VAULT_COMMANDS = {"demo", "gate eval", "recall eval", "hooks install", "hooks uninstall", "mcp"}
#: team commands work on a team vault by URL: none creates a local vault
NO_VAULT_COMMANDS |= {"team init", "team join", "team status", "team search-local", "team dev-server", "team grant",
                      "team trust", "team agent-login"}
#: agent settings are files of the agent, not the vault; a hook never creates a vault (tests/test_agent_hooks.py)
NO_VAULT_COMMANDS |= {"agent install", "agent uninstall", "agent status", "hook"}


@pytest.fixture()
def empty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An existing folder outside git, without a vault; the current folder."""
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    d = tmp_path / "empty project"
    d.mkdir()
    monkeypatch.chdir(d)
    return d


def cli(*args: str, code: int = 0, input: str | None = None, env: dict[str, str] | None = None) -> Any:
    res = CliRunner().invoke(app, list(args), input=input, env=env)
    assert res.exit_code == code, (args, res.exit_code, res.stdout, res.stderr)
    return res


def listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def export_of(vault_dir: Path) -> str:
    with syn.open_vault(vault_dir, create=False) as v:
        return v.export_jsonl()


# ------------------------------------------------------------------------------------------------ CLI
def test_every_cli_command_is_classified() -> None:
    """A new command must say whether it may create a vault: listed here as a read, a write or neither."""
    import typer

    def walk(cmd: Any, path: tuple[str, ...] = ()) -> list[str]:
        subs = getattr(cmd, "commands", None)
        if not subs:
            return [" ".join(path)]
        return [name for n, c in sorted(subs.items()) for name in walk(c, (*path, n))]

    def name(args: list[str]) -> str:
        if args[0] == "recall":
            return "recall query"
        return (" ".join(args[:2]) if args[0] in ("memory", "checkpoint", "decision", "lessons", "index", "settings")
                else args[0])

    commands = set(walk(typer.main.get_command(app)))
    reads = {name(a) for a in READS}
    assert {name(a) for a in WRITES} | {"watch", "lessons scan"} == set(CREATING_COMMANDS)
    assert not reads & set(CREATING_COMMANDS)
    assert commands == reads | set(CREATING_COMMANDS) | NO_VAULT_COMMANDS


@pytest.mark.parametrize("args", READS, ids=lambda a: " ".join(a))
def test_cli_reads_never_create_a_vault(empty: Path, args: list[str]) -> None:
    res = cli(*args, code=1)
    err = res.stderr.strip()
    assert len(err.splitlines()) == 1 and res.stdout == "", (res.stdout, err)
    assert err.startswith(f"synapse-nb: error: no vault at {empty.resolve()} {NO_VAULT}") and err.endswith(HOW_TO)
    assert listing(empty) == []


@pytest.mark.parametrize("args", [*READS[:3], ["recall", "deploy"]], ids=lambda a: " ".join(a))
def test_cli_reads_on_a_mistyped_vault_create_no_folder(tmp_path: Path, args: list[str]) -> None:
    typo = tmp_path / "nonexistent" / "dir"
    res = cli("--vault", str(typo), *args, code=1)
    assert res.stderr.strip() == (f"synapse-nb: error: no vault at {typo}: the folder does not exist (a typo?); "
                                  "name an existing project folder or vault folder (synapse-nb never creates "
                                  "missing folders)")
    assert not (tmp_path / "nonexistent").exists()


@pytest.mark.parametrize("args", WRITES, ids=lambda a: " ".join(a))
def test_cli_writes_create_only_in_an_existing_folder_and_say_so_once(empty: Path, tmp_path: Path,
                                                                     args: list[str]) -> None:
    # a typo in the folder: refused, nothing created, not even the parent
    typo = tmp_path / "no such folder" / "deeper"
    res = cli("--vault", str(typo), *args, code=1, input="")
    assert "the folder does not exist (a typo?)" in res.stderr and not typo.parent.exists()
    # an existing folder: the vault is created, and stderr says where, in one line
    header = '{"format": "synapse_nb-export", "schema": 2}\n'
    res = cli(*args, input=header)
    vault = (empty / ".synapse").resolve()
    if args == ["init"]:
        assert res.stdout.strip() == f"created a new vault at {vault}" and res.stderr == ""
    else:
        assert res.stderr == f"synapse-nb: created a new vault at {vault}\n"
    assert (vault / "synapse.db").is_file()
    assert (vault / ".gitignore").read_text(encoding="utf-8") == GITIGNORE_TEXT
    # once: the next write finds it
    assert cli(*args, input=header).stderr == ""


@pytest.mark.parametrize("args", [["remember", "project", "", "v1"], ["remember", "badcat", "k", "v"],
                                  ["checkpoint", "create", "--doing", ""], ["decision", "log", ""],
                                  ["memory", "import", "--yes", "-"]], ids=lambda a: " ".join(a))
def test_a_refused_first_write_takes_back_the_vault_it_created(empty: Path, args: list[str]) -> None:
    res = cli(*args, code=1, input='{"format": "synapse_nb-export", "schema": 99}\n')
    vault = (empty / ".synapse").resolve()
    # one line, the error (review 78: "created", the error and "removed" said three lines of a vault never seen)
    (line,) = res.stderr.splitlines()
    assert line.startswith("synapse-nb: error: ") and str(vault) not in line
    assert listing(empty) == []
    # a vault with something in it is never taken back, even when the next command fails
    cli("decision", "log", "Use WAL")
    assert "removed" not in cli(*args, code=1, input="{}\n").stderr
    assert "Use WAL" in cli("decision", "list").stdout


def test_a_failed_write_keeps_a_vault_folder_that_holds_other_files(empty: Path) -> None:
    vault = empty / ".synapse"
    vault.mkdir()
    (vault / "mine.txt").write_text("the user's own file", encoding="utf-8")
    (vault / ".gitignore").write_text("*.txt\n", encoding="utf-8")
    res = cli("remember", "project", "", "v1", code=1)
    assert "removed" not in res.stderr
    assert listing(vault) == [".gitignore", "mine.txt"]  # the new vault's files are gone, the user's stay
    assert (vault / "mine.txt").read_text(encoding="utf-8") == "the user's own file"
    assert (vault / ".gitignore").read_text(encoding="utf-8") == "*.txt\n"


def test_synapse_readonly_reads_work_and_every_write_is_refused(empty: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the store's "folder is read-only" error points here: SYNAPSE_READONLY=1 must really open read-only
    cli("remember", "project", "build", "the build uses uv")
    before = cli("memory", "export").stdout
    monkeypatch.setenv("SYNAPSE_READONLY", "1")
    assert "project/build: the build uses uv" in cli("memory", "list").stdout
    assert "the build uses uv" in cli("recall", "which build tool?").stdout
    for args in WRITES[:3]:
        res = cli(*args, code=1)
        assert "read-only" in res.stderr and res.stdout == "", (args, res.stderr)
    monkeypatch.setenv("SYNAPSE_READONLY", "0")
    assert cli("memory", "export").stdout == before  # nothing was written
    monkeypatch.setenv("SYNAPSE_READONLY", "1")
    shutil.rmtree(empty / ".synapse")
    res = cli("remember", "project", "x", "y", code=1)  # read-only never creates a vault either
    assert "no vault at" in res.stderr and not (empty / ".synapse").exists()


def test_a_path_argument_never_creates_folders(empty: Path, tmp_path: Path) -> None:
    for args in (["checkpoint", "create", "/some/typo", "--doing", "x"],
                 ["checkpoint", "create", str(tmp_path / "typo"), "--doing", "x"],
                 ["init", str(tmp_path / "typo" / "deeper")],
                 ["init", str(tmp_path / "typo" / ".synapse")],
                 ["hooks", "install", str(tmp_path / "typo")],
                 ["hooks", "uninstall", str(tmp_path / "typo")],
                 ["watch", str(tmp_path / "typo")],
                 ["mcp", str(tmp_path / "typo")],
                 ["memory", "export", str(tmp_path / "typo" / "out.jsonl")]):
        if args[:2] == ["memory", "export"]:
            cli("init")
        res = cli(*args, code=1)
        assert len(res.stderr.strip().splitlines()) == 1 and "typo" in res.stderr, (args, res.stderr)
        assert not (tmp_path / "typo").exists(), args
    assert not Path("/some").exists()


def test_lessons_scan_outside_git_creates_nothing(empty: Path) -> None:
    res = cli("lessons", "scan")  # nothing to find is no error, as vault.lessons.scan() (review 68)
    assert res.stdout == "0 new pending lessons\n" and listing(empty) == []
    assert res.stderr.startswith("note: ") and "is not inside a git repository: no reverts to scan" in res.stderr


def test_init_is_idempotent_and_finds_the_git_root(git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    sub = git_repo / "src" / "pkg"
    sub.mkdir(parents=True)
    vault = (git_repo / ".synapse").resolve()
    assert cli("init", str(sub)).stdout.strip() == f"created a new vault at {vault}"
    cli("--vault", str(git_repo), "remember", "project", "k", "kept")
    before = export_of(vault)
    for where in (["init", str(sub)], ["init", str(git_repo)], ["--vault", str(vault), "init"]):
        res = cli(*where)
        assert res.stdout.strip() == f"the vault already exists at {vault}" and res.stderr == ""
    assert export_of(vault) == before and not (sub / ".synapse").exists()
    assert "synapse-nb init" in cli("init", "--help").stdout and "Examples" in cli("init", "--help").stdout


# ------------------------------------------------------------------------------------------------ Python API
def test_api_missing_folder_is_vault_not_found_naming_it(tmp_path: Path) -> None:
    typo = tmp_path / "typo" / "deeper"
    for kwargs in ({}, {"create": True}, {"create": False}, {"readonly": True}):
        with pytest.raises(syn.VaultNotFoundError) as ei:
            syn.open_vault(typo, **kwargs)
        assert str(typo) in str(ei.value) and "does not exist" in str(ei.value)
        assert isinstance(ei.value, syn.NotFoundError) and isinstance(ei.value, KeyError)
    with pytest.raises(syn.VaultNotFoundError, match="does not exist"):
        syn.open_vault(tmp_path / "typo" / ".synapse")  # a vault folder whose project folder is missing
    assert not (tmp_path / "typo").exists()


def test_api_create_false_and_readonly_never_create(tmp_path: Path) -> None:
    for kwargs in ({"create": False}, {"readonly": True}, {"readonly": True, "create": True}):
        with pytest.raises(syn.VaultNotFoundError) as ei:
            syn.open_vault(tmp_path, **kwargs)
        assert str(ei.value) == (f"no vault at {tmp_path.resolve()} {NO_VAULT}: {tmp_path.resolve() / '.synapse'}); "
                                 f"{HOW_TO}")
    assert listing(tmp_path) == []


def test_api_default_creates_in_an_existing_folder_and_says_so(tmp_path: Path) -> None:
    v = syn.open_vault(tmp_path)
    assert v.created is True and v.path == (tmp_path / ".synapse").resolve()
    assert (v.path / ".gitignore").read_text(encoding="utf-8") == GITIGNORE_TEXT
    v.close()
    for kwargs in ({}, {"create": False}, {"readonly": True}):
        with syn.open_vault(tmp_path, **kwargs) as again:
            assert again.created is False
    with syn.open_vault(tmp_path / ".synapse" / "..") as same:
        assert same.path == v.path


def test_api_rejects_bad_input_before_creating_anything(tmp_path: Path) -> None:
    with pytest.raises(syn.ValidationError):
        syn.open_vault(tmp_path, mind="has space")
    with pytest.raises(syn.ValidationError):
        syn.open_vault(tmp_path, actor="root")
    (tmp_path / "notes.txt").write_text("x", encoding="utf-8")
    with pytest.raises(syn.VaultNotFoundError, match="is a file"):
        syn.open_vault(tmp_path / "notes.txt")
    assert listing(tmp_path) == ["notes.txt"]


def test_store_never_creates_folders(tmp_path: Path) -> None:
    from synapse_nb.store.sqlite import Store

    with pytest.raises(syn.StoreError, match="does not exist"):
        Store(tmp_path / "a" / "b" / "synapse.db")
    assert listing(tmp_path) == []


def test_a_gitignore_that_cannot_be_written_never_fails_the_open(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import synapse_nb.gitscope.vaultdir as vaultdir

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(13, "Read-only file system")

    monkeypatch.setattr(vaultdir, "open", refuse, raising=False)
    with syn.open_vault(tmp_path) as v:
        v.remember("knowledge", "k", "still works")
    assert not (tmp_path / ".synapse" / ".gitignore").exists()
    monkeypatch.undo()
    with syn.open_vault(tmp_path) as v:  # the next open that can write it, does
        assert v.memories.count() == 1
    assert (tmp_path / ".synapse" / ".gitignore").is_file()


def test_a_vault_folder_holding_user_files_gets_no_gitignore(tmp_path: Path) -> None:
    """A folder of another name holding synapse.db (an older SYNAPSE_HOME) may be the user's project: never ignore
    it."""
    legacy = tmp_path / "proj"
    legacy.mkdir()
    with syn.open_vault(legacy / ".synapse") as v:
        v.remember("knowledge", "k", "v")
    (legacy / ".synapse" / "synapse.db").rename(legacy / "synapse.db")
    shutil.rmtree(legacy / ".synapse")
    (legacy / "main.py").write_text("print('mine')\n", encoding="utf-8")
    with syn.open_vault(legacy) as v:
        assert v.path == legacy.resolve() and v.memories.count() == 1
    assert not (legacy / ".gitignore").exists()


# ------------------------------------------------------------------------------------------------ SYNAPSE_HOME
@pytest.mark.parametrize("kind", ["project outside git", "git subfolder", "vault folder", "legacy vault folder"])
def test_synapse_home_means_what_vault_means(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    if kind == "project outside git":
        target = tmp_path / "proj"
        target.mkdir()
        expected = target / ".synapse"
    elif kind == "git subfolder":
        repo = tmp_path / "repo"
        repo.mkdir()
        run_git(repo, "init", "-q", "-b", "main")
        target = repo / "src"
        target.mkdir()
        expected = repo / ".synapse"
    elif kind == "vault folder":
        (tmp_path / "p").mkdir()
        target = expected = tmp_path / "p" / ".synapse"
    else:
        target = expected = tmp_path / "standalone"
        target.mkdir()
        sqlite3.connect(target / "synapse.db").close()  # an empty database: migrated on open
    by_option = find_vault_dir(target)
    monkeypatch.setenv("SYNAPSE_HOME", str(target))
    assert find_vault_dir() == by_option and by_option[0] == expected.resolve()
    cli("remember", "project", "where", "here")  # through SYNAPSE_HOME
    monkeypatch.delenv("SYNAPSE_HOME")
    listed = json.loads(cli("--vault", str(target), "memory", "list", "--json").stdout)
    assert [m["key"] for m in listed] == ["where"]
    assert not (work / ".synapse").exists()
    if kind in ("project outside git", "git subfolder"):
        assert not (target / "synapse.db").exists()  # never a second vault beside the project's


def test_synapse_home_typo_is_an_error_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SYNAPSE_HOME", str(tmp_path / "nope"))
    res = cli("remember", "project", "k", "v", code=1)
    assert res.stderr.startswith(f"synapse-nb: error: no vault at SYNAPSE_HOME={tmp_path / 'nope'}: the folder "
                                 "does not exist")
    with pytest.raises(syn.VaultNotFoundError, match="SYNAPSE_HOME="):
        syn.open_vault()
    assert listing(tmp_path) == []


def test_two_vaults_in_one_folder_are_refused_with_a_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The old SYNAPSE_HOME wrote proj/synapse.db beside proj/.synapse: neither spelling may pick one silently."""
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    proj = tmp_path / "proj"
    proj.mkdir()
    with syn.open_vault(proj) as v:
        v.remember("knowledge", "real", "the project's vault")
    stray = sqlite3.connect(proj / "synapse.db")
    stray.close()
    with pytest.raises(syn.ConflictError, match="holds two vaults") as ei:
        syn.open_vault(proj)
    assert f"mv {proj / 'synapse.db'}*" in str(ei.value)
    for env, args in (({}, ["--vault", str(proj)]), ({"SYNAPSE_HOME": str(proj)}, [])):
        res = cli(*args, "memory", "list", code=1, env=env)
        assert "holds two vaults" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert export_of(proj / ".synapse").count("\n") >= 2  # the vault itself is untouched and still opens by name


# ------------------------------------------------------------------------------------------------ MCP
MCP_READS = [("submit_lesson_analysis", {"lesson_id": "les_1234", "analysis": "why"})]
#: The reading tools: on a new project they answer "nothing yet" as a normal result (and create nothing: review 93,
#: recall, search and get_status were tool errors there).
MCP_SESSION_START = [("get_approved_memory", {}), ("restore_checkpoint", {})]
MCP_NOTHING_YET = [("get_status", {}), ("recall", {"query": "deploy"}), ("search", {"query": "deploy"})]
MCP_WRITES = [("remember", {"category": "knowledge", "key": "k", "content": "v"}),
              ("create_checkpoint", {"doing": "Refactoring"}), ("log_decision", {"decision": "Use WAL"}),
              ("log_episode", {"task_key": "run_tests"}),
              ("signal_low_context", {"token_count": 90, "capacity": 100})]


def _mcp(project: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    import anyio
    from mcp import Client

    from synapse_nb.mcp.server import build_server

    async def go() -> list[Any]:
        async with Client(build_server(project)) as c:
            return [await c.call_tool(name, args) for name, args in calls]

    return anyio.run(go)


def test_mcp_reads_never_create_a_vault(tmp_path: Path) -> None:
    for r in _mcp(tmp_path, MCP_READS):
        assert r.is_error and f": no vault at {tmp_path.resolve()} {NO_VAULT}" in r.content[0].text
        assert r.content[0].text.endswith(HOW_TO)
    memory, checkpoint = _mcp(tmp_path, MCP_SESSION_START)
    assert not memory.is_error and memory.content[0].text.startswith("no approved lessons and no memories yet")
    assert memory.structured_content["vault"] is False and memory.structured_content["lessons"] == []
    assert not checkpoint.is_error and checkpoint.content[0].text.startswith("no checkpoint yet")
    assert checkpoint.structured_content == {"text": checkpoint.content[0].text, "found": False, "elsewhere": 0}
    for r in _mcp(tmp_path, MCP_NOTHING_YET):
        assert not r.is_error and r.content[0].text.startswith("nothing stored yet")
    assert listing(tmp_path) == []


@pytest.mark.parametrize("tool", MCP_WRITES, ids=lambda t: t[0])
def test_mcp_writes_create_only_in_an_existing_folder_and_say_so_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], tool: tuple[str, dict[str, Any]]) -> None:
    typo = tmp_path / "typo" / "deeper"
    [r] = _mcp(typo, [tool])
    assert r.is_error and "does not exist" in r.content[0].text and not (tmp_path / "typo").exists()
    project = tmp_path / "project"
    project.mkdir()
    results = _mcp(project, [tool, tool, ("get_status", {})])
    assert not any(r.is_error for r in results), [r.content[0].text for r in results]
    vault = (project / ".synapse").resolve()
    assert capsys.readouterr().err == f"synapse-nb: created a new vault at {vault}\n"
    assert (vault / ".gitignore").read_text(encoding="utf-8") == GITIGNORE_TEXT


def test_mcp_a_refused_first_write_takes_back_the_vault_it_created(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "project"
    project.mkdir()
    # a category outside the enum is refused by the tool's schema, before the vault is opened: nothing is created
    [r] = _mcp(project, [("remember", {"category": "badcat", "key": "k", "content": "v"})])
    assert r.is_error and "category 'badcat' is not accepted; use one of: identity," in r.content[0].text
    assert capsys.readouterr().err == "" and listing(project) == []
    # a key the core refuses (not snake_case) is refused after the vault was created: it is taken back
    [r] = _mcp(project, [("remember", {"category": "knowledge", "key": "Bad Key", "content": "v"})])
    assert r.is_error and "not snake_case" in r.content[0].text
    vault = (project / ".synapse").resolve()
    # ... and says nothing of it: a vault nobody saw (the CLI's rule since review 78; before, "created" and "removed")
    assert capsys.readouterr().err == ""
    assert listing(project) == []
    # the next good write creates it again, said once; a refused write after that keeps it
    results = _mcp(project, [("remember", {"category": "project", "key": "k", "content": "v"}),
                             ("remember", {"category": "project", "key": "Bad Key", "content": "v"})])
    assert [r.is_error for r in results] == [False, True]
    assert capsys.readouterr().err.splitlines() == [f"synapse-nb: created a new vault at {vault}"]
    assert (vault / "synapse.db").is_file()


def test_mcp_server_on_a_mistyped_folder_does_not_start(tmp_path: Path) -> None:
    res = cli("mcp", str(tmp_path / "typo"), code=1)
    assert "does not exist" in res.stderr and not (tmp_path / "typo").exists()
    assert os.listdir(tmp_path) == []
