"""How a store keeps driver exceptions in: one class decorator that turns a backend's errors into the store's own.

Every store promises its callers one exception for "the backend failed" (`StoreUnavailable`, `DirectoryDown`,
`ClassStoreUnavailable`, ...), never sqlite3's or redis's. A store with many methods states that once, here,
instead of a try/except in each method.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeVar

T = TypeVar("T")
P = ParamSpec("P")
R = TypeVar("R")


def failures_become(driver_errors: type[BaseException] | tuple[type[BaseException], ...],
                    make: Callable[[T, BaseException], Exception]) -> Callable[[type[T]], type[T]]:
    """A class decorator: each public method of the class raises `make(store, error)` in place of `driver_errors`.

    `make` may also mend the store (drop a broken connection) before the exception is raised. Methods that call
    each other convert once: the inner call's converted exception is no driver error any more."""

    def guard(method: Callable[Concatenate[T, P], R]) -> Callable[Concatenate[T, P], R]:
        @functools.wraps(method)
        def guarded(self: T, /, *args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return method(self, *args, **kwargs)
            except driver_errors as exc:
                raise make(self, exc) from exc

        return guarded

    def decorate(cls: type[T]) -> type[T]:
        for name, value in list(vars(cls).items()):
            if callable(value) and not name.startswith("_") and not isinstance(value, classmethod | staticmethod):
                setattr(cls, name, guard(value))
        return cls

    return decorate
