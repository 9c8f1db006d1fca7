r"""Run code in fresh interpreters under several ``PYTHONHASHSEED`` values (and BLAS/OpenMP thread counts).

The determinism tests (same vault, same query: the same bytes, whatever the hash seed) all need the same thing: a
new Python process per seed, because a process cannot change its own string hashing. :func:`outputs` runs one and
gives back each run's standard output; a run that fails fails the test with the seed, the thread count and the
child's standard error (``subprocess.run(check=True)`` would hide the traceback).

>>> outputs(["-c", "print(sorted({'b', 'a'}))"], ["0", "1"])
["['a', 'b']\n", "['a', 'b']\n"]
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

__all__ = ["ROOT", "outputs"]

#: The repository's root: children started there import this checkout's ``synapse_nb``.
ROOT = Path(__file__).resolve().parents[1]
_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def outputs(args: Sequence[str] | Callable[[str], Sequence[str]], runs: Sequence[str | tuple[str, str]], *,
            env: Mapping[str, str] | None = None, drop_env: Sequence[str] = (), cwd: str | Path = ROOT,
            timeout: float = 600) -> list[str]:
    """The standard output of ``python <args>`` run once per entry of ``runs``, in order.

    Parameters
    ----------
    args
        The interpreter's arguments (``["-c", code, ...]`` or a script and its arguments), or a function of the
        run's hash seed that gives them (a folder per run, say).
    runs
        Each a ``PYTHONHASHSEED`` value (``"random"`` included), or ``(seed, threads)`` to also set the BLAS and
        OpenMP thread counts.
    env, drop_env
        Variables set on top of this process's environment, and variables removed from it.
    cwd, timeout
        Where the children run (default: the repository, so they import this checkout) and how long each may take.
    """
    out = []
    for run in runs:
        seed, threads = (run, None) if isinstance(run, str) else run
        child = {k: v for k, v in {**os.environ, **(env or {})}.items() if k not in drop_env}
        child["PYTHONHASHSEED"] = seed
        if threads is not None:
            child.update(dict.fromkeys(_THREAD_VARS, threads))
        argv = list(args(seed) if callable(args) else args)
        res = subprocess.run([sys.executable, *argv], cwd=cwd, env=child, capture_output=True, text=True,
                             timeout=timeout)
        if res.returncode != 0:
            pytest.fail(f"the child under PYTHONHASHSEED={seed}" + (f", {threads} threads" if threads else "")
                        + f" exited with {res.returncode}:\n{res.stderr[-4000:]}", pytrace=False)
        out.append(res.stdout)
    return out
