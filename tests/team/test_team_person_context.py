"""Migration 26 (review 70): a person's episode's ranking context holds the people's episodes before it alone.

Before, two agent's episodes an agent placed just before a person's answer (any thread and seq are the agent's to
give) filled the answer's context: the person's question left it, and the agent's words came in. The contract tests
(tests/test_store_contract.py) check the rule through writes on both backends; here a project that migration 25 left
with such contexts gets them right from migration 26.
"""

from __future__ import annotations

import uuid

import psycopg


def test_a_project_migrated_to_26_takes_the_agents_words_out_of_a_persons_context(pg_admin_url: str) -> None:
    from synapse_nb.store.postgres.migrate import MIGRATIONS, migrate

    project = f"pctx{uuid.uuid4().hex[:8]}"
    rows = [("epi_000000000001", 0, "user", "hiking"), ("epi_000000000004", 1, "user", "tahoe"),
            ("epi_000000000002", 1, "agent", "bitcoin"), ("epi_000000000003", 1, "agent", "giveaway")]
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        assert migrate(c, project, MIGRATIONS[:25]) == (0, 25)
        c.execute(f"SET search_path = {project}")
        ts = c.execute("SELECT next_stamp()").fetchone()
        assert ts is not None
        for rid, seq, source, word in rows:
            c.execute("INSERT INTO episodes(id, mind, task_key, status, outcome, source, created_at, updated_at, "
                      "terms, thread, seq, actor, rank_body) VALUES (%s, 'default', 't', 'success', %s, %s, %s, %s, "
                      "%s, 's1', %s, 'x', %s)",
                      (rid, word, source, ts[0], ts[0], sorted(["t", word]), seq, ["t", word]))
        c.execute("SELECT rank_refresh_thread('default', 's1')")

        def ctx() -> dict[str, list[str]]:
            return dict(c.execute("SELECT id, rank_ctx FROM episodes ORDER BY id").fetchall())

        assert ctx()["epi_000000000004"] == ["t", "bitcoin", "t", "giveaway"]  # migration 25: the agent's words
        assert migrate(c, project, MIGRATIONS[:26]) == (25, 26)
        c.execute(f"SET search_path = {project}")
        assert ctx() == {"epi_000000000001": [], "epi_000000000002": ["t", "hiking"],
                         "epi_000000000003": ["t", "hiking", "t", "bitcoin"],
                         "epi_000000000004": ["t", "hiking"]}  # the person's answer: the question alone
        c.execute(f"DROP SCHEMA {project} CASCADE")
