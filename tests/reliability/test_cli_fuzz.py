"""CLI argument fuzzing: every command path of the typer app with hostile option values, unknown options,
missing arguments, huge strings, control characters and unicode, in process (``synapse_nb.cli.main``) and
through a real ``python -m synapse_nb`` subprocess.

The promise (docs/reliability.md, "Input"): the exit code is 0, 1 (refused) or 2 (usage error); a non-zero exit
prints exactly one line on stderr, never a traceback; and a refused call leaves ``export_jsonl()`` unchanged.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from hypothesis import given, settings
from hypothesis import strategies as st

import synapse_nb as syn
from reliability.conftest import FUZZ_CASES
from synapse_nb.cli import app, main

settings.load_profile("reliability")
pytestmark = pytest.mark.reliability
REPO = Path(__file__).resolve().parents[2]

#: Commands left out of the fuzzing, and why: they block on stdin or a loop (mcp, watch, lessons review), run a
#: long evaluation over a dataset (gate eval, recall eval, demo), or write outside the vault (hooks, memory export).
EXCLUDED = ("demo", "gate eval", "hooks install", "hooks uninstall", "lessons review", "mcp", "memory export",
            "recall eval", "watch")


def _leaf_commands() -> dict[str, Any]:
    """Every leaf command of the app by its path (``"checkpoint create"``), with its click params."""
    out: dict[str, Any] = {}

    def walk(cmd: Any, path: list[str]) -> None:
        if hasattr(cmd, "commands"):
            for name in sorted(cmd.commands):
                walk(cmd.commands[name], [*path, name])
        else:
            out[" ".join(path)] = cmd

    walk(typer.main.get_command(app), [])
    return out


COMMANDS = _leaf_commands()
FUZZED = sorted(c for c in COMMANDS if c not in EXCLUDED)

HOSTILE = st.one_of(
    st.text(max_size=30),
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=()), max_size=20),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["", " ", "-", "--", "--json", "-n", "\x00", "\x1b[31m", "\n\nTraceback",
                     "'; DROP TABLE memories; --", "NEAR(a b)", "a AND (b OR", "title:x*", "mem_", "les_", "ckp_",
                     "latest", "../../etc/passwd", "/dev/null", '{"kind": "memory", "source": "user"}',
                     "9999-12-31T23:59:59Z", "-1", "0", "1e309", "nan", "\ud800", "x" * 100_000, "🚀" * 2000, "%s%n",
                     "\\", "pending", "approved", "high", "knowledge", "30d", "user", "agent"]))
JUNK = st.sampled_from(["--nope", "-Z", "--json=yes", "--limit", "--vault", "--mind", "--help", "--version",
                        "---", "-", "--=", "--files=", "extra"])


def _option_tokens(param: Any, value: str) -> list[str]:
    opt = param.opts[0] if len(param.opts) == 1 else param.opts[len(value) % len(param.opts)]
    if getattr(param, "is_flag", False):
        return [opt]
    return [opt, value]


@st.composite
def argvs(draw: Any, sandbox: Path) -> list[str]:
    """An argument list for one real command path: some of its params with hostile values, maybe junk."""
    name = draw(st.sampled_from(FUZZED))
    cmd = COMMANDS[name]
    args: list[str] = []
    for param in cmd.params:
        if not draw(st.booleans()):  # leave it out: a missing required argument is a usage error
            continue
        if param.param_type_name == "argument":
            if param.name == "path":  # a vault path: only inside the sandbox
                args.append(draw(st.sampled_from([str(sandbox / "project"), str(sandbox / "nowhere"), "."])))
            else:
                args.append(draw(HOSTILE))
        else:
            args += _option_tokens(param, draw(HOSTILE))
    if draw(st.integers(0, 3)) == 0:
        args.insert(draw(st.integers(0, len(args))), draw(JUNK))
    if draw(st.integers(0, 4)) == 0 and args:  # a missing value: the last option's value cut off
        args = args[:-1]
    return ["--vault", str(sandbox / "project"), *name.split(), *args]


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture()
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project with a few records of each kind; cwd and SYNAPSE_HOME point into the sandbox."""
    project = tmp_path / "project"
    project.mkdir()
    v = syn.open_vault(project)
    v.remember("preference", "style", "numpy docstrings", tags=["style"])
    v.as_agent().remember("knowledge", "guess", "maybe flaky")
    v.lessons.create("pending lesson about caching")
    v.lessons.approve(v.lessons.create("approved lesson").id)
    v.decide("use WAL", rationale="readers never block", tags=["storage"])
    v.checkpoint("refactoring auth", files=["src/auth.py"])
    v.close()
    monkeypatch.setenv("SYNAPSE_HOME", str(project))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _export(sandbox: Path) -> str:
    v = syn.open_vault(sandbox / "project")
    try:
        return v.export_jsonl()
    finally:
        v.close()


#: Check commands that exit 1 with their report on stdout (and nothing on stderr) when something is off, as
#: ``git diff --exit-code`` does: documented in their help ("exit 1 when it drifted", "Exit code 1 when ...").
CHECKS = ("index check", "memory verify")


def _check(code: int, err: str, argv: list[str], out: str = "") -> None:
    assert code in (0, 1, 2), (code, argv[:6], err[-300:])
    assert "Traceback" not in err, (argv[:6], err[-500:])
    if code == 1 and not err and out.strip() and any(" ".join(argv).find(c) >= 0 for c in CHECKS):
        return  # a check's "something is off": the report is on stdout
    if code != 0:
        lines = err.splitlines()
        assert len(lines) == 1, (argv[:6], code, err[-500:])
        assert lines[0].startswith("synapse-nb: "), lines[0][:200]


def test_every_fuzzed_command_exists() -> None:
    """The fuzzed list is the real app: a renamed command fails here instead of silently not being fuzzed."""
    assert set(EXCLUDED) <= set(COMMANDS)
    assert {"checkpoint create", "remember", "recall query", "lessons approve", "memory import"} <= set(FUZZED)


def test_cli_argument_fuzz_in_process(sandbox: Path) -> None:
    seen = {"codes": {0: 0, 1: 0, 2: 0}}

    @settings(max_examples=int(os.environ.get("SYNAPSE_CLI_FUZZ_EXAMPLES", "100")))
    @given(argv=argvs(sandbox))
    def run(argv: list[str]) -> None:
        FUZZ_CASES["n"] += 1
        before = _export(sandbox)
        code, out, err = _run(argv)
        _check(code, err, argv, out)
        seen["codes"][code] = seen["codes"].get(code, 0) + 1
        if code != 0:
            assert _export(sandbox) == before, (argv[:6], err)

    run()
    # the generator reaches all three outcomes (else it is not testing what it claims)
    assert all(n > 0 for n in seen["codes"].values()), seen


@pytest.mark.parametrize("argv, code", [
    (["remember"], 2),                                              # missing arguments
    (["remember", "knowledge", "k"], 2),
    (["--nope"], 2),                                                # unknown option
    (["memory", "list", "--limit", "-5"], 2),                       # below min
    (["memory", "list", "--limit", "9" * 40], 1),                   # a huge int: refused by the core
    (["lessons", "approve", "--yes", "les_nope"], 1),                        # unknown id
    (["lessons", "approve", "--yes", "x\x1b[31m\ny"], 1),                    # control characters
    (["remember", "nosuchcategory", "k", "v"], 1),                  # refused by the core
    (["memory", "import", "--yes", "/dev/null"], 1),                         # not an export
    (["checkpoint", "restore", "ckp_\ud800"], 1),                   # lone surrogate
    (["recall", "x" * 100_000, "--budget", "-3"], None),
    (["--json", "memory", "status"], 2),                            # --json before the command
])
def test_cli_crafted_arguments(sandbox: Path, argv: list[str], code: int | None) -> None:
    before = _export(sandbox)
    got, out, err = _run(["--vault", str(sandbox / "project"), *argv])
    _check(got, err, argv, out)
    if code is not None:
        assert got == code, (argv[:4], got, err)
    if got != 0:
        assert _export(sandbox) == before


SUBPROCESS_CASES = [
    (["remember", "knowledge"], 2),
    (["lessons", "approve", "--yes", "les_doesnotexist"], 1),
    (["memory", "list", "--limit", "abc", "--json"], 2),
    (["recall", "🚀" * 500 + "\x1b[2J", "--session", "s1", "--json"], 0),
    (["recall", "numpy", "--session", "s\ud7ff"], 1),               # an unprintable session name
    (["checkpoint", "create", "--doing", ""], None),
    (["decision", "list", "--search", '"unbalanced AND (', "--json"], None),
]


def test_cli_argument_fuzz_subprocess(sandbox: Path) -> None:
    """The same promise through a real ``python -m synapse_nb`` (the interpreter's own stderr included)."""
    env = {**os.environ, "SYNAPSE_HOME": str(sandbox / "project"), "PYTHONPATH": str(REPO)}
    env.pop("SYNAPSE_DEBUG", None)
    before = _export(sandbox)
    for argv, want in SUBPROCESS_CASES:
        proc = subprocess.run([sys.executable, "-m", "synapse_nb", "--vault", str(sandbox / "project"), *argv],
                              capture_output=True, text=True, timeout=120, cwd=sandbox, env=env,
                              errors="surrogateescape")
        _check(proc.returncode, proc.stderr, argv, proc.stdout)
        if want is not None:
            assert proc.returncode == want, (argv[:3], proc.returncode, proc.stderr)
        if proc.returncode != 0:
            assert _export(sandbox) == before, argv[:3]
        before = _export(sandbox)
