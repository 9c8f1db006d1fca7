"""The same bytes whatever the locale (review 84 F1): the real CLI, agent hook and MCP server, as processes, print in
a Latin-1 or ASCII locale exactly what they print in a UTF-8 one (:mod:`synapse_nb.stdio`).

In a Latin-1 locale ``recall``, ``recall --json`` and ``memory list`` printed nothing or part of their output (an
em dash or an ellipsis is not Latin-1: ``UnicodeEncodeError``), and the agent hook printed nothing at all, so the
approved lessons never reached the agent. No locale has to be installed: ``PYTHONIOENCODING=latin-1`` gives Python
Latin-1 streams, and ``LC_ALL=C`` with ``PYTHONUTF8=0`` and ``PYTHONCOERCECLOCALE=0`` ASCII ones (without those two,
Python 3.7+ turns a C locale into UTF-8 by itself).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import synapse_nb as syn

ROOT = Path(__file__).resolve().parents[1]
#: the hook's prompt (stdin: UTF-8 JSON, read as UTF-8 in every locale)
QUERY = "how is the cache layer built, café?"
#: the CLI's: an argument is decoded as the locale says (it may name a file), so in the C locale a UTF-8 é is not é
ARG = "how is the cache layer built?"
#: a UTF-8 process, whatever the machine's locale
UTF8 = {"PYTHONUTF8": "1", "PYTHONIOENCODING": "utf-8"}
#: Latin-1 streams; UTF-8 mode keeps the file names' encoding UTF-8 (a folder's name is bytes on disk)
LATIN1 = {"PYTHONUTF8": "1", "PYTHONIOENCODING": "latin-1"}
#: the C locale as it is, ASCII streams
ASCII = {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
LOCALES = {"latin-1": LATIN1, "ascii": ASCII}


def _env(extra: dict[str, str]) -> dict[str, str]:
    drop = ("SYNAPSE_", "PYTHONIOENCODING", "PYTHONUTF8", "PYTHONCOERCECLOCALE", "LC_", "LANG")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env | extra


def _run(args: list[str], extra: dict[str, str], *, stdin: bytes = b"",
         cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "synapse_nb", *args], input=stdin, capture_output=True,
                          env=_env(extra), cwd=cwd, timeout=120)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A vault whose answers hold what Latin-1 cannot print: the approved-lesson banner's em dash, an ellipsis, an
    arrow, CJK; and Latin-1's own é."""
    p = tmp_path_factory.mktemp("locale") / "project"
    p.mkdir()
    with syn.open_vault(p) as v:
        les = v.lessons.create("Never force-push to main without the migration test", files=["db.py"])
        v.lessons.approve(les.id, text="Always run the migration test before a force-push — no exceptions")
        v.remember("project", "cache_layer", "The cache layer is LanceDB… café → 缓存 (see db.py)", tags=["cache"])
        v.decide("Use LanceDB for the cache layer", rationale="faster — and simpler to operate", tags=["cache"])
        v.checkpoint("Moving the cache layer → LanceDB…", files=["db.py"], next_step="run the café benchmark")
    return p


COMMANDS = [
    ["recall", ARG], ["recall", ARG, "--json"], ["recall", ARG, "--explain"], ["memory", "list"],
    ["memory", "list", "--json"], ["lessons", "list"], ["decision", "list"], ["checkpoint", "restore"],
    ["memory", "export", "--history"], ["memory", "search", "cache"], ["memory", "status"],
]


@pytest.mark.parametrize("locale", sorted(LOCALES))
def test_every_command_prints_the_utf8_bytes_in_any_locale(project: Path, locale: str) -> None:
    for args in COMMANDS:  # each right after its UTF-8 run: an export is a write (it is recorded), which moves the
        # vault's version that a later recall --json names
        want = _run(["--vault", str(project), *args], UTF8, cwd=project)
        assert want.returncode == 0 and want.stdout, (args, want.stderr)
        got = _run(["--vault", str(project), *args], LOCALES[locale], cwd=project)
        assert (got.returncode, got.stdout, got.stderr) == (want.returncode, want.stdout, want.stderr), args
    text = _run(["--vault", str(project), "recall", ARG], LOCALES[locale], cwd=project).stdout.decode("utf-8")
    assert "APPROVED SYSTEM MEMORY —" in text and "café → 缓存" in text


@pytest.mark.parametrize("locale", sorted(LOCALES))
def test_the_hook_gives_the_agent_its_lessons_in_any_locale(project: Path, locale: str) -> None:
    """The hook's JSON is UTF-8 (Claude Code reads UTF-8), and the event on stdin is read as UTF-8: the prompt's é
    is the same word in every locale."""
    def event(session: str) -> bytes:
        return json.dumps({"session_id": session, "prompt": QUERY, "hook_event_name": "UserPromptSubmit",
                           "cwd": str(project)}, ensure_ascii=False).encode("utf-8")

    env = {"CLAUDECODE": "1"}
    want = _run(["--vault", str(project), "hook", "UserPromptSubmit"], UTF8 | env, stdin=event(f"s-utf8-{locale}"),
                cwd=project)
    got = _run(["--vault", str(project), "hook", "UserPromptSubmit"], LOCALES[locale] | env,
               stdin=event(f"s-{locale}"), cwd=project)
    assert got.returncode == 0 and got.stderr == b"", got.stderr
    answer = json.loads(got.stdout.decode("utf-8"))["hookSpecificOutput"]["additionalContext"]
    assert answer.startswith("APPROVED SYSTEM MEMORY —") and "before a force-push — no exceptions" in answer
    assert "café → 缓存" in answer and QUERY in answer  # the prompt, read as UTF-8
    assert got.stdout == want.stdout


#: what differs between two vaults written alike: random ids, the times of the writes
_SAME = re.compile(rb"\b[a-z]{3}_[0-9a-f]{12}\b|\d{4}-\d\d-\d\d[ T][0-9:.]+Z?")


def _mcp(folder: Path, extra: dict[str, str]) -> tuple[list[bytes], bytes]:
    """A ``synapse-nb mcp`` session: initialize, a write that creates the vault (its notice goes to stderr), a
    recall; (the reply lines, stderr)."""
    calls = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "remember", "arguments": {
            "category": "project", "key": "cache_layer", "content": "The cache layer is LanceDB… café → 缓存"}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "recall", "arguments": {
            "query": QUERY}}},
    ]
    proc = subprocess.Popen([sys.executable, "-m", "synapse_nb", "mcp", str(folder)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(extra), cwd=folder)
    assert proc.stdin is not None and proc.stdout is not None
    replies = []
    try:
        for call in calls:
            proc.stdin.write(json.dumps(call, ensure_ascii=False).encode("utf-8") + b"\n")
            proc.stdin.flush()
            if "id" in call:
                replies.append(proc.stdout.readline())
        proc.stdin.close()
        proc.wait(timeout=120)
        assert proc.stderr is not None
        err = proc.stderr.read()
    finally:
        proc.kill()
    return replies, err


def test_the_mcp_server_answers_and_says_in_utf8_in_any_locale(tmp_path: Path) -> None:
    """The protocol was UTF-8 bytes already; the server's stderr (the vault a write created, in a folder whose name
    is not Latin-1) is now too."""
    runs = {}
    for name, extra in (("utf-8", UTF8), ("latin-1", LATIN1)):
        folder = tmp_path / name / "projet — café"
        folder.mkdir(parents=True)
        replies, err = _mcp(folder, extra)
        where = str(folder.resolve()).encode("utf-8")
        runs[name] = [_SAME.sub(b"X", r.replace(where, b"FOLDER")) for r in replies], err.replace(where, b"FOLDER")
    replies, err = runs["latin-1"]
    assert all(r.endswith(b"\n") for r in replies) and json.loads(replies[2])["result"]["isError"] is False
    assert "café → 缓存" in json.loads(replies[2])["result"]["structuredContent"]["text"]
    assert err == b"synapse-nb: created a new vault at FOLDER/.synapse\n"
    assert runs["latin-1"] == runs["utf-8"]
