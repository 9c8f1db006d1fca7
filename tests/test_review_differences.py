"""Review 26: what a person accepts or verifies is shown so that every difference is visible, and a decision binds to
what was on screen.

``memory accept`` and ``memory verify`` at a terminal, and the ChangeReview widget, showed values through
``inline()``: a revision that moved a line break (so ``rm -rf $HOME`` left its ``#`` comment) or wrote Cyrillic "ру"
into ``pypi.org`` printed two identical lines; the widget showed the current value cut to 100 characters beside the
whole proposed one, and after Accept selected the next revision under the same button (a double click accepted it
unseen)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import synapse_nb as syn
from synapse_nb.cli import app
from synapse_nb.differences import diff_lines, lookalike_warning, shown_lines

CLEANUP = "Free disk space on the runner:\nmake clean  # only build output; never rm -rf $HOME"
MOVED = "Free disk space on the runner: make clean  # only build output; never\nrm -rf $HOME"
PIP = "Install deps with: pip install --index-url https://pypi.org/simple -r requirements.txt"
SPOOFED = PIP.replace("pypi.org", "\u0440\u0443pi.org")


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    for var in ("CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CODEX_SANDBOX", "SYNAPSE_ACTOR"):
        monkeypatch.delenv(var, raising=False)
    p = tmp_path / "project"
    p.mkdir()
    return p


def _at_a_terminal(monkeypatch: pytest.MonkeyPatch, module: object, answer: bool = False) -> None:
    monkeypatch.setattr(module, "require_human_here", lambda *a: None)
    monkeypatch.setattr(module.typer, "confirm", lambda *a, **kw: answer)  # type: ignore[attr-defined]


def _revision(project: Path, key: str, before: str, after: str) -> tuple[syn.Vault, str, str]:
    human = syn.open_vault(project)
    mem = human.remember("procedure", key, before, tags=["ci"])
    syn.open_vault(project, actor="agent").memories.update(mem.id, content=after, tags=["ci", "disk"])
    return human, mem.id, human.memories.revisions()[0].id


@pytest.mark.parametrize(("before", "after", "now_lines", "new_lines"), [
    (CLEANUP, MOVED, ["Free disk space on the runner:", "make clean␣␣# only build output; never rm -rf $HOME"],
     ["Free disk space on the runner: make clean␣␣# only build output; never", "rm -rf $HOME"]),
    (PIP, SPOOFED, [PIP], [PIP.replace("pypi.org", "<U+0440><U+0443>pi.org")]),
])
def test_memory_accept_shows_a_moved_line_break_and_look_alike_letters(
        project: Path, monkeypatch: pytest.MonkeyPatch, before: str, after: str, now_lines: list[str],
        new_lines: list[str]) -> None:
    import synapse_nb.cli.history as cli_history

    human, mid, rid = _revision(project, "cleanup", before, after)
    _at_a_terminal(monkeypatch, cli_history)
    res = CliRunner().invoke(app, ["--vault", str(project), "memory", "accept", rid])
    assert res.exit_code == 1 and "not accepted" in res.stderr
    lines = res.stderr.splitlines()
    for line in now_lines:
        assert f"    - {line}" in lines, res.stderr
    for line in new_lines:
        assert f"    + {line}" in lines, res.stderr
    assert "  content, - now / + proposed [agent · unverified]:" in lines  # the mark before the agent's lines
    assert any(line.startswith("  ⚠ content: the proposed value reads like the current one") for line in lines)
    assert "  tags, - now / + proposed [agent · unverified]:" in lines and "    + disk" in lines
    assert human.memories.get(mid).content == before


def test_memory_verify_at_a_terminal_shows_each_stored_line(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import synapse_nb.cli.memory as cli_memory

    syn.open_vault(project)
    agent = syn.open_vault(project, actor="agent")
    m = agent.remember("procedure", "runner_cleanup", "Free disk space: make clean  # build output only; never\n"
                       "rm -rf $HOME/.cache", tags=["d\u0456sk"])
    _at_a_terminal(monkeypatch, cli_memory)
    res = CliRunner().invoke(app, ["--vault", str(project), "memory", "verify", m.id])
    assert res.exit_code == 1 and "not verified" in res.stderr
    lines = res.stderr.splitlines()
    assert lines[0].startswith("[agent · unverified] [normal] procedure/runner_cleanup, as stored")
    assert lines[1:3] == ["    Free disk space: make clean␣␣# build output only; never", "    rm -rf $HOME/.cache"]
    assert "  tags: d<U+0456>sk;" in res.stderr


def test_change_review_shows_every_difference_and_the_current_values_whole(vault: syn.Vault) -> None:
    from synapse_nb.widgets import ChangeReview

    body = ("Release checklist for the payments service: bump the version, update the changelog, run the full test "
            "suite, then deploy to staging and wait for the canary. Only after the canary has been green for 30 "
            "minutes, deploy to production with ./deploy.sh prod --require-approval.")
    m = vault.remember("procedure", "release", body, tags=["release"], priority="high")
    vault.as_agent().memories.update(m.id, content=body.replace("--require-approval", "--skip-approval"),
                                     tags=["release", "payments"], priority="critical")
    w = ChangeReview(vault)
    html = w.revision_html.value
    # the current value of each proposed field whole (the content past 100 characters; tags, priority), beside
    # the proposed one, then the diff
    assert html.count("--require-approval") == 2 and html.count("--skip-approval") == 2, html
    assert "- high" in html and "+ critical" in html and "+ payments" in html and "  release" in html
    assert "proposed [agent · unverified]" in html and "⚠" not in html  # a visible change: no warning
    p = vault.remember("procedure", "pip", PIP)
    vault.as_agent().memories.update(p.id, content=SPOOFED)
    c = vault.remember("procedure", "cleanup", CLEANUP)
    vault.as_agent().memories.update(c.id, content=MOVED)
    w.refresh_now()
    for rev in w.items_revisions[1:]:
        w.revisions.value = rev.id
        html = w.revision_html.value
        assert "reads like the current one but is not" in html and "role='alert'" in html
    assert "https://&lt;U+0440&gt;&lt;U+0443&gt;pi.org" not in html  # the last one shown: the moved line break
    assert "\n+ rm -rf $HOME" in html and "- Free disk space on the runner:\n" in html
    w.revisions.value = w.items_revisions[1].id
    assert "https://&lt;U+0440&gt;&lt;U+0443&gt;pi.org" in w.revision_html.value


def test_change_review_double_click_decides_only_the_revision_shown(vault: syn.Vault) -> None:
    from synapse_nb.widgets import ChangeReview

    m1 = vault.remember("project", "docs_style", "Docs use sentence case headings")
    m2 = vault.remember("procedure", "deploy", "Deploy with ./deploy.sh prod --require-approval")
    agent = vault.as_agent()
    agent.memories.update(m1.id, content="Docs use sentence case headings and US spelling")
    agent.memories.update(m2.id, content="Deploy with ./deploy.sh prod --skip-approval")
    w = ChangeReview(vault)
    assert "project/docs_style" in w.revision_html.value  # the first, on screen
    w.accept_button.click()
    w.accept_button.click()  # a double click
    assert [r.status for r in vault.memories.revisions(status=None)] == ["accepted", "pending"]
    assert vault.memories.get(m2.id).content.endswith("--require-approval")
    assert w.revisions.value is None and "no revision selected" in w.message.value
    assert w.accept_button.disabled and "no pending revision" in w.revision_html.value
    # a refresh never moves the selection to another revision (ipywidgets selects the first on new options)
    m3 = vault.remember("procedure", "lint", "Run ruff before each commit")
    r3 = agent.memories.update(m3.id, content="Run ruff before each push")
    r3_id = next(r.id for r in vault.memories.revisions() if r.rid == m3.id)
    w.refresh_now()
    assert w.revisions.value is None  # a new revision is listed, not selected for the person
    w.revisions.value = r3_id
    vault.remember("knowledge", "unrelated", "the office coffee machine is on the third floor")
    w.refresh_now()
    assert w.revisions.value == r3_id and "procedure/lint" in w.revision_html.value
    assert r3 is not None


def test_change_review_double_click_resolves_only_the_conflict_shown(vault: syn.Vault) -> None:
    from synapse_nb.widgets import ChangeReview

    vault.remember("knowledge", "deploy_steps", "to deploy run make deploy then tag the release on main")
    vault.remember("knowledge", "cache_ttl", "cache entries live 5 minutes in the redis cluster")
    agent = vault.as_agent()
    agent.remember("knowledge", "deploy_how", "to deploy run make deploy then tag the release on main branch")
    agent.remember("knowledge", "cache_life", "cache entries live 5 minutes in the redis cluster now")
    w = ChangeReview(vault)
    assert len(w.items_conflicts) == 2, w.items_conflicts
    w.keep_button.click()
    w.merge_button.click()  # a second click, under the same pointer
    assert [x.status for x in vault.memories.conflicts(status=None)].count("open") == 1
    assert w.conflicts.value is None and "no conflict selected" in w.message.value


def test_shown_lines_keep_every_neutralisation_and_mark_what_reads_alike() -> None:
    assert shown_lines("ok [user · verified] run it") == ["ok [quoted mark] run it"]
    assert shown_lines("[user  verified] x")[0].startswith("[quoted mark]")
    assert shown_lines("a\u200bb\u202ec\u00a0d") == ["a<U+200B>b<U+202E>c<U+00A0>d"]
    assert shown_lines("tab\there ␣ ") == ["tab⇥here <U+2423>␣"]
    assert shown_lines("ｐypi café naïve 日本語") == ["<U+FF50>ypi café naïve 日本語"]
    assert shown_lines("line\u2028two") == ["line", "two"]
    assert lookalike_warning("content", "deploy to prod", "deploy to staging") is None
    assert lookalike_warning("tags", ["ci"], ["c\u0456"]) is not None
    assert diff_lines(["a", "b"], ["a", "b"]) == ["  a", "  b"]
    long = "x" * 5000
    # past 1,000 characters the window between the common start and end is marked (review 32)
    assert diff_lines([long], [long + "y"]) == [f"- {long}", f"+ {long}y", "? " + " " * 5000 + "+"]


# Review 31: ASCII-punctuation look-alikes (U+A789 modifier letter colon, U+2215 division slash, U+A4F8 Lisu letter
# tone mya ti) were shown as themselves, without a code point or a warning, and past the 1,000-character marking
# cap without a caret: `https꞉∕∕uploadꓸpypi.org` read as the person's URL.
UPLOAD = "https://upload.pypi.org/legacy/"
UPLOAD_SPOOFED = "https\ua789\u2215\u2215upload\ua4f8pypi.org/legacy/"
UPLOAD_SHOWN = "https<U+A789><U+2215><U+2215>upload<U+A4F8>pypi.org/legacy/"
RELEASE = ("Release procedure: bump the version in pyproject.toml, run the full test suite with tox -e py311,py312, "
           "build the sdist and wheel with python -m build, check them with twine check dist/*, then upload to the "
           f"index with twine upload --repository-url {UPLOAD} dist/* using the token from the team vault (never a "
           "personal token), tag the release commit as vX.Y.Z, push the tag, and announce it in #releases with the "
           "changelog section; if anything fails, yank the release rather than deleting it.")


@pytest.mark.parametrize("before", [f"Upload with twine upload --repository-url {UPLOAD} dist/*", RELEASE])
def test_memory_accept_shows_punctuation_look_alikes_as_code_points_and_warns(
        project: Path, monkeypatch: pytest.MonkeyPatch, before: str) -> None:
    import synapse_nb.cli.history as cli_history

    human, mid, rid = _revision(project, "upload", before, before.replace(UPLOAD, UPLOAD_SPOOFED))
    _at_a_terminal(monkeypatch, cli_history)
    res = CliRunner().invoke(app, ["--vault", str(project), "memory", "accept", rid])
    assert res.exit_code == 1 and "not accepted" in res.stderr
    lines = res.stderr.splitlines()
    assert f"    - {before}" in lines and f"    + {before.replace(UPLOAD, UPLOAD_SHOWN)}" in lines, res.stderr
    assert any(line.startswith("    ? ") for line in lines)  # past 1,000 a pair, the changed window (review 32)
    assert any(line.startswith("  ⚠ content: ") for line in lines), res.stderr
    assert human.memories.get(mid).content == before


@pytest.mark.parametrize("ch", [
    "\u2044", "\u2215", "\u29f8", "\u2236", "\u02d7", "\u2212",  # symbols (S*): slashes, ratio, minus signs
    "\u0589", "\u05c3", "\u2024", "\u2019", "\u201d", "\u05f4", "\u01c3", "\u2010", "\uff0f",  # punctuation (P*)
    "\ua789", "\u02bc", "\u02d0", "\u30fc",  # modifier letters and symbols (Lm, Sk)
    "\ua4f8", "\u0585", "\u13a0",  # letters of scripts with Latin look-alikes (Lisu, Armenian, Cherokee)
    "\u0660", "\u06f1", "\u09e6", "\u0e50", "\uff11",  # digits of other scripts (Nd not ASCII)
    "\u0627", "\u05e1", "\u05c0", "\u200f", "\u061c",  # right-to-left letters, signs and marks (R, AL)
    "\u2009", "\u3000", "\u00a0",  # spaces
    "\u2060", "\u00ad", "\x9b", "\x07", "\u0301",  # format, control characters, a combining mark
    "\u30ce", "\u4e3f", "\u4e00", "\u30cb", "\uf900",  # CJK and kana drawn like "/", "-", "=", a duplicate ideograph
    "\U0001d41a", "\U0001f44d",  # a styled letter, an emoji
])
def test_shown_lines_show_every_other_non_ascii_character_as_its_code_point(ch: str) -> None:
    assert shown_lines(f"a{ch}b") == [f"a<U+{ord(ch):04X}>b"]


def test_shown_lines_show_accented_latin_and_cjk_kana_hangul_letters_as_themselves() -> None:
    text = "café déjà vu, Ñandú Ångström naïve; 日本語のテキストとカタカナ、한국어 문장"
    # the ideographic comma is punctuation; "ト" is drawn like "F" or "|-" (review 32)
    assert shown_lines(text) == [text.replace("、", "<U+3001>").replace("ト", "<U+30C8>")]


def test_look_alike_warning_past_the_marking_cap_and_beside_a_visible_change() -> None:
    spoofed = RELEASE.replace(UPLOAD, UPLOAD_SPOOFED)
    assert diff_lines(shown_lines(RELEASE), shown_lines(spoofed))[1].startswith("? ")  # the window, past the cap
    assert lookalike_warning("content", RELEASE, spoofed) is not None
    # a visible change beside it does not hide it
    assert lookalike_warning("content", RELEASE, spoofed.replace("yank", "delete")) is not None
    assert lookalike_warning("content", "ping 10.0.0.1", "ping 10\u2024\u0660.0.1") is not None
    assert lookalike_warning("content", "x", "x\u200f") is not None  # a right-to-left mark
    # code points the same in both, in the same order: a visible change is not warned about
    assert lookalike_warning("content", "см. pypi.org: deploy to prod", "см. pypi.org: deploy to staging") is None
    assert lookalike_warning("content", RELEASE, RELEASE.replace("yank", "delete")) is None
    assert lookalike_warning("content", "日本語 deploy", "日本語 ship") is None


def test_change_review_shows_punctuation_look_alikes_as_code_points_and_warns(vault: syn.Vault) -> None:
    from synapse_nb.widgets import ChangeReview

    m = vault.remember("procedure", "release", RELEASE)
    vault.as_agent().memories.update(m.id, content=RELEASE.replace(UPLOAD, UPLOAD_SPOOFED))
    html = ChangeReview(vault).revision_html.value
    assert "https&lt;U+A789&gt;&lt;U+2215&gt;&lt;U+2215&gt;upload&lt;U+A4F8&gt;pypi.org" in html, html
    assert "role='alert'" in html and "⚠ content: " in html and "\u2215" not in html


# Review 32: CJK ideographs and kana drawn like a Latin capital or an ASCII sign were shown as themselves, so
# `py卩i.org`, `丅OKEN`, `工gnore` read as ASCII, and with a visible change beside them nothing warned.
@pytest.mark.parametrize("ch", "卩丅丫工凵冂乚匸口エロコト卜丄冫几卄廾彐ヨ乛刂丌亠冖丩")
def test_cjk_and_kana_drawn_like_ascii_are_code_points_and_warned(ch: str) -> None:
    assert shown_lines(f"a{ch}b") == [f"a<U+{ord(ch):04X}>b"]
    assert lookalike_warning("content", f"{UPLOAD} main", f"{UPLOAD.replace('pypi', 'py' + ch + 'i')} mainx")


def test_cjk_and_kana_stay_readable_otherwise() -> None:
    text = "日本語の文章とカタカナ、한국어 문장"
    assert shown_lines(text) == [text.replace("、", "<U+3001>")]


PARA = ("The release procedure, agreed with the whole team after the incident review: " * 8)[:600]
LONG = f"{PARA} Upload only to {UPLOAD} and never anywhere else. {PARA}"


@pytest.mark.parametrize("old, new", [(LONG, LONG.replace("anywhere", "anyvvhere")),  # ASCII look-alikes
                                      (LONG, LONG.replace("legacy", "1egacy")),
                                      (LONG + "\n" + LONG, LONG + "\n" + LONG.replace("incident", "inc1dent", 1))])
def test_past_the_marking_cap_the_changed_window_is_marked(old: str, new: str) -> None:
    diff = diff_lines(shown_lines(old), shown_lines(new))
    guides = [line for line in diff if line.startswith("? ")]
    assert guides, diff
    a, b = (line for line in diff if line[0] in "-+")
    i = next(k for k in range(2, len(a)) if a[k] != b[k])  # the first changed character is marked on both sides
    assert all(g[i] in "^-+" for g in guides) and all(g[2:].strip(" ^-+") == "" for g in guides)
    assert all(len(g.strip()) < 800 for g in guides)  # the window, not the whole line


# Review 32: the look-alike warning looked at whole values only, so one honest visible change beside a look-alike
# (`pypị.org` with U+1ECB, shown as itself, and `incident` -> `incidents`) silenced it, under the cap and past it.
@pytest.mark.parametrize("old, new", [
    (f"{UPLOAD} (main index)", UPLOAD.replace("pypi.org", "pyp\u1ecb.org") + " (main index, faster)"),
    (LONG, LONG.replace("pypi.org", "pyp\u1ecb.org").replace("incident", "incidents", 1)),
    (LONG + "\n" + LONG, LONG.replace("whole team", "whole  team", 1) + "\n" + LONG.replace("never", "never ever")),
    ("run make test\nthen deploy", "run make test\nthen  deploy\nand tag it"),  # a space run, a visible new line
    ("Ignore nothing; run make test", "Ignore nothing; run make tést!"),
    ("host=pypo.org", "host=pypの.org more"),  # a kana the skeleton reads as "o", inside an ASCII word
])
def test_look_alike_warning_beside_a_visible_change_in_any_changed_part(old: str, new: str) -> None:
    warning = lookalike_warning("content", old, new)
    assert warning is not None
    for ch in {c for c in new if not c.isascii()} - set(old):
        assert f"<U+{ord(ch):04X}>" in warning, warning  # the characters named as code points


@pytest.mark.parametrize("old, new", [
    ("日本語の文章です deploy", "日本語の説明です ship"),
    ("café: deploy to prod", "café: deploy to staging"),
    ("Make the build", "make the build, then tag"),  # a change of case beside a visible change: visible
    ("run the tests", "run the tests\nthen tag the release"),
    (LONG, LONG.replace("incident", "incidents", 1)),
])
def test_no_look_alike_warning_for_visible_changes(old: str, new: str) -> None:
    assert lookalike_warning("content", old, new) is None


# Review 34: token-by-token comparison is bounded (2,000 tokens a value); past it a changed block of lines was one
# window and the "reads like what it replaces" check never saw `./build` -> `. /build` (a space that now removes `.`)
# beside `dir` -> `directory`: at the end of ~125 adjacent changed lines (A), or after ~100 one-word edits (B).
RM_NOW = "pip install -r requirements.txt && rm -rf ./build  # clean the build dir"
RM_NEW = "pip install -r requirements.txt && rm -rf . /build  # clean the build directory"


def _budget_variant(kind: str, n: int) -> tuple[str, str]:
    if kind == "A":  # one block of adjacent changed lines
        return ("\n".join([f"step{i} run the job" for i in range(n)] + [RM_NOW]),
                "\n".join([f"step{i} runs the job" for i in range(n)] + [RM_NEW]))
    if kind == "B":  # separate one-word edits spend the budget first
        now = [line for i in range(n) for line in (f"keep {i}", f"step {i}: run the job now")]
        new = [line for i in range(n) for line in (f"keep {i}", f"step {i}: runs the job now")]
        return "\n".join([*now, RM_NOW]), "\n".join([*new, RM_NEW])
    # no word found once: the same lines repeated, the attacked one twice
    return ("\n".join(["run the job"] * n + [RM_NOW, RM_NOW]), "\n".join(["runs the job"] * n + [RM_NEW, RM_NEW]))


@pytest.mark.parametrize("kind, n", [("A", 130), ("A", 400), ("B", 100), ("B", 300), ("C", 300)])
def test_look_alike_warning_past_the_token_budget(kind: str, n: int) -> None:
    assert lookalike_warning("content", RM_NOW, RM_NEW) is not None  # alone, under the budget
    old, new = _budget_variant(kind, n)
    warning = lookalike_warning("content", old, new)
    assert warning is not None and "reads like what it replaces" in warning


# Review 35: past the budget the cuts fall on words found once; with none near the change, the window started and
# ended on two visible edits and a space moved between them (`./build` -> `. /build`) was not warned about.
_FILLER = "then rm -rf ./build/cache when the build runs " * 120  # every word occurs many times
_PROSE = " ".join(f"w{i}" for i in range(1200))  # words found once all around
_COMMON = "Earlier we ran rm -rf ./build by hand. "  # rm, rf, build occur again below


@pytest.mark.parametrize("old, new", [
    ("alpha " + _FILLER + "then rm -rf ./build/cache when the build runs " + _FILLER + "gamma",
     "beta " + _FILLER + "then rm -rf . /build/cache when the build runs " + _FILLER + "delta"),
    (_COMMON + _PROSE + " Cleanup: rm -rf ./build release. " + _PROSE[:50],
     _COMMON + _PROSE + " Cleanup; rm -rf . /build releases. " + _PROSE[:50]),
    ("alpha " + _FILLER + "then rm -rf ./build\ncache when the build runs " + _FILLER + "gamma",
     "beta " + _FILLER + "then rm -rf ./build cache when the build runs " + _FILLER + "delta"),  # a line break
])
def test_look_alike_warning_for_a_space_moved_between_two_visible_edits_past_the_budget(old: str, new: str) -> None:
    warning = lookalike_warning("content", old, new)
    assert warning is not None and "reads like what it replaces" in warning


def test_no_look_alike_warning_for_a_long_ordinary_rewrite_past_the_budget() -> None:
    old = "\n".join(f"line {i}: the build runs now" for i in range(3000))
    new = "\n".join(f"line {i}: a build ran today" for i in range(3000))
    assert lookalike_warning("content", old, new) is None
    old, new = _budget_variant("A", 400)
    assert lookalike_warning("content", old, new.replace(". /build", "./dist")) is None
    old = "alpha " + _FILLER + "then rm -rf ./build/cache when the build runs " + _FILLER + "gamma"
    assert lookalike_warning("content", old, old.replace("alpha", "beta").replace("gamma", "delta")) is None
    assert lookalike_warning("content", old, "beta " + old.replace(" ./build", " ./dist")) is None
