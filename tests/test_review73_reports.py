"""Review 73 F3: an agent's records flooded the reports a person reads about their vault.

In 1.9 s, within its write quota, an agent wrote 300 checkpoints each naming 500 missing files: ``%memory verify``
printed 150,000 lines (a notebook drops such an output past its data-rate limit) with the person's own dangling
reference somewhere in them; 250 agent memories expiring sooner put the person's at line 250 of ``%memory expiring``
and last of ``memory status``'s one line of every expiring id. Now each gives people's records first, an agent's
record in one line, and a bounded text that says what it left out and where all of it is (``--json`` keeps it all).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.utils.capture import capture_output
from typer.testing import CliRunner

import synapse_nb as syn
from synapse_nb.cli import app
from synapse_nb.follow import MOST_COMMITS, MOST_LINES, VerifyReport
from synapse_nb.reports import MOST_IDS
from tests.conftest import run_git
from tests.test_magics import TestingShell, _shell

AGENT_RECORDS = MOST_LINES + 5  #: one line each past the cap
FILES = 30  #: missing files each
ODD = 'docs/The user approved "this".md'  #: a file name an agent chose: quoted, never the report's words
SOONER = 25  #: agents' memories expiring before the person's


@pytest.fixture()
def flooded(git_repo: Path) -> dict[str, Any]:
    """A person's checkpoint naming a missing file and a memory expiring in 3 days, then an agent's checkpoints
    naming many missing files each, and its memories expiring in one day."""
    user = syn.open_vault(git_repo)
    mine = user.checkpoint("Migrating billing to v2; see src/billing_v2.py", files=["src/billing_v2.py"])
    freeze = user.remember("context", "release_freeze", "Release freeze ends; unfreeze deploys", expires="3d")
    agent = user.as_agent()
    theirs = [agent.checkpoint(f"step {i}", files=[ODD, *(f"gen/f{i}_{j}.py" for j in range(FILES - 1))])
              for i in range(AGENT_RECORDS)]
    notes = [agent.remember("context", f"note_{i}", f"temporary note {i}", expires="1d") for i in range(SOONER)]
    user.close()
    return {"repo": git_repo, "mine": mine, "freeze": freeze, "theirs": theirs, "notes": notes}


def cli(repo: Path, *args: str, code: int = 0) -> Any:
    res = CliRunner().invoke(app, ["--vault", str(repo), *args])
    assert res.exit_code == code, (res.exit_code, res.stdout, res.stderr)
    return res


@pytest.fixture()
def ip(flooded: dict[str, Any]) -> Iterator[TestingShell]:
    shell = _shell(flooded["repo"])
    yield shell
    shell.run_line_magic("unload_ext", "synapse_nb")
    TestingShell.clear_instance()


def _verify_text(text: str, flooded: dict[str, Any]) -> None:
    """The person's reference right under the count line; an agent's record one line; at most MOST_LINES lines, then
    one saying how many more and where every reference is."""
    lines = text.splitlines()
    assert len(lines) == 1 + MOST_LINES + 1
    assert lines[1] == f'  missing   checkpoint {flooded["mine"].id} [user]: "src/billing_v2.py"'
    assert lines[0].startswith(f"verified {1 + AGENT_RECORDS * FILES:,} file references: "
                               f"{1 + AGENT_RECORDS * FILES:,} dangling")
    agents = lines[2:-1]
    assert all(x.startswith("  missing   checkpoint ckp_") and " [agent · unverified]: " in x for x in agents)
    assert f": {FILES} missing files: " in agents[0] and f"… {FILES - 3} more" in agents[0]
    assert '"docs/The user approved \\"this\\".md"' in agents[0]  # the agent's name as quoted data
    assert len({x.split()[2] for x in agents}) == len(agents)  # one line per record
    more = AGENT_RECORDS - (MOST_LINES - 1)
    assert lines[-1] == (f"  … {more} more lines not shown (agents' records): synapse-nb memory verify --json "
                         "(in Python, the report's to_dict()) lists every reference")


def test_cli_verify_gives_the_persons_reference_first_and_the_rest_in_json(flooded: dict[str, Any]) -> None:
    repo = flooded["repo"]
    _verify_text(cli(repo, "memory", "verify", code=1).stdout, flooded)
    full = json.loads(cli(repo, "memory", "verify", "--json", code=1).stdout)
    assert len(full["dangling"]) == 1 + AGENT_RECORDS * FILES  # every reference
    assert {r["id"] for r in full["dangling"]} == {flooded["mine"].id, *(c.id for c in flooded["theirs"])}


def shown(ip: TestingShell, cell: str) -> str:
    """What a notebook receives as the text of ``cell``'s result: the magic displays it as it runs (review 78: so a
    listing prints in ``ipython script.ipy`` too), once, also when the cell binds it to a name."""
    with capture_output() as cap:
        ip.run_cell(cell)
    (text,) = [str(o.data["text/plain"]) for o in cap.outputs if "text/plain" in o.data]
    return text


def test_the_magic_verify_gives_the_persons_reference_first(ip: TestingShell, flooded: dict[str, Any]) -> None:
    _verify_text(shown(ip, "report = %memory verify"), flooded)
    assert len(ip.user_ns["report"].dangling) == 1 + AGENT_RECORDS * FILES  # the report in Python: all of it


def test_a_persons_renamed_files_come_before_an_agents_record_in_one_line(git_repo: Path) -> None:
    for name in ("src/a.py", "src/b.py", "src/c.py"):
        (git_repo / name).parent.mkdir(exist_ok=True)
        (git_repo / name).write_text("x\n", encoding="utf-8")
    run_git(git_repo, "add", "src")
    run_git(git_repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "src")
    user = syn.open_vault(git_repo)
    agent = user.as_agent()
    theirs = [agent.checkpoint(f"agent {i}", files=["src/a.py", "src/b.py", "src/c.py"]) for i in range(3)]
    mine = user.checkpoint("person", files=["src/c.py"])
    run_git(git_repo, "mv", "src", "lib")
    run_git(git_repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "move")
    text = str(user.verify()).splitlines()
    assert text[1] == f'  renamed   checkpoint {mine.id} [user]: "src/c.py" -> "lib/c.py"'
    assert sorted(text[2:]) == sorted(
        f'  renamed   checkpoint {c.id} [agent · unverified]: 3 renamed files: "src/a.py" -> "lib/a.py", '
        '"src/b.py" -> "lib/b.py", "src/c.py" -> "lib/c.py"' for c in theirs)
    user.close()


def test_a_persons_possibly_stale_record_comes_before_agents() -> None:
    """Possibly stale records: a person's first (whatever their ids), each with who wrote it and at most a few
    commits."""
    shas = tuple(f"{i:040x}" for i in range(MOST_COMMITS + 2))
    agents = {f"mem_{i:012x}": shas for i in range(MOST_LINES + 3)}
    report = VerifyReport(checked=50, stale={**agents, "mem_ffffffffffff": shas[:1]}, agents=frozenset(agents),
                          marks={"mem_ffffffffffff": "[user · verified]"}
                          | dict.fromkeys(agents, "[agent · unverified]"))
    lines = str(report).splitlines()
    assert lines[1] == f"  stale?    memory mem_ffffffffffff [user · verified]: changed since by {shas[0][:7]}"
    assert lines[2].startswith("  stale?    memory mem_000000000000 [agent · unverified]: changed since by ")
    assert lines[2].endswith(f"{shas[MOST_COMMITS - 1][:7]}, … 2 more")
    assert len(lines) == 1 + MOST_LINES + 1 and lines[-1].startswith("  … 4 more lines not shown (agents' records)")


# ------------------------------------------------------------------------------------------------ expiring
def test_cli_expiring_lists_the_persons_memory_first_within_the_limit(flooded: dict[str, Any]) -> None:
    repo, freeze = flooded["repo"], flooded["freeze"]
    res = cli(repo, "memory", "expiring")
    lines = [x for x in res.stdout.splitlines() if x.startswith("mem_")]
    assert len(lines) == 20 and lines[0].startswith(f"{freeze.id}  expires ") and "release_freeze" in lines[0]
    assert res.stderr.strip() == f"(… {1 + SOONER - 20} more memories not listed: -n 0 lists all)"
    every = cli(repo, "memory", "expiring", "-n", "0")
    assert len([x for x in every.stdout.splitlines() if x.startswith("mem_")]) == 1 + SOONER and not every.stderr
    shown = cli(repo, "memory", "expiring", "--json")  # a script reads every one (second reader of review 73)
    assert len(json.loads(shown.stdout)) == 1 + SOONER and json.loads(shown.stdout)[0]["id"] == freeze.id
    assert not shown.stderr
    assert len(json.loads(cli(repo, "memory", "expiring", "--json", "-n", "20").stdout)) == 20
    theirs = cli(repo, "memory", "expiring", "--source", "agent", "-n", "0").stdout
    assert freeze.id not in theirs and theirs.count("[agent · unverified]") >= SOONER


def test_the_magic_expiring_lists_the_persons_memory_first_and_says_what_it_left_out(
        ip: TestingShell, flooded: dict[str, Any]) -> None:
    ip.run_cell("soon = %memory expiring")
    soon = ip.user_ns["soon"]
    assert len(soon) == 20 and soon[0].id == flooded["freeze"].id
    assert soon.note == f"(… {1 + SOONER - 20} more memories not listed: -n 0 lists all)"
    assert soon.note in soon._repr_html_()  # what the notebook shows, under the table
    ip.run_cell("every = %memory expiring -n 0")
    assert len(ip.user_ns["every"]) == 1 + SOONER and ip.user_ns["every"].note is None


# ------------------------------------------------------------------------------------------------ status
def test_status_lists_the_persons_ids_first_and_counts_the_rest(flooded: dict[str, Any]) -> None:
    repo, freeze, mine = flooded["repo"], flooded["freeze"], flooded["mine"]
    user = syn.open_vault(repo)
    user.verify(fix=True)  # marks the dangling records: the person's checkpoint and every agent's
    lesson = user.lessons.create("Never force-push main")  # a person's pending lesson, then an agent's newer drafts
    drafts = [user.as_agent().lessons.create(f"draft {i}: retries fixed the flaky deploy") for i in range(12)]
    st = user.status()
    assert st.pending_lessons == (lesson.id, *(d.id for d in reversed(drafts)))  # each side newest first
    assert st.expiring_memories[0] == freeze.id and len(st.expiring_memories) == 1 + SOONER
    assert st.dangling[0] == mine.id and len(st.dangling) == 1 + AGENT_RECORDS
    user.close()
    text = cli(repo, "memory", "status").stdout
    rest = "(synapse-nb memory status --json lists all)"
    expiring = next(x for x in text.splitlines() if "memories expiring within 7 days" in x)
    assert expiring.startswith(f"  memories expiring within 7 days: {freeze.id}, ")
    assert expiring.endswith(f", … {1 + SOONER - MOST_IDS} more {rest}") and expiring.count("mem_") == MOST_IDS
    dangling = next(x for x in text.splitlines() if "records naming files missing at HEAD" in x)
    assert dangling.startswith(f"  records naming files missing at HEAD: {mine.id}, ")
    assert dangling.endswith(f", … {1 + AGENT_RECORDS - MOST_IDS} more {rest}")
    pending = next(x for x in text.splitlines() if "pending lessons awaiting a human" in x)
    assert pending.startswith(f"  pending lessons awaiting a human: {lesson.id}, ")
    assert pending.endswith(f", … {13 - MOST_IDS} more {rest}")
    full = json.loads(cli(repo, "memory", "status", "--json").stdout)
    assert full["expiring_memories"][0] == freeze.id and len(full["expiring_memories"]) == 1 + SOONER


def test_the_magic_status_lists_the_persons_ids_first(ip: TestingShell, flooded: dict[str, Any]) -> None:
    line = next(x for x in shown(ip, "st = %memory status").splitlines() if "memories expiring within 7 days" in x)
    assert line.startswith(f"  memories expiring within 7 days: {flooded['freeze'].id}, ") and len(line) < 300
