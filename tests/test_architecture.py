"""The structure rules of synapse_nb, read from the code with ``ast`` (see docs/architecture.md).

1. No import cycle among ``synapse_nb`` modules, counting imports inside functions (imports under
   ``if TYPE_CHECKING:`` may point anywhere).
2. No SQL outside ``synapse_nb/store/``: no ``.execute(`` / ``.executemany(`` calls and no SQL statement strings.
3. ``gate/`` imports nothing from the package but ``errors`` and ``text``, and does no I/O.
4. ``store/`` imports neither ``gate`` nor ``recall``.
5. Surfaces (cli, magics, widgets, mcp, demo, the git hook entry) import neither ``store`` nor private names
   (``_x``) of other modules.
6. No module over 600 lines (the CLI too: ``synapse_nb/cli/`` holds one module per command group).
7. The kinds are listed once (``models.KINDS``).
8. One SQL layer under both backends: ``store/postgres`` imports nothing from ``store/sqlite`` and vice versa (not
   even for type checking), and neither imports or reads a private name (``_x``) of ``store/sql``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "synapse_nb"
MAX_LINES = 600
#: modules allowed over MAX_LINES, and why (none: the CLI is a package of one module per command group)
LONG_OK: dict[str, str] = {}
SURFACES = ("synapse_nb.cli", "synapse_nb.magics", "synapse_nb.widgets", "synapse_nb.mcp", "synapse_nb.demo",
            "synapse_nb.gitscope.githook", "synapse_nb.agents.handlers", "synapse_nb.agents.hooks",
            "synapse_nb.__main__")
GATE_MAY_IMPORT = {"synapse_nb.errors", "synapse_nb.text"}
#: I/O a pure module must not do (names called or imported)
IO_NAMES = {"open", "sqlite3", "subprocess", "socket", "urllib", "requests", "lancedb", "pathlib", "os"}
_SQL = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|PRAGMA|WITH|BEGIN|COMMIT|ROLLBACK|REPLACE)\b"
                  r"[\s\S]*\b(FROM|INTO|SET|TABLE|INDEX|TRIGGER|VIEW|user_version|journal_mode|TRANSACTION|AS|"
                  r"WHERE|VALUES)\b", re.IGNORECASE)


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


@dataclass(frozen=True)
class Import:
    source: str  # importing module
    target: str  # imported module (resolved; ``synapse_nb.x.y``)
    names: tuple[str, ...]
    line: int
    type_checking: bool


def _modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PKG.rglob("*.py"))}


MODULES = _modules()


def _resolve(source: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = source.split(".")
    if not is_pkg:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _known(name: str) -> str | None:
    """The synapse_nb module an import of ``name`` loads (a submodule, or the package that defines it)."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _parent_packages(mod: str) -> list[str]:
    """Importing a.b.c runs a/b/__init__ too (the root package excepted)."""
    parts = mod.split(".")
    return [".".join(parts[:i]) for i in range(2, len(parts)) if ".".join(parts[:i]) in MODULES]


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else test.attr if isinstance(test, ast.Attribute) else ""
            if name == "TYPE_CHECKING":
                for child in node.body:
                    for sub in ast.walk(child):
                        if hasattr(sub, "lineno"):
                            lines.add(sub.lineno)
    return lines


def _dynamic_import(node: ast.Call) -> bool:
    f = node.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
    return name in ("import_module", "__import__")


def imports_of(mod: str) -> Iterator[Import]:
    path = MODULES[mod]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    tc = _type_checking_lines(tree)
    is_pkg = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _known(alias.name) if alias.name.startswith("synapse_nb") else None
                if target:
                    yield Import(mod, target, (), node.lineno, node.lineno in tc)
        elif isinstance(node, ast.Call) and _dynamic_import(node):
            arg = node.args[0] if node.args else None
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and _known(arg.value):
                yield Import(mod, _known(arg.value) or "", (), node.lineno, node.lineno in tc)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(mod, is_pkg, node)
            if not base.startswith("synapse_nb"):
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                target = sub if sub in MODULES else _known(base)
                if target:
                    names = () if sub in MODULES else (alias.name,)
                    yield Import(mod, target, names, node.lineno, node.lineno in tc)


def _edges(mod: str) -> list[Import]:
    """Run-time imports of ``mod``; importing ``a.b.c`` also runs the package ``a.b``'s ``__init__``
    (the root ``synapse_nb/__init__`` is left out: it only re-exports the public API)."""
    out = []
    for imp in imports_of(mod):
        if imp.type_checking:
            continue
        for target in (*_parent_packages(imp.target), imp.target):
            if target != mod and not mod.startswith(target + "."):
                out.append(Import(mod, target, imp.names, imp.line, False))
    return out


GRAPH = {mod: _edges(mod) for mod in MODULES}


def _cycles() -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for imp in GRAPH[v]:
            w = imp.target
            # importing a package runs its __init__: count that edge too (done by _known already)
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    return out


def test_rule_1_no_import_cycles() -> None:
    cycles = _cycles()
    assert not cycles, "import cycles (module sets that import each other):\n" + "\n".join(
        " <-> ".join(c) for c in cycles)


def test_no_hidden_imports() -> None:
    """A dynamic import of a computed name hides an arrow from rule 1; only package ``__init__`` lazy
    exports of their own submodules may compute the name."""
    bad = []
    for _, path in sorted(MODULES.items()):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and _dynamic_import(node):
                arg = node.args[0] if node.args else None
                literal = isinstance(arg, ast.Constant) and isinstance(arg.value, str)
                if not literal and path.name != "__init__.py":
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not bad, "imports of computed module names (use a plain import):\n" + "\n".join(bad)


def _in(mod: str, *prefixes: str) -> bool:
    return any(mod == p or mod.startswith(p + ".") for p in prefixes)


def _sql_strings(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            if _SQL.match(node.value):
                found.append((node.lineno, node.value[:60]))
        elif isinstance(node, ast.JoinedStr):
            text = "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
            if _SQL.match(text):
                found.append((node.lineno, text[:60]))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                "execute", "executemany", "executescript"):
            found.append((node.lineno, f".{node.func.attr}("))
    return found


def test_rule_2_no_sql_outside_store() -> None:
    bad = [f"{MODULES[m].relative_to(ROOT)}:{line}: {text!r}" for m in sorted(MODULES)
           if not _in(m, "synapse_nb.store") for line, text in _sql_strings(MODULES[m])]
    assert not bad, "SQL outside synapse_nb/store/:\n" + "\n".join(bad)


def test_rule_3_gate_is_pure() -> None:
    bad = []
    for m in sorted(MODULES):
        if not _in(m, "synapse_nb.gate"):
            continue
        for imp in imports_of(m):
            if not imp.type_checking and not _in(imp.target, "synapse_nb.gate") and imp.target not in GATE_MAY_IMPORT:
                bad.append(f"{m}:{imp.line} imports {imp.target}")
        tree = ast.parse(MODULES[m].read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom)
                                                         and node.module else [])
                for n in names:
                    if n.split(".")[0] in IO_NAMES:
                        bad.append(f"{m}:{node.lineno} imports {n} (I/O)")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open":
                bad.append(f"{m}:{node.lineno} calls open()")
    assert not bad, "gate/ must import only errors and text, and do no I/O:\n" + "\n".join(bad)


def test_rule_4_store_does_not_import_gate_or_recall() -> None:
    bad = [f"{m}:{imp.line} imports {imp.target}" for m in sorted(MODULES) if _in(m, "synapse_nb.store")
           for imp in imports_of(m)
           if not imp.type_checking and _in(imp.target, "synapse_nb.gate", "synapse_nb.recall")]
    assert not bad, "\n".join(bad)


def test_rule_5_surfaces_use_the_public_api() -> None:
    bad = []
    for m in sorted(MODULES):
        if not _in(m, *SURFACES):
            continue
        for imp in imports_of(m):
            if _in(imp.target, *SURFACES) and (_in(imp.target, m.rsplit(".", 1)[0]) or imp.target.startswith(m)):
                continue  # a surface's own private helpers
            if _in(imp.target, "synapse_nb.store"):
                bad.append(f"{m}:{imp.line} imports {imp.target}")
            private_mod = any(p.startswith("_") and p not in ("__init__", "__main__", "__version__")
                              for p in imp.target.split("."))
            private_names = [n for n in imp.names if n.startswith("_") and n != "__version__"]
            if (private_mod and not imp.target.endswith("_version")) or private_names:
                bad.append(f"{m}:{imp.line} imports private {imp.target} {private_names or ''}")
    assert not bad, "surfaces must use the public API only:\n" + "\n".join(bad)


@pytest.mark.parametrize("mod", sorted(MODULES))
def test_rule_6_module_size(mod: str) -> None:
    n = len(MODULES[mod].read_text(encoding="utf-8").splitlines())
    if mod in LONG_OK:
        return
    assert n <= MAX_LINES, f"{MODULES[mod].relative_to(ROOT)} has {n} lines (at most {MAX_LINES}): split it by job"


def test_rule_checker_sees_a_cycle(tmp_path: Path) -> None:
    """The cycle finder itself works: a planted two-module cycle is reported."""
    global GRAPH
    saved = GRAPH
    try:
        GRAPH = {"a": [Import("a", "b", (), 1, False)], "b": [Import("b", "a", (), 1, False)], "c": []}
        assert _cycles() == [["a", "b"]]
    finally:
        GRAPH = saved


# -- 7. one registry of kinds ---------------------------------------------------------------------------------------
KIND_WORDS = frozenset({"memory", "checkpoint", "decision", "lesson", "episode", "note"})
#: where the kinds are listed: the registry itself
KINDS_LISTED_IN = {"synapse_nb.models"}


def kind_lists(tree: ast.AST) -> Iterator[tuple[int, list[str]]]:
    """Literal collections (tuple, list, set, dict keys) naming three or more record kinds."""
    for node in ast.walk(tree):
        elts: list[ast.expr | None] = []
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            elts = list(node.elts)
        elif isinstance(node, ast.Dict):
            elts = list(node.keys)
        names = sorted({e.value for e in elts if isinstance(e, ast.Constant) and e.value in KIND_WORDS})
        if len(names) >= 3:
            yield node.lineno, names


def test_rule_7_the_kinds_are_listed_once() -> None:
    """Every list of kinds (tables, export order, recall's groups, MCP and CLI choices) derives from
    ``models.KINDS``: no other module spells three or more kinds out in a literal."""
    found = [f"{mod}:{line} {names}" for mod, path in MODULES.items() if mod not in KINDS_LISTED_IN
             for line, names in kind_lists(ast.parse(path.read_text(encoding="utf-8")))]
    assert not found, ("kinds listed outside the registry (derive them from synapse_nb.models.KINDS):\n"
                       + "\n".join(found))


def test_rule_7_checker_sees_a_list() -> None:
    assert [n for _, n in kind_lists(ast.parse('X = ("memory", "note", "lesson")\nY = {"episode": 1}'))] == [
        ["lesson", "memory", "note"]]


def test_a_new_kind_is_one_registry_line_a_manager_and_its_sql() -> None:
    """The registry's derived lists follow it: every kind has a manager, a record type with its prefix, columns
    that the stores export, and a table in each backend; recall ranks the registry's ranked kinds, in its order."""
    from synapse_nb.kinds.registry import MANAGERS
    from synapse_nb.mcp._schema import SEARCH_KINDS
    from synapse_nb.models import KIND_NAMES, KINDS, RANKED_KINDS, kind_of_id
    from synapse_nb.recall.types import KIND_ORDER
    from synapse_nb.store.records import EXPORT_FIELDS
    from synapse_nb.store.sqlite import SqliteStore
    from synapse_nb.transfer import KINDS as EXPORT_ORDER

    assert tuple(MANAGERS) == KIND_NAMES and len(set(KIND_NAMES)) == len(KINDS)
    assert all(MANAGERS[k.name].record_cls is k.record and k.record.kind == k.name for k in KINDS)
    assert all(kind_of_id(f"{k.prefix}_3f9a0c12be47") == k.name for k in KINDS)
    assert KIND_ORDER == RANKED_KINDS == tuple(k.name for k in KINDS if k.ranked)
    assert set(EXPORT_FIELDS) == set(EXPORT_ORDER) == set(KIND_NAMES) and SEARCH_KINDS[1:] == KIND_NAMES
    store = SqliteStore(":memory:")
    try:
        assert all(store.table(k.name).kind == k.name for k in KINDS)
    finally:
        store.close()


# -- 8. one SQL layer under both backends ----------------------------------------------------------------------------
BACKENDS = ("synapse_nb.store.sqlite", "synapse_nb.store.postgres")
SHARED_SQL = "synapse_nb.store.sql"


def backend_crossings(mod: str, tree: ast.Module, *, is_pkg: bool = False) -> list[str]:
    """What a backend module takes that it may not: anything of the other backend, any private name or private
    module of the shared SQL layer (imported, or read through an imported module: ``shared._x``)."""
    own = next((b for b in BACKENDS if _in(mod, b)), None)
    if own is None:
        return []
    other = next(b for b in BACKENDS if b != own)
    bad: list[str] = []
    aliases: set[str] = set()  # names bound to a module of the shared layer
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            pairs = [(a.name, None, a.asname) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(mod, is_pkg, node)
            pairs = [(base, a.name, a.asname) for a in node.names]
        else:
            continue
        for base, name, asname in pairs:
            full = f"{base}.{name}" if name else base
            if _in(base, other) or _in(full, other):
                bad.append(f"{mod}:{node.lineno} imports {full} (the other backend)")
            if _in(full, SHARED_SQL) or _in(base, SHARED_SQL):
                parts = full[len(SHARED_SQL):].split(".")
                if any(p.startswith("_") and p != "__init__" for p in parts):
                    bad.append(f"{mod}:{node.lineno} imports {full} (a private name of store/sql)")
                elif name is None or full in MODULES:
                    aliases.add(asname or (name if name else base.split(".")[0]))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            bad.append(f"{mod}:{node.lineno} reads {node.value.id}.{node.attr} (a private name of store/sql)")
    return bad


def test_rule_8_one_sql_layer_under_both_backends() -> None:
    """Both backends share their SQL through ``store/sql`` and its public names only: neither reaches into the
    other (SQLite is no base class of PostgreSQL's code), so each can change without breaking the other."""
    bad = [line for mod, path in sorted(MODULES.items())
           for line in backend_crossings(mod, ast.parse(path.read_text(encoding="utf-8")),
                                         is_pkg=path.name == "__init__.py")]
    assert not bad, "the backends meet only in synapse_nb/store/sql (public names):\n" + "\n".join(bad)


def test_rule_8_checker_sees_a_crossing() -> None:
    planted = ast.parse("from synapse_nb.store.sqlite import tables as lite\n"
                        "from synapse_nb.store.sql.tables import _memory_where, MemoriesTable\n"
                        "from synapse_nb.store.sql import tables as shared\n"
                        "from ..sqlite.db import Database\n"
                        "from synapse_nb.store import sql\n"
                        "x = shared._as_is, shared.MemoriesTable, lite.MemoriesTable, sql.marks, sql._y\n")
    got = backend_crossings("synapse_nb.store.postgres.tables", planted)
    assert [g.split(" ", 1)[0] for g in got] == ["synapse_nb.store.postgres.tables:1",
                                                  "synapse_nb.store.postgres.tables:2",
                                                  "synapse_nb.store.postgres.tables:4",
                                                  "synapse_nb.store.postgres.tables:6",
                                                  "synapse_nb.store.postgres.tables:6"], got
    assert "shared._as_is" in " ".join(got[3:]) and "sql._y" in " ".join(got[3:]) and "(the other backend)" in got[2]
    assert backend_crossings("synapse_nb.store.sqlite.db", ast.parse("from synapse_nb.store.sql import marks")) == []
