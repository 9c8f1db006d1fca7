"""The documentation says only what exists: every reference resolves, every CLI command is documented.

What counts as a reference to this repository (everything else is prose or an example, e.g. ``src/auth.py``):

* a markdown link ``[text](target)`` whose target is not a URL: resolved from the linking file's folder, it must
  exist inside the repository, and an ``#anchor`` must be a heading of the target markdown file (GitHub's slugs);
* inside inline code or a fenced code block, a path that starts with a top-level entry of the repository
  (``docs/``, ``synapse_nb/``, ``tests/``, ``notebooks/``, ``benchmarks/``, ``datasets/``, ``.ci/``,
  ``README.md``, ``pyproject.toml``): it must exist (a glob must match something), and a pytest id
  ``tests/x.py::name`` must name a function or class defined in that file;
* inside inline code, a dotted name ``synapse_nb.x.y``: it must import (module, then attributes), or be the name
  of a logger the package creates.
"""

from __future__ import annotations

import importlib
import re
import shutil
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC_FILES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])

_FENCE = re.compile(r"^(```|~~~)")
_INLINE = re.compile(r"(`+)(.+?)\1", re.S)
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_TOP_DIRS = ("docs", "synapse_nb", "tests", "notebooks", "benchmarks", "datasets", r"\.ci")
_TOP_FILES = (r"README\.md", r"pyproject\.toml")
_REPO_PATH = re.compile(
    r"(?<![\w./~,=-])((?:" + "|".join(_TOP_DIRS) + r")/[^\s`'\"(),;<>{}\[\]|]*|(?:" + "|".join(_TOP_FILES) + r")\b)")
_DOTTED = re.compile(r"(?<![\w./-])synapse_nb(?:\.[A-Za-z_]\w*)+")
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _split(text: str) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(prose blocks, fenced-code lines), each as (first line number, text).

    A prose block is a paragraph (inline code may wrap inside it, never across a blank line) or one table row.
    """
    blocks: list[tuple[int, str]] = []
    code: list[tuple[int, str]] = []
    fence: str | None = None
    para: list[str] = []
    start = 0

    def flush() -> None:
        nonlocal para
        if para:
            blocks.append((start, "\n".join(para)))
        para = []

    for no, line in enumerate(text.splitlines(), 1):
        m = _FENCE.match(line.lstrip())
        if m and (fence is None or m.group(1) == fence):
            flush()
            fence = m.group(1) if fence is None else None
            continue
        if fence:
            code.append((no, line))
        elif not line.strip() or line.lstrip().startswith("|"):
            flush()
            if line.strip():
                blocks.append((no, line))
        else:
            if not para:
                start = no
            para.append(line)
    flush()
    return blocks, code


def _slug(heading: str) -> str:
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link in a heading keeps its text
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors_of(text: str) -> set[str]:
    """The anchors GitHub gives the headings of a markdown text (duplicates get -1, -2, ...)."""
    blocks, _ = _split(text)
    seen: dict[str, int] = {}
    out: set[str] = set()
    for _, block in blocks:
        for line in block.splitlines():
            m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            slug = _slug(m.group(1))
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def references(text: str) -> Iterator[tuple[int, str, str]]:
    """(line, kind, reference) for every checked reference in a markdown text; kind is link, path or name."""
    blocks, code = _split(text)
    for first, block in blocks:
        for m in _INLINE.finditer(block):
            no = first + block[:m.start()].count("\n")
            for p in _REPO_PATH.finditer(m.group(2)):
                yield no, "path", p.group(1)
            for d in _DOTTED.finditer(m.group(2)):
                yield no, "name", d.group(0)
        outside = _INLINE.sub(lambda m: " " * len(m.group(0)), block)
        for m in _LINK.finditer(outside):
            yield first + outside[:m.start()].count("\n"), "link", m.group(1)
    for no, line in code:
        for m in _REPO_PATH.finditer(line):
            yield no, "path", m.group(1)


def _inside_repo(path: Path) -> bool:
    try:
        path.resolve().relative_to(ROOT)
    except ValueError:
        return False
    return True


def check_link(doc: Path, target: str, own_anchors: set[str]) -> str | None:
    """Why the link is broken, or None (``own_anchors``: the anchors of ``doc`` itself)."""
    if _SCHEME.match(target):
        return None  # http:, https:, mailto: ...
    path_part, _, anchor = target.partition("#")
    if not path_part:
        return None if anchor in own_anchors else f"{target}: no heading with anchor #{anchor} in this file"
    dest = doc.parent / path_part
    if not _inside_repo(dest):
        return f"{target} points outside the repository"
    if not dest.exists():
        return f"{target}: no such file or folder ({_rel(dest.resolve())})"
    if anchor:
        if dest.suffix != ".md" or dest.is_dir():
            return f"{target}: an anchor on a file that is not markdown"
        if anchor not in anchors_of(dest.read_text(encoding="utf-8")):
            return f"{target}: no heading with anchor #{anchor} in {_rel(dest.resolve())}"
    return None


def _generated() -> set[str]:
    """Paths the repository's .gitignore names literally: folders a run creates, which a fresh clone lacks."""
    lines = (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    return {ln.strip() for ln in lines if ln.strip() and not ln.startswith("#") and not any(c in ln for c in "*?[!")}


def check_path(ref: str) -> str | None:
    """Why a repository path (maybe a glob, maybe a pytest id) does not resolve, or None."""
    ref = ref.rstrip(".,:")
    file_part, *names = ref.split("::")
    if any(c in file_part for c in "*?["):
        return None if any(ROOT.glob(file_part)) else f"{ref}: the glob matches nothing"
    target = ROOT / file_part
    if not target.exists():
        if file_part in _generated():
            return None  # output a run writes (git-ignored), e.g. the browser suite's screenshots
        return f"{ref}: no such file or folder"
    if file_part.endswith("/") and not target.is_dir():
        return f"{ref}: not a folder"
    if names:
        source = target.read_text(encoding="utf-8")
        for name in names:
            bare = name.split("[", 1)[0]  # a parametrised id: test_x[case]
            if not re.search(rf"^\s*(?:async\s+)?(?:def|class)\s+{re.escape(bare)}\b", source, re.M):
                return f"{ref}: {file_part} defines no {bare}"
    return None


def _loggers() -> set[str]:
    names: set[str] = set()
    for py in (ROOT / "synapse_nb").rglob("*.py"):
        names.update(re.findall(r"getLogger\(\s*[\"']([\w.]+)[\"']", py.read_text(encoding="utf-8")))
    return names


def check_name(name: str, loggers: set[str]) -> str | None:
    """Why ``synapse_nb.x.y`` does not resolve to a module, an attribute or a logger, or None."""
    if name in loggers:
        return None
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            with warnings.catch_warnings():  # a deprecated alias module the docs name as such still resolves
                warnings.simplefilter("ignore", DeprecationWarning)
                obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return f"{name}: {'.'.join(parts[:i])} has no attribute {attr!r}"
            obj = getattr(obj, attr)
        return None
    return f"{name}: not importable"


def broken_references(doc: Path, text: str | None = None) -> list[str]:
    """Every reference of ``doc`` (or of ``text``, as if it were ``doc``) that does not resolve."""
    text = doc.read_text(encoding="utf-8") if text is None else text
    loggers = _loggers()
    own = anchors_of(text)
    out = []
    for no, kind, ref in references(text):
        if kind == "link":
            why = check_link(doc, ref, own)
        elif kind == "path":
            why = check_path(ref)
        else:
            why = check_name(ref, loggers)
        if why:
            out.append(f"{_rel(doc)}:{no}: {why}")
    return out


# ------------------------------------------------------------------------------------------------ tests
def test_docs_exist_and_are_found() -> None:
    names = {_rel(p) for p in DOC_FILES}
    assert {"README.md", "docs/architecture.md", "docs/cli.md", "docs/benchmarks.md"} <= names


@pytest.mark.parametrize("doc", DOC_FILES, ids=_rel)
def test_every_reference_resolves(doc: Path) -> None:
    assert broken_references(doc) == []


def test_the_checker_finds_broken_references() -> None:
    """The rules above catch each kind of broken reference, and leave examples and URLs alone."""
    doc = ROOT / "docs" / "_probe.md"  # never written: only its folder matters for relative links
    text = "\n".join([
        "# Title",
        "",
        "[ok](cli.md) [ok](cli.md#commands) [ok](#title) [ok](https://example.org/x) [ok](../README.md)",
        "`src/auth.py` `~/.synapse` `/tmp/x` `.synapse/index/` `<vault>/hook.lock` `docs/cli.md` `tests/`",
        "`tests/test_docs.py::test_the_checker_finds_broken_references` `synapse_nb/kinds/*.py`",
        "`synapse_nb.recall.Bars` `synapse_nb.watch` `--files src/a.py,tests/example_only.py`",
        "",
        "[bad](nosuch.md) [bad](cli.md#no-such-heading) [bad](#nowhere) [bad](../../outside.md)",
        "`docs/nosuch.md` `tests/test_docs.py::test_nosuch` `synapse_nb/nosuch/*.py` `synapse_nb.recall.NoSuch`",
        "| `a wrapped span in a table row is still one row` | `benchmarks/nosuch_in_a_table.py` |",
        "",
        "```bash",
        "python benchmarks/nosuch.py --flag   # a command in a fenced block is checked too",
        "cp src/example.py /tmp/   # examples outside the repository are not",
        "```",
    ])
    broken = broken_references(doc, text)
    expected = ("nosuch.md: no such file", "#no-such-heading", "#nowhere", "outside the repository",
                "docs/nosuch.md", "defines no test_nosuch", "glob matches nothing", "no attribute 'NoSuch'",
                "benchmarks/nosuch_in_a_table.py", "benchmarks/nosuch.py")
    assert len(broken) == len(expected), broken
    for needle in expected:
        assert any(needle in b for b in broken), (needle, broken)
    assert any(b.startswith("docs/_probe.md:8: ") for b in broken), broken  # line numbers point at the line


def test_slugs_follow_github() -> None:
    assert _slug("Retrieval index (LanceDB)") == "retrieval-index-lancedb"
    assert _slug("Choosing the vector search (decision 0004)") == "choosing-the-vector-search-decision-0004"
    assert _slug("0004 — The `index`: exact") == "0004--the-index-exact"


# ------------------------------------------------------------------------------------------------ the CLI
def _cli_commands() -> list[tuple[str, list[str]]]:
    """(command path, its long options) for every leaf command of ``synapse-nb``."""
    import typer

    from synapse_nb.cli import app

    out: list[tuple[str, list[str]]] = []

    def walk(cmd, path: str) -> None:  # type: ignore[no-untyped-def]
        subs = getattr(cmd, "commands", None)
        if subs:
            for name in sorted(subs):
                if not subs[name].hidden:
                    walk(subs[name], f"{path} {name}")
            return
        opts = [next((o for o in p.opts if o.startswith("--")), p.opts[0]) for p in cmd.params
                if p.param_type_name == "option" and not getattr(p, "hidden", False)]
        out.append((path, [o for o in opts if o != "--help"]))

    walk(typer.main.get_command(app), "synapse-nb")
    return out


def _cli_rows() -> list[str]:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.startswith("| `synapse-nb")]


def _rows_for(path: str, rows: list[str]) -> list[str]:
    """Table rows whose first cell shows ``path`` as a command (followed by a space or the end of the code)."""
    pat = re.compile(rf"`{re.escape(path)}(?=[ `])")
    return [r for r in rows if pat.search(r.split(" | ", 1)[0])]


def test_every_cli_command_and_option_is_in_cli_md() -> None:
    commands = _cli_commands()
    assert len(commands) > 20 and ("synapse-nb memory verify", ["--confidence", "--fix", "--yes", "--json"]) in commands
    rows = _cli_rows()
    missing = []
    for path, options in commands:
        mine = _rows_for(path, rows)
        if not mine:
            missing.append(f"{path}: no row in the commands table of docs/cli.md")
            continue
        for opt in options:
            if not any(re.search(rf"{re.escape(opt)}(?![\w-])", r) for r in mine):
                missing.append(f"{path}: option {opt} is not documented in its row")
    assert missing == []


def test_global_options_are_in_cli_md() -> None:
    import typer

    from synapse_nb.cli import app

    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    bullet = next(line for line in text.split("\n- ") if line.startswith("Global options"))
    for p in typer.main.get_command(app).params:
        long = next(o for o in p.opts if o.startswith("--"))
        assert f"`{long}" in bullet, long


def test_the_commands_without_json_are_the_ones_cli_md_names() -> None:
    """docs/cli.md: "`--json` on every command that prints records or a report (all but ...)": the list is exact."""
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    bullet = next(b for b in text.split("\n- ") if b.startswith("`--json` on every command"))
    named: set[str] = set()
    for name in re.findall(r"`([^`]+)`", bullet.split("(all but", 1)[1].split(")", 1)[0]):
        head, _, tail = name.rpartition(" ")
        named.update(f"synapse-nb {head} {w}".replace("  ", " ").strip() for w in tail.split("/"))
    without = {path for path, options in _cli_commands() if "--json" not in options}
    assert named == without


def test_cli_doc_check_fails_for_an_undocumented_command() -> None:
    rows = _cli_rows()
    assert _rows_for("synapse-nb memory verify", rows)
    assert not _rows_for("synapse-nb memory nosuch", rows)
    assert not _rows_for("synapse-nb memory", [r for r in rows if "memory" not in r])


# ------------------------------------------------------------------------------------------------ notebooks
def test_jupyter_execute_runs_a_notebook(tmp_path: Path) -> None:
    """docs/notebook.md tells people to re-execute notebooks with ``jupyter execute``: it must work here."""
    import nbformat

    jupyter = Path(sys.executable).with_name("jupyter")
    exe = str(jupyter) if jupyter.exists() else shutil.which("jupyter")
    assert exe, "the test extras must install jupyter (nbclient's `jupyter execute`)"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 7)")])
    path = tmp_path / "probe.ipynb"
    nbformat.write(nb, path)
    done = subprocess.run([exe, "execute", "--inplace", str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    outputs = nbformat.read(path, as_version=4).cells[0].outputs
    assert [o.get("text") for o in outputs] == ["42\n"]
    assert "jupyter execute --inplace" in (ROOT / "docs" / "notebook.md").read_text(encoding="utf-8")


def _taste() -> str:
    """The README's first Python snippet ("A taste")."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return text.split("## A taste", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]


@pytest.mark.parametrize("where", ["outside git", "git, no commit yet"])
def test_the_readmes_taste_runs_in_a_fresh_folder(where: str, tmp_path: Path) -> None:
    """Review 68 F4: run in a fresh folder, the snippet wrote three records, then raised GitError at lessons.scan()."""
    if where != "outside git":
        subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, capture_output=True)
    code = _taste() + "\nprint('NOTE:', v.lessons.scan().note)\n"
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert "project/project_status: v1.5 deployed" in res.stdout
    assert "kept   score cover  kind" in res.stdout  # explain() printed (review 78: a bare r.explain() showed nothing)
    said = "is not inside a git repository" if where == "outside git" else "has no commits yet"
    assert f"NOTE: {tmp_path} {said}: no reverts to scan" in res.stdout


def test_docs_api_lists_every_exported_name_and_its_example_runs(tmp_path: Path) -> None:
    """Review 78 F7: AmbiguousIdError, NotFoundError, QueryError, Episode and Note were in no doc."""
    import synapse_nb

    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^- `(\w+)[`(]", text, re.M)) | set(re.findall(r"[;/] `(\w+)`", text))
    assert set(synapse_nb.__all__) <= listed, set(synapse_nb.__all__) - listed
    assert "](docs/api.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
    example = text.split("```python\n", 1)[1].split("```", 1)[0]
    code = ("import doctest, sys\nt = doctest.DocTestParser().get_doctest(sys.stdin.read(), {}, 'api.md', None, 0)\n"
            "r = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)\nr.run(t)\nsys.exit(1 if r.failures else 0)\n")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    res = subprocess.run([sys.executable, "-c", code], input=example, cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0 and (tmp_path / ".synapse").is_dir(), res.stdout + res.stderr
