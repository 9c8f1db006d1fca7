"""The server's checks of an agent's values do not depend on the database's locale (migration 21's tag rule).

The test server's databases are created with collation and ctype "C"; a team server's are often "*.UTF-8". Under "C"
PostgreSQL's ``lower()`` changes ASCII letters alone and ``[[:space:]]`` takes ASCII spaces alone; under C.UTF-8 they
follow the C library's tables. So the tag rule (``s ~ '[[:space:]]' OR s <> lower(s)``) stored an agent's tag
"ΣΟΦΙΑ" on one server and refused it on the other, and on both stored "a<U+00A0>b", which check_tags refuses. Each
test runs the same writes on a database of each locale and holds the outcomes equal (and equal to Python's rules).
"""

from __future__ import annotations

import subprocess
import unicodedata
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

import synapse_nb as syn
from synapse_nb.errors import SynapseError
from synapse_nb.store.postgres.migrate import migrate

#: Words an honest agent may tag with (check_tags lower-cases them: "İstanbul" -> "i̇stanbul", "ΣΟΦΙΑ" -> "σοφια"),
#: Turkish dotless ı, a title-case digraph, Cherokee capitals and small letters, Deseret, Roman numerals, circled
#: letters; and what check_tags refuses (a no-break space, a line separator, U+2007).
WORDS = ["İstanbul", "straße", "ΣΟΦΙΑ", "ΣΟΦΟΣ", "ǅemal", "ırmak", "ᎠᏍᎦᏯ", "ꭰꮝ", "𐐀𐐨", "Ⅻ", "Ⓐⓑ", "ǰ",
         "a\u00a0b", "a\u2028b", "a\u2007b"]
#: Tags an agent's own SQL may store: what check_tags leaves (lower-case, one word) and what it never does.
RAW_TAGS = ["σοφια", "σοφος", "i\u0307stanbul", "straße", "ǆemal", "ırmak", "ꭰꮝ", "𐐨", "ⅻ", "ⓐ", "ǰ",
            "ΣΟΦΙΑ", "İstanbul", "ǅemal", "ᎠᏍ", "𐐀", "Ⅻ", "Ⓐ", "ẞ", "a\u00a0b", "a\u2007b", "a\u202fb", "a\u3000b",
            "a\u1680b"]


def utf8_locale() -> str | None:
    """A UTF-8 locale of this machine (C.UTF-8 first), or None."""
    try:
        names = subprocess.run(["locale", "-a"], capture_output=True, text=True, timeout=10).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return None
    utf8 = [n for n in names if n.lower().replace("-", "").endswith(".utf8")]
    return next((n for n in utf8 if n.lower().startswith("c.")), utf8[0] if utf8 else None)


def on_database(url: str, db: str) -> str:
    """The same URL on another database (keeping ``?project=``)."""
    base, _, query = url.partition("?")
    return base.rsplit("/", 1)[0] + f"/{db}" + (f"?{query}" if query else "")


@pytest.fixture()
def databases(pg_admin_url: str, project: str, logins: dict[str, str]) -> Iterator[dict[str, dict[str, str]]]:
    """The project's logins on the session's database (collation "C") and on a new database of a UTF-8 locale,
    migrated to the same version, the agent login granted every mind there too."""
    loc = utf8_locale()
    if loc is None:
        pytest.skip("no UTF-8 locale on this machine (locale -a)")
    db = f"loc_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        c.execute(f"CREATE DATABASE {db} TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE '{loc}' LC_CTYPE '{loc}'")
    try:
        with psycopg.connect(on_database(pg_admin_url, db), autocommit=True) as c:
            migrate(c, project)
            c.execute(f"INSERT INTO {project}.mind_grants(grantee, mind) VALUES (%s, '*') ON CONFLICT DO NOTHING",
                      (f"{project}_agent_login",))
            row = c.execute("SELECT datctype FROM pg_database WHERE datname = current_database()").fetchone()
            assert row is not None and row[0] == loc
        yield {"C": dict(logins), loc: {who: on_database(url, db) for who, url in logins.items()}}
    finally:
        with psycopg.connect(pg_admin_url, autocommit=True) as c:
            c.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")


def outcome(write: Callable[..., Any], *args: Any, **kw: Any) -> str:
    """How ``write(*args, **kw)`` ended: "stored", or refused by the package or by the server."""
    try:
        write(*args, **kw)
    except SynapseError as exc:
        return f"refused: {type(exc).__name__}"
    except psycopg.Error as exc:
        return f"refused by the server: {type(exc).__name__}"
    return "stored"


def test_honest_agent_writes_pass_whatever_the_servers_locale(databases: dict[str, dict[str, str]],
                                                              machine: Callable[..., syn.Vault]) -> None:
    """The tags and texts the package writes for an agent (tags lower-cased by check_tags, text with Turkish,
    Greek, Cherokee and Deseret letters) are stored on both databases, and what the package refuses is refused on
    both: the same outcome, write by write, through the agent login's own connection."""
    seen: dict[str, list[tuple[str, str]]] = {}
    for loc, urls in databases.items():
        agent = machine(f"agent_{loc}", urls["agent"], actor="agent")
        human = machine(f"human_{loc}", urls["human"])
        got = seen[loc] = []
        for i, word in enumerate(WORDS):
            theirs = human.remember("procedure", f"deploy_{i}", "make deploy")
            got.append((f"memory tags {word!r}", outcome(agent.memories.remember,
                "project", f"k{i}", f"{word} i\u0307 ς \u00a0 text", tags=[word, "ok"])))
            got.append((f"decision {word!r}", outcome(agent.decisions.create,
                f"use {word}", rationale=f"{word}\nsecond line", tags=word)))
            got.append((f"checkpoint {word!r}", outcome(agent.checkpoints.create,
                f"porting {word}", files=[f"src/{word}.py"], next_step=word)))
            got.append((f"episode {word!r}", outcome(agent.episodes.log,
                f"task {word}", outcome=word, refs=[f"docs/{word}.md"], thread=f"t{i}")))
            got.append((f"proposal {word!r}", outcome(agent.memories.update,  # a revision (migration 22)
                theirs.id, content=f"make deploy {word}", tags=[word])))
        own = agent.memories.remember("project", "own", "mine", tags=["σοφια"])
        got.append(("history of an own memory", outcome(agent.memories.update,  # a history entry's before
            own.id, content="mine, changed", tags=["i\u0307stanbul", "ꭰꮝ"])))
    first, second = seen.values()
    assert first == second
    honest = [what for what, _ in first[:5 * 12]] + [first[-1][0]]  # the twelve words Python takes; the history
    assert set(honest) <= {what for what, result in first if result == "stored"}
    assert {result for _, result in first} == {"stored", "refused: ValidationError"}  # never the server's refusal


def test_an_agents_tag_is_judged_alike_under_every_locale(databases: dict[str, dict[str, str]]) -> None:
    """An agent login's own SQL: a tag is stored exactly when check_tags would leave it as it is (lower-case by
    str.lower, no character str.isspace takes), on the "C" database and the UTF-8 one alike. Before, "ΣΟΦΙΑ",
    "İstanbul" and "Ⅻ" were stored under "C" and refused under C.UTF-8, and "a<U+00A0>b" stored on both."""
    verdicts: dict[str, list[tuple[str, str]]] = {}
    for loc, urls in databases.items():
        project = urls["agent"].partition("project=")[2]
        with psycopg.connect(urls["agent"].split("?")[0], autocommit=True) as c:
            c.execute(f"SET search_path = {project}")
            got = verdicts[loc] = []
            for i, tag in enumerate(RAW_TAGS):
                row = c.execute("SELECT next_stamp()").fetchone()
                assert row is not None
                got.append((tag, outcome(c.execute,
                    "INSERT INTO memories(id, mind, category, key, content, tags, priority, source, verified, "
                    "confidence, created_at, updated_at, terms) VALUES (%s, 'default', 'project', %s, 'c', "
                    "jsonb_build_array(%s::text)::text, 2, 'agent', 0, 0.5, %s, %s, '{c}')",
                    (f"mem_loc{i}", f"k{i}", tag, row[0], row[0]))))
    python = [(tag, "stored" if tag == tag.lower() and not any(ch.isspace() for ch in tag)
               else "refused by the server: InsufficientPrivilege") for tag in RAW_TAGS]
    for loc, got in verdicts.items():
        assert got == python, loc


def test_the_servers_tag_classes_are_pythons(databases: dict[str, dict[str, str]]) -> None:
    """_upper_class() holds the characters str.lower changes (of Python 3.11's Unicode 14, the oldest the package
    runs on: a newer Python's list holds it), _space_class() those str.isspace takes, matched alike under both
    locales: no tag check_tags leaves is refused."""
    chars = [chr(o) for o in range(1, 0x110000) if not 0xD800 <= o <= 0xDFFF]
    upper = {ch for ch in chars if ch.lower() != ch}
    space = {ch for ch in chars if ch.isspace()}
    for urls in databases.values():
        with psycopg.connect(urls["agent"].split("?")[0], autocommit=True) as c:
            c.execute(f"SET search_path = {urls['agent'].partition('project=')[2]}")
            rows = c.execute("SELECT s ~ _upper_class(), s ~ _space_class() FROM unnest(%s::text[]) s",
                             (chars,)).fetchall()
        refused_upper = {ch for ch, r in zip(chars, rows, strict=True) if r[0]}
        assert refused_upper <= upper
        if unicodedata.unidata_version == "14.0.0":
            assert refused_upper == upper
        assert {ch for ch, r in zip(chars, rows, strict=True) if r[1]} == space
