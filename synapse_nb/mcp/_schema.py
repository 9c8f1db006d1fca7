"""The MCP tools' schemas: every parameter typed, described and bounded; every answer's ``outputSchema``.

The enums and the bounds are the core's own constants (``models.CATEGORIES``, ``PRIORITIES``, the length limits,
``kinds.episodes.STATUSES``), never a copy, so a schema cannot promise what the core refuses. Whole numbers are
strict: ``true`` or ``2.0`` for a count is refused, not read as ``1`` or ``2``.

Every answer's structured content starts with ``text``, the whole text answer (Claude Code and VS Code give the
model only the structured content: review 86), so the other fields add what a program reads and never repeat the
text in bulk. The output schemas of records are read from the record dataclasses (their fields and types), plus
the fields every answer may carry: ``left_out`` (what the answer budget cut), ``ignored_arguments`` (arguments the
tool does not take) and ``borrowed`` (why the vault is borrowed).

>>> RECORD_SCHEMAS["memory"]["properties"]["verified"]
{'type': 'boolean'}
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

from synapse_nb.kinds.episodes import STATUSES
from synapse_nb.models import (
    CATEGORIES,
    KIND_NAMES,
    MAX_FILES,
    MAX_PATH_CHARS,
    MAX_SHORT,
    MAX_TAG_CHARS,
    MAX_TAGS,
    MAX_TEXT,
    PRIORITIES,
    Checkpoint,
    Decision,
    Episode,
    Memory,
    Note,
    Record,
)
from synapse_nb.settings import MAX_TOKENS

__all__ = ["MAX_QUERY_CHARS", "MIN_RECALL_TOKENS", "OUTPUT_SCHEMAS", "RECORD_SCHEMAS", "SEARCH_KINDS"]

#: What ``search(kind=...)`` accepts.
SEARCH_KINDS = ("all", *KIND_NAMES)
#: The smallest ``budget_tokens`` a ``recall`` takes: a record's line is some 15 to 60 tokens, so a smaller budget
#: mostly answers "nothing new (over_budget): call again with a larger budget_tokens" (review 86: 0 was accepted).
MIN_RECALL_TOKENS = 100
#: Longest query ``recall`` and ``search`` take (the core's longest body text); a longer one is refused in one line.
MAX_QUERY_CHARS = MAX_TEXT


def _enum(values: tuple[str, ...]) -> Any:
    """``Literal[values]`` built from a core constant (so the schema says ``enum`` with exactly those values)."""
    return Literal.__getitem__(values)


def _text(description: str, max_length: int = MAX_TEXT) -> Any:
    return Annotated[str, Field(description=description, max_length=max_length)]


def _maybe_text(description: str, max_length: int = MAX_TEXT) -> Any:
    return Annotated[str | None, Field(description=description, max_length=max_length)]


def _words(description: str, *, items: int, item_chars: int) -> Any:
    return Annotated[list[Annotated[str, Field(max_length=item_chars)]] | None,
                     Field(description=description, max_length=items)]


def _count(description: str, *, minimum: int, maximum: int | None = None) -> Any:
    return Annotated[int, Field(description=description, strict=True, ge=minimum, le=maximum)]


# ------------------------------------------------------------------------------------------------ parameters
# Enumerations built from the core's constants: pydantic reads the runtime aliases (an ``enum`` in the schema);
# mypy cannot read a Literal built at run time, so it sees the plain type the tools receive.
if TYPE_CHECKING:
    SearchKind = str
    Category = str
    Priority = str | None
    Status = str
else:
    SearchKind = Annotated[_enum(SEARCH_KINDS), Field(description="Which kind of record to search: all, or one kind "
                                                                  "(lesson finds approved lessons only).")]
    Category = Annotated[_enum(CATEGORIES), Field(description="What kind of fact it is.")]
    Priority = Annotated[_enum(PRIORITIES) | None, Field(description="How much it matters (default normal).")]
    Status = Annotated[_enum(STATUSES), Field(description="How the run ended.")]

Query = Annotated[str, Field(description="The task or question in your own words (a sentence is best; at most "
                                         f"{MAX_QUERY_CHARS:,} characters).", max_length=MAX_QUERY_CHARS)]
SessionId = _maybe_text("One stable id per conversation (any printable text): with it, recall returns only what "
                        "this conversation has not seen yet.", MAX_SHORT)
StartSessionId = _maybe_text("The session_id you pass recall in this conversation: the key memories listed here are "
                             "then not given again by recall unless they change.", MAX_SHORT)
RecallBudget = Annotated[int | None, Field(
    description=f"Most tokens the hits may take (default: the vault's recall_budget_tokens, 1200), from "
                f"{MIN_RECALL_TOKENS} (a smaller budget holds hardly one record line, so it could only answer 'call "
                f"again with a larger budget') to {MAX_TOKENS:,} (the vault's own bound); lowered to what the "
                "answer budget (the vault's mcp_answer_tokens, 8,000 by default) leaves the hits.",
    strict=True, ge=MIN_RECALL_TOKENS, le=MAX_TOKENS)]
SearchLimit = _count("Most results per kind.", minimum=1, maximum=100)
CheckpointId = _maybe_text("A checkpoint id or a unique prefix of one; leave it out for the latest checkpoint on "
                           "the current git branch.", MAX_SHORT)
Doing = _text("The task you are on, in one sentence.")
ChangedFiles = _words("Paths you changed so far (relative to the project folder).", items=MAX_FILES,
                      item_chars=MAX_PATH_CHARS)
NextStep = _maybe_text("What comes next, in one sentence.")
Blockers = _maybe_text("What is in the way, if anything.")
DecisionText = _text("The decision, in one sentence.")
Rationale = _maybe_text("Why: the reason a later session should keep to it.")
Tags = _words("Tags, one word each (lower-cased; a leading # is dropped).", items=MAX_TAGS, item_chars=MAX_TAG_CHARS)
LessonId = _text("The full id of the lesson you were asked about (les_...).", MAX_SHORT)
Analysis = _text("Why the reverted change failed and what to do instead; a human reviews it.")
TokenCount = _count("Tokens used in your context window now.", minimum=0)
Capacity = _count("Size of your context window in tokens (at least token_count).", minimum=1)
LowDoing = _maybe_text("The task you are on (default: the last checkpoint's).")
LowNext = _maybe_text("What comes next (default: the last checkpoint's).")
PackBudget = _count("Most tokens the restore pack may take.", minimum=100, maximum=20_000)
Key = _text("A snake_case name for the fact (lower-case letters, digits, single underscores); the same key updates "
            "your earlier proposal.", MAX_SHORT)
Content = _text("The fact itself.")
TaskKey = _text("A stable name for the task (the same name each time it runs, e.g. run_tests).", MAX_SHORT)
Outcome = _maybe_text("What happened, in a sentence or two (e.g. 2 tests failed in test_auth.py).")
Refs = _words("References: commit ids, CI run ids, file paths.", items=MAX_FILES, item_chars=MAX_PATH_CHARS)
NoteName = _text("The note's name as recall lists it (before the colon, e.g. deploy_runbook).", MAX_SHORT)


# ------------------------------------------------------------------------------------------------ output schemas
def _json_type(tp: Any) -> dict[str, Any]:
    """The JSON schema of a record field's Python type."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        alts = [_json_type(a) for a in args if a is not type(None)]
        out = alts[0] if len(alts) == 1 else {"anyOf": alts}
        if type(None) in args:
            out = ({**out, "type": [out["type"], "null"]} if isinstance(out.get("type"), str) else
                   {"anyOf": [out, {"type": "null"}]})
        return out
    if origin is tuple:
        return {"type": "array", "items": _json_type(args[0])} if len(args) == 2 and args[1] is Ellipsis else \
            {"type": "array"}
    if origin is dict or tp is dict:
        return {"type": "object"}
    simple = {str: "string", bool: "boolean", int: "integer", float: "number"}
    return {"type": simple[tp]} if tp in simple else {}


def _record_schema(cls: type[Record]) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    props: dict[str, Any] = {"provenance": {"type": "string", "description": "Who wrote it, and whether a human "
                                                                             "verified it (read it first)."},
                             "kind": {"type": "string", "const": cls.kind}}
    for f in dataclasses.fields(cls):
        if f.init and not f.name.startswith("_") and not f.metadata.get("transient"):
            props[f.name] = _json_type(hints[f.name])
    return {"type": "object", "properties": props, "required": ["provenance", "kind", "id"]}


#: The structured form of each record an answer carries (``provenance`` first, then the record's fields).
RECORD_SCHEMAS: dict[str, dict[str, Any]] = {c.kind: _record_schema(c) for c in (Memory, Checkpoint, Decision,
                                                                                    Episode, Note)}

_COMMON = {"left_out": {"type": "object", "additionalProperties": {"type": "string"},
                        "description": "What the answer budget left out, per field."},
           "ignored_arguments": {"type": "array", "items": {"type": "string"},
                                 "description": "Arguments you gave that this tool does not take (ignored)."},
           "borrowed": {"type": ["object", "null"],
                        "properties": {"reason": {"type": "string"}, "path": {"type": "string"},
                                       "target": {"type": ["string", "null"]}, "line": {"type": "string"}},
                        "description": "Present when the vault is borrowed from another project or checkout: why, "
                                       "and the line that heads the text."}}
_STR, _INT, _BOOL, _NUM = {"type": "string"}, {"type": "integer"}, {"type": "boolean"}, {"type": "number"}
_MAYBE_STR, _STRS = {"type": ["string", "null"]}, {"type": "array", "items": {"type": "string"}}


#: The first field of every answer: the text answer, whole (as the answer budget left it).
_TEXT = {"type": "string", "description": "The whole answer as readable text, the same as the text content: a client "
                                          "that shows only the structured content loses nothing."}


def _obj(props: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": {"text": _TEXT, **props, **_COMMON},
            "required": ["text", *(r for r in required if r != "text")]}


def _record_answer(kind: str, extra: dict[str, Any] | None = None, *, required: bool = True) -> dict[str, Any]:
    base = RECORD_SCHEMAS[kind]
    return _obj({**base["properties"], **(extra or {})}, tuple(base["required"]) if required else ())


_LESSON_BRIEF = {"type": "object", "properties": {"id": _STR, "branch": _MAYBE_STR, "approved_at": _MAYBE_STR,
                                                  "expires_at": _MAYBE_STR, "wording_by": _MAYBE_STR,
                                                  "created_by": _STR}}
_COUNTS = {"type": "object", "additionalProperties": {"type": "object", "additionalProperties": _INT}}

#: Each tool's ``outputSchema`` (the shape of its structured content).
OUTPUT_SCHEMAS: dict[str, dict[str, Any]] = {
    # the banner and the memory lines are in text (a "banner" field repeated the banner: review 86)
    "get_approved_memory": _obj({"lessons": {"type": "array", "items": _LESSON_BRIEF},
                                 "memories": _INT, "verified": _INT,
                                 "by_category": {"type": "object", "additionalProperties": _INT,
                                                 "description": "Memories in force per category (none: left out)."},
                                 "key_memories": {"type": "integer", "description": "Key memories (priority critical "
                                                  "or high) people wrote or verified; key_shown: those listed."},
                                 "key_shown": _STRS,
                                 "agents_key_memories": {"type": "integer", "description": "Agents' unverified key "
                                                         "memories: counted, not listed (recall gives them when "
                                                         "relevant)."},
                                 "vault": _BOOL},
                                ("lessons", "memories", "vault")),
    "restore_checkpoint": _record_answer("checkpoint", {
        "found": _BOOL, "elsewhere": {"type": "integer", "description": "Not found: how many checkpoints other "
                                                                         "branches hold (the text names the newest)."},
        "later": {"type": "integer", "description": "How many checkpoints were saved on its branch after it (the "
                                                    "automatic ones the hooks save; the text lists the newest)."},
        "agents": {"type": "integer", "description": "How many of those later checkpoints are agents'."},
        "since": {"type": "array", "items": RECORD_SCHEMAS["checkpoint"],
                  "description": "The newest of those later checkpoints, people's first, each newest first."},
        "persons": {"anyOf": [RECORD_SCHEMAS["checkpoint"], {"type": "null"}],
                    "description": "Resumed from an agent's: the person's own newest checkpoint saved on purpose "
                                   "on its branch (the text names it too)."}},
        required=False) | {"required": ["text", "found"]},
    "create_checkpoint": _record_answer("checkpoint"),
    "log_decision": _record_answer("decision"),
    "submit_lesson_analysis": _obj({"lesson_id": _STR, "submitted": _BOOL}, ("lesson_id", "submitted")),
    "signal_low_context": _obj({"action": {"type": "string", "enum": ["none", "checkpoint_saved", "read_only"]},
                                "ratio": _NUM, "threshold": _NUM, "checkpoint_id": _MAYBE_STR,
                                "tokens": _INT}, ("action", "ratio", "threshold")),  # the pack is the text
    "recall": _obj({"query": _STR, "session": _MAYBE_STR, "text": _STR, "nothing_new": _BOOL,
                    "empty_reason": _MAYBE_STR,
                    "items": {"type": "array", "items": {"type": "object", "properties": {
                        "kind": _STR, "id": _STR, "score": _NUM, "matched": _STRS, "bar": _STR}}},  # lines: text
                    "lessons": _STRS, "path": _STR, "coverage": _NUM, "version": {}, "stale": {},
                    "semantic_off": _MAYBE_STR, "agents_waiting": _INT,
                    "given_before": {"type": "integer", "description": "Relevant items given to this session "
                                                                       "earlier and not repeated: the items are "
                                                                       "more on the query."}},
                   ("text",)),
    "remember": _record_answer("memory", {
        "pending_revision": {"type": "boolean", "description": "True: the key is a person's memory, which an agent "
                                                              "does not change; the change waits for a human as a "
                                                              "revision and the memory is unchanged until then."},
        "revision_id": _MAYBE_STR,
        "proposed": {"type": ["object", "null"], "description": "The fields the pending revision would change."},
        "unchanged": {"anyOf": [RECORD_SCHEMAS["memory"], {"type": "null"}],
                      "description": "The person's memory, as it stays until a human accepts the revision."}},
        required=False) | {"required": ["text", "pending_revision"]},
    "log_episode": _record_answer("episode", {"prior": {"anyOf": [RECORD_SCHEMAS["episode"], {"type": "null"}]},
                                              "prior_by_person": {"anyOf": [RECORD_SCHEMAS["episode"],
                                                                            {"type": "null"}]},
                                              "warning": _MAYBE_STR}),
    "search": _obj({"query": _STR, "kind": _STR, "results": {"type": "array", "items": {"type": "object"}},
                    "hits": {"type": "array", "items": {"type": "object"}}, "nothing_new": _BOOL,
                    "empty_reason": {"type": ["string", "null"], "description": "no_vault: this project has no "
                                                                             "vault yet (nothing stored)."}},
                   ("kind",)),
    "expand_note": _record_answer("note", {"text": {"type": "string", "description": "The whole answer: the body "
                                                    "(not repeated as body), an agent's after its mark, each line "
                                                    "quoted."}}),
    "get_status": _obj({"vault_path": _STR, "mind": _STR, "actor": _STR, "counts": _COUNTS,
                        "pending_lessons": _STRS, "expiring_memories": _STRS, "expiring_lessons": _STRS,
                        "schema_version": _INT, "dangling": _STRS, "possibly_stale": _STRS,
                        "tracked_by_git": _STRS, "untrack_command": _MAYBE_STR, "pending_revisions": _INT,
                        "open_conflicts": _INT,
                        "vault": {"type": "boolean", "description": "false: this project has no vault yet (every "
                                                                     "count 0; the first write creates it at "
                                                                     "vault_path)."}},
                       ("vault_path", "actor", "counts")),
}
