"""The public surface: ``__all__`` sorted and complete, every name importable, the error tree."""

from __future__ import annotations

import builtins
import importlib
import inspect

import pytest

import synapse_nb
import synapse_nb.errors as errors


def _isort_style(name: str) -> tuple[int, str, str]:
    """ruff RUF022's "isort-style" order: CONSTANTS, then Classes, then everything else, each alphabetical
    ignoring case."""
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name.casefold(), name)


def test_all_is_sorted_and_equals_public_names() -> None:
    assert synapse_nb.__all__ == sorted(synapse_nb.__all__, key=_isort_style)
    assert len(set(synapse_nb.__all__)) == len(synapse_nb.__all__)
    public = {n for n in vars(synapse_nb) if not n.startswith("_") and not inspect.ismodule(getattr(synapse_nb, n))}
    public.discard("annotations")  # from __future__
    public.discard("Any")  # typing import used in signatures
    assert public | {"__version__"} == set(synapse_nb.__all__)


def test_every_public_name_importable() -> None:
    for name in synapse_nb.__all__:
        mod = importlib.import_module("synapse_nb")
        assert getattr(mod, name) is not None, name
        exec(f"from synapse_nb import {name}", {})
    assert isinstance(synapse_nb.__version__, str) and synapse_nb.__version__


def test_errors_all_sorted_and_complete() -> None:
    assert errors.__all__ == sorted(errors.__all__, key=_isort_style)
    classes = {n for n, o in vars(errors).items() if inspect.isclass(o) and issubclass(o, Exception)}
    assert classes == set(errors.__all__)
    for n in errors.__all__:
        assert getattr(synapse_nb, n) is getattr(errors, n)


@pytest.mark.parametrize(("cls", "builtin"), [
    (errors.ValidationError, ValueError), (errors.QueryError, ValueError), (errors.NotFoundError, KeyError),
    (errors.AmbiguousIdError, KeyError), (errors.PermissionDeniedError, PermissionError),
    (errors.StoreError, OSError), (errors.SchemaError, OSError), (errors.IndexError_, OSError),
    (errors.DatasetError, ValueError),
])
def test_error_tree_and_builtins(cls: type, builtin: type) -> None:
    assert issubclass(cls, errors.SynapseError) and issubclass(cls, builtin)
    e = cls("what was wrong; what is accepted")
    assert str(e) == "what was wrong; what is accepted"  # KeyError would add quotes; we never want that


def test_error_parents() -> None:
    assert issubclass(errors.QueryError, errors.ValidationError)
    assert issubclass(errors.AmbiguousIdError, errors.NotFoundError)
    assert issubclass(errors.SchemaError, errors.StoreError)
    assert issubclass(errors.IndexError_, errors.StoreError)
    for cls in (errors.ConflictError, errors.GitError):
        assert issubclass(cls, errors.SynapseError)
        assert not issubclass(cls, (ValueError, KeyError, PermissionError, OSError))
    assert errors.IndexError_ is not builtins.IndexError
    assert str(errors.SynapseError()) == "SynapseError"
    # every subclass of SynapseError defined anywhere in the package is listed in errors.__all__
    assert {c.__name__ for c in _subclasses(errors.SynapseError)} <= set(errors.__all__)


def _subclasses(cls: type) -> set[type]:
    out = set()
    for sub in cls.__subclasses__():
        if sub.__module__.startswith("synapse_nb"):
            out.add(sub)
        out |= _subclasses(sub)
    return out


def test_public_callables_documented() -> None:
    for name in synapse_nb.__all__:
        obj = getattr(synapse_nb, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert inspect.getdoc(obj), f"{name} has no docstring"
    sig = inspect.signature(synapse_nb.open_vault)
    assert list(sig.parameters) == ["path", "mind", "actor", "clock", "readonly", "create", "offline", "surface"]
    assert sig.parameters["mind"].default == "default" and sig.parameters["actor"].default == "user"
    assert sig.parameters["create"].default is True and sig.parameters["create"].kind is inspect.Parameter.KEYWORD_ONLY
