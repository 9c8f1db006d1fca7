"""The lessons table's fixed statements (:class:`~synapse_nb.store.sql.tables.LessonsTable` runs them), for both
backends: kept apart from ``tables.py``, which holds every kind's table."""

from __future__ import annotations

__all__ = ["APPROVED_LESSONS", "EFFECTIVE_STATUS", "EXPIRE_LESSONS", "LESSONS_AGENT_PENDING", "LESSONS_EXPIRING",
           "LESSONS_PENDING", "LESSONS_RUN_OUT", "LESSONS_RUN_OUT_COUNT", "LESSON_ANALYSIS_STATE", "LESSON_FOR_REVERT",
           "LESSON_HOLDING_REVERT", "LESSON_STATUS_COUNTS"]

#: A lesson's effective status at a time (``?``): an approved lesson past ``expires_at`` is expired (``$``: the table).
EFFECTIVE_STATUS = "(CASE WHEN $status = 'approved' AND $expires_at <= ? THEN 'expired' ELSE $status END)"
LESSON_FOR_REVERT = "SELECT 1 FROM lessons WHERE mind = ? AND revert_sha = ?"
LESSON_HOLDING_REVERT = "SELECT id, source, status FROM lessons WHERE mind = ? AND revert_sha = ? ORDER BY id LIMIT 1"
#: Pending lessons agents made: an agent's, and one a person's scan took over from an agent's scan (its revert_commit
#: marked ``first_by``: kinds/lesson_scan.py), which waits for a human's decision all the same (review 65).
LESSONS_AGENT_PENDING = ("SELECT count(*) FROM lessons WHERE mind = ? AND status = 'pending' AND (source = 'agent' OR "
                         "CASE WHEN json_valid(revert_commit) THEN json_extract(revert_commit, '$.first_by') END "
                         "= 'agent')")
LESSONS_PENDING = "SELECT count(*) FROM lessons WHERE mind = ? AND status = 'pending'"
LESSON_ANALYSIS_STATE = "SELECT status, analysis_by FROM lessons WHERE id = ?"
LESSON_STATUS_COUNTS = ("SELECT CASE WHEN status = 'approved' AND expires_at <= ? THEN 'expired' ELSE status END AS s, "
                        "count(*) AS n FROM lessons WHERE mind = ? GROUP BY s ORDER BY s")
LESSONS_EXPIRING = ("SELECT id FROM lessons WHERE mind = ? AND status = 'approved' AND expires_at > ? AND "
                    "expires_at <= ? ORDER BY expires_at, id")
LESSONS_RUN_OUT = "SELECT id FROM lessons WHERE mind = ? AND status = 'approved' AND expires_at <= ? ORDER BY id"
#: How many approved lessons ran out (marked expired or not yet) by a time (``?``), at or after another (``?``).
LESSONS_RUN_OUT_COUNT = ("SELECT count(*) FROM lessons WHERE mind = ? AND status IN ('approved', 'expired') AND "
                         "expires_at <= ? AND expires_at >= ?")
EXPIRE_LESSONS = ("UPDATE lessons SET status = 'expired', updated_at = ? WHERE mind = ? AND status = 'approved' "
                  "AND expires_at <= ?")
#: Lessons stored as approved, most recently approved first (in force unless their time ran out).
APPROVED_LESSONS = ("SELECT {cols} FROM lessons WHERE mind = ? AND status = 'approved' "
                    "ORDER BY approved_at DESC, id DESC")
