"""Fixtures of the reliability suite (load, crash, faults, hostile input, escalation).

Every test under ``tests/reliability/`` is marked ``reliability``. The default run executes the bounded
form (a few processes, ~10 crash runs, a few dozen fuzz cases per test); ``benchmarks/reliability.py``
runs the big numbers. ``SYNAPSE_FUZZ_EXAMPLES`` sets hypothesis's examples per fuzz test (default 15).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

import synapse_nb as syn

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

settings.register_profile(
    "reliability", max_examples=int(os.environ.get("SYNAPSE_FUZZ_EXAMPLES", "15")), deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                           HealthCheck.data_too_large], derandomize=True, database=None)
#: Fuzz cases tried in this process (the benchmark prints it).
FUZZ_CASES = {"n": 0}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.reliability)


def pytest_sessionfinish(session: pytest.Session) -> None:
    out = os.environ.get("SYNAPSE_FUZZ_COUNT_FILE")
    if out:
        Path(out).write_text(str(FUZZ_CASES["n"]), encoding="utf-8")


@pytest.fixture()
def vault_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh, created vault folder ``tmp_path/project/.synapse`` (processes open it by path)."""
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    d = tmp_path / "project" / ".synapse"
    d.parent.mkdir()
    syn.open_vault(d).close()
    return d


@pytest.fixture()
def rvault(vault_dir: Path) -> Iterator[syn.Vault]:
    """A user vault (real clock) on :func:`vault_dir`."""
    v = syn.open_vault(vault_dir)
    yield v
    v.close()
