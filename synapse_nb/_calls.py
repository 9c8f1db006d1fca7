"""How the public API takes its calls: one place for the types of its list arguments, the signature a shortcut shares
with the method it calls, and a wrong call (a misspelt keyword, a missing argument) as a
:class:`~synapse_nb.errors.ValidationError` that names what the call accepts.

Review 78: ``v.remember(..., prority="high")`` passed ``mypy --strict`` (the shortcut took ``**kwargs: Any``) and
failed at run time with a plain ``TypeError``, which no ``except SynapseError`` caught.
"""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, Concatenate, ParamSpec, TypeAlias, TypeVar

from synapse_nb.errors import ValidationError

__all__ = ["Files", "Tags", "checked_call", "checked_calls", "shortcut_of"]

#: Paths (or blockers): a list of texts, or one comma-separated text (``"a.py,b.py"``).
Files: TypeAlias = str | Sequence[str]
#: Tags: a list or set of texts, or one comma-separated text (``"db,deploy"``).
Tags: TypeAlias = str | Sequence[str] | AbstractSet[str]

P = ParamSpec("P")
R = TypeVar("R")
F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T", bound=type)


def shortcut_of(source: Callable[Concatenate[Any, P], R],
                ) -> Callable[[Callable[..., R]], Callable[Concatenate[Any, P], R]]:
    """A method that passes its arguments on to ``source`` (a method of another class) takes exactly its
    parameters, for mypy and for ``help()``: its signature is written once, on ``source``."""
    def shared(fn: Callable[..., R]) -> Callable[Concatenate[Any, P], R]:
        setattr(fn, "__signature__", inspect.signature(source))  # noqa: B010 (a function declares no __signature__)
        return fn
    return shared


def _accepted(sig: inspect.Signature) -> str:
    """The parameters a call takes, as a user writes them: ``category, key, content, tags=, priority=``."""
    names = [p.name + ("=" if p.kind is p.KEYWORD_ONLY or p.default is not p.empty else "")
             for p in sig.parameters.values() if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    return ", ".join(names) or "no arguments"


def wrong_call(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """Why ``fn(*args, **kwargs)`` cannot be called (what was wrong, what it accepts), or None when it can."""
    sig = inspect.signature(fn)
    try:
        sig.bind(*args, **kwargs)
    except TypeError as exc:
        known = [p for p in sig.parameters if p != "self"]
        unknown = [k for k in kwargs if k not in sig.parameters]
        near = difflib.get_close_matches(unknown[0], known, n=1) if unknown else []
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        return f"{fn.__name__}(): {exc}{hint}; it takes {_accepted(sig)}"
    return None


def checked_call(fn: F) -> F:
    """``fn``, whose wrong call raises a :class:`ValidationError` (a ``SynapseError``, still a ``ValueError``) saying
    what was wrong and what it accepts, instead of Python's ``TypeError``. A call that binds costs nothing more: the
    signature is read only after a ``TypeError``, and a ``TypeError`` from inside ``fn`` is raised as it was."""
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except TypeError as exc:
            problem = wrong_call(fn, args, kwargs)
            if problem is None:
                raise
            raise ValidationError(problem) from exc
    return call  # type: ignore[return-value]  # functools.wraps keeps fn's signature: it takes what fn takes


def checked_calls(cls: T) -> T:
    """``cls`` with each of its own public methods a :func:`checked_call`."""
    for name, value in list(vars(cls).items()):
        if not name.startswith("_") and inspect.isfunction(value):
            setattr(cls, name, checked_call(value))
    return cls
