"""`team trust` of a teammate's team.toml (review 90 F3).

docs/team.md told a person to run `team trust` in a clone "whose .synapse/team.toml a teammate committed". Such a
file names the teammate's login and their agent's, and trusting it pinned them for the person: every command there
then worked as the teammate (where the login went through: trust authentication, a shared .pgpass). `team trust`
now says when the logins are not this person's (the logins this machine pinned for that server, PGUSER, else the
Unix user's name) and asks; under --yes it is refused unless --other-login says it is meant.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from synapse_nb.cli import app
from synapse_nb.errors import ValidationError
from synapse_nb.team import trust, trust_preview
from synapse_nb.vault.locate import record_team_url
from synapse_nb.vault.pins import pin_for, server_identity, write_pin

ALICE = "postgresql://alice@db.example.com:5432/team?project=acme"
AGENT_ALICE = "postgresql://agent_alice@db.example.com:5432/team?project=acme"


@pytest.fixture()
def clone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Bob's clone holding the team.toml alice committed (with -f: the vault folder's .gitignore is "*")."""
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    monkeypatch.delenv("CLAUDECODE", raising=False)
    f = tmp_path / "acme"
    (f / ".synapse").mkdir(parents=True)
    record_team_url(f / ".synapse", ALICE, AGENT_ALICE)
    monkeypatch.chdir(f)
    return f


def test_trusting_a_teammates_team_toml_under_yes_is_refused_unless_meant(clone: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGUSER", "bob")
    said = trust_preview()["not_yours"]
    assert said.startswith("its url logs in as alice, not as you (bob: PGUSER)") and "agent_alice" in said, said
    out = CliRunner().invoke(app, ["team", "trust", "--yes"])
    assert out.exit_code == 1 and "logs in as alice, not as you" in out.output, out.output
    assert "team join" in out.output and "--other-login" in out.output, out.output
    with pytest.raises(ValidationError, match="another person's logins"):
        trust()
    assert pin_for(clone) is None  # nothing pinned
    # meant (a shared login): said so, it is pinned; the agent login is still checked on the server first, which
    # this fake server cannot answer, so the clone without an agent login shows it
    record_team_url(clone / ".synapse", ALICE)
    out = CliRunner().invoke(app, ["team", "trust", "--yes", "--other-login"])
    assert out.exit_code == 0 and server_identity(ALICE, clone) in out.output, out.output
    assert pin_for(clone).server == server_identity(ALICE, clone)  # type: ignore[union-attr]


def test_the_logins_this_machine_pinned_for_the_server_are_the_persons(clone: Path, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PGUSER", raising=False)
    other = tmp_path / "billing"  # bob joined another project on the same server with his own logins
    write_pin(other, "postgresql://bob@db.example.com:5432/team?project=billing", "join",
              agent_server="postgresql://agent_bob@db.example.com:5432/team?project=billing")
    said = trust_preview()["not_yours"]
    assert said.startswith("its url logs in as alice, not as you (bob: the logins this machine pinned"), said
    record_team_url(clone / ".synapse", ALICE.replace("alice", "bob"), AGENT_ALICE)  # his url, her agent's login
    said = trust_preview()["not_yours"]
    assert said == "its agent login agent_alice is none this machine pinned for that server (agent_bob)", said
    record_team_url(clone / ".synapse", ALICE.replace("alice", "bob"), AGENT_ALICE.replace("alice", "bob"))
    assert trust_preview()["not_yours"] is None  # his own logins: nothing to say
