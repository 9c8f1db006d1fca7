"""SQL for whose a stored record stands as, from the kinds registry, for both backends: an agent's that no person
verified (:func:`synapse_nb.provenance.agents_unverified`: recall's ``RankRow.agent``) or a person's
(:func:`synapse_nb.provenance.human_record`: the side of a duplicate pair never hidden behind an agent's copy).
Each reads a record by its primary key in its kind's table (lessons are neither ranked nor paired)."""

from __future__ import annotations

from synapse_nb.models import KIND_BY_NAME, RANKED_KINDS
from synapse_nb.provenance import PERSONS_LESSON_STATES

__all__ = ["agents_case", "agents_ids", "people", "person_sql"]


def people(kind: str, row: str = "t.") -> str:
    """The condition on a row of ``kind``'s table (its columns named ``row`` + column) that it stands as a person's
    (:func:`~synapse_nb.provenance.human_record`): a person wrote it, (a memory) a person verified it, (a lesson) a
    person approved it. A ``source`` other than 'user' reads as an agent's.

    >>> people("memory", "$")
    "($source = 'user' OR $verified = 1)"
    """
    extra = {"memory": f" OR {row}verified = 1",
             "lesson": f" OR {row}status IN (" + ", ".join(f"'{s}'" for s in PERSONS_LESSON_STATES) + ")"}
    return f"({row}source = 'user'{extra.get(kind, '')})"


def _agents(kind: str) -> str:
    """The condition on row ``t`` of ``kind``'s table: an agent wrote it and (a memory) no person verified it."""
    return "t.source = 'agent'" + (" AND t.verified = 0" if kind == "memory" else "")


def agents_case(kind: str, rid: str) -> str:
    """SQL: whether the record of kind ``kind`` and id ``rid`` (SQL expressions) is an agent's unverified one.

    >>> agents_case("d.kind", "d.id").startswith("CASE d.kind WHEN 'memory' THEN EXISTS")
    True
    """
    return (f"CASE {kind} " + " ".join(f"WHEN '{k}' THEN EXISTS (SELECT 1 FROM {KIND_BY_NAME[k].table} t "
                                       f"WHERE t.id = {rid} AND {_agents(k)})" for k in RANKED_KINDS)
            + " ELSE false END")


def agents_ids() -> str:
    """SQL: the ids of a mind's agents' unverified records, one scan of each kind's table (one ``?`` a kind: the
    mind, :data:`~synapse_nb.models.RANKED_KINDS` times)."""
    return " UNION ALL ".join(f"SELECT id FROM {KIND_BY_NAME[k].table} t WHERE mind = ? AND {_agents(k)}"
                              for k in RANKED_KINDS)


def person_sql(rid: str) -> str:
    """SQL: whether the record ``rid`` names stands as a person's: a person wrote it, or (a memory) verified it."""
    return "(" + " OR ".join(f"EXISTS (SELECT 1 FROM {KIND_BY_NAME[k].table} t WHERE t.id = {rid} AND {people(k)})"
                             for k in RANKED_KINDS) + ")"
