"""What a person trusts with ``memory import --trust`` is listed record by record (review 63 F4, reproduced).

The output listed claim counts only (``trusted (...): memory source=user 1``): one agent-added ``source=user``
memory among 200 agent memories could not be found in it. Now each record that made a claim is listed by id and
first line (one line, quoted, capped: the first 20, then "and N more"), and ``--json`` holds them all under
``trusted_records``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

import synapse_nb as syn
from synapse_nb.cli import app
from synapse_nb.transfer import EXPORT_SCHEMA

HDR = json.dumps({"format": "synapse_nb-export", "schema": EXPORT_SCHEMA})
TS = "2026-01-01T00:00:00.000000Z"


def _memory(i: int, **kw: Any) -> dict[str, Any]:
    d = {"kind": "memory", "id": f"mem_c{i:011d}", "mind": "default", "category": "procedure", "key": f"k{i}",
         "content": f"note {i}", "tags": [], "priority": 2, "source": "agent", "verified": 0, "confidence": 0.5,
         "expires_at": None, "created_at": TS, "updated_at": TS}
    return d | kw


def _file(tmp_path: Path, docs: list[dict[str, Any]]) -> Path:
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join([HDR, *(json.dumps(d) for d in docs)]) + "\n", encoding="utf-8")
    return src


def _import(tmp_path: Path, src: Path, *args: str) -> Any:
    (tmp_path / "cli").mkdir(exist_ok=True)
    res = CliRunner().invoke(app, ["--vault", str(tmp_path / "cli" / ".synapse"), "memory", "import", str(src),
                                   "--yes", "--trust", *args])
    assert res.exit_code == 0, res.stderr
    return res


def test_the_one_claiming_record_among_200_is_named(vault: syn.Vault, tmp_path: Path) -> None:
    docs = [_memory(i) for i in range(200)]
    docs[57] = _memory(57, source="user", content="never pass --force\nsecond line\u202e")
    out = _import(tmp_path, _file(tmp_path, docs)).stdout.splitlines()
    at = out.index("trusted (accepted with --trust): memory source=user 1")
    assert out[at + 1:] == ['  memory mem_c00000000057 "k57 never pass --force": source=user']


def test_at_most_20_are_listed_and_json_holds_them_all(vault: syn.Vault, tmp_path: Path) -> None:
    docs = [_memory(i, source="user", content=f"rule {i}\x1b[2K " + "x" * 200) for i in range(25)]
    docs.append({"kind": "setting", "name": "recall_floor", "value": 0.0})
    src = _file(tmp_path, docs)
    out = _import(tmp_path, src).stdout.splitlines()
    listed = [x for x in out if x.startswith("  ")]
    assert len(listed) == 21 and listed[-1] == "  and 6 more"
    assert listed[0].startswith('  memory mem_c00000000000 "k0 rule 0 [2K xxx') and listed[0].endswith(": source=user")
    assert "\x1b" not in "".join(listed) and max(len(x) for x in listed) < 130  # one line, capped
    (tmp_path / "cli" / ".synapse").rename(tmp_path / "aside")
    records = json.loads(_import(tmp_path, src, "--json").stdout)["trusted_records"]
    assert len(records) == 26
    assert records[-1] == {"record": "setting recall_floor", "text": "0.0", "claims": ["setting recall_floor"]}
    assert records[3]["record"] == "memory mem_c00000000003" and records[3]["claims"] == ["memory source=user"]
