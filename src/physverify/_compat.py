"""Keyword names of physverify 0.6.0's check functions, still accepted (issue 9, item 4).

Claim files written for the published 0.6.0 call its check functions by their keyword
names then (``reference_study(..., rhs_ref=f)``, ``check_order(..., tol=0.5)``). They
must run unchanged (STYLE.md: a renamed public name keeps its old name), so each
function that renamed a parameter is wrapped by ``accepts_060``, which turns the old
keyword into the new one before the call. The documented signature stays the current
one (``functools.wraps`` keeps it for ``inspect.signature`` and docs/api.md).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

_F = TypeVar("_F", bound=Callable[..., Any])

# old keyword -> the new keywords it stands for, given its value
Translate = Callable[[Any], Mapping[str, Any]]


def renamed(new: str) -> Translate:
    """A 0.6.0 keyword that is now called ``new``."""
    return lambda value: {new: value}


def accepts_060(**old: Translate) -> Callable[[_F], _F]:
    """Accept 0.6.0's keyword names ``old`` beside the current ones; both at once is a TypeError."""

    def wrap(function: _F) -> _F:
        @functools.wraps(function)
        def call(*args: Any, **kwargs: Any) -> Any:
            for name, translate in old.items():
                if name not in kwargs:
                    continue
                for new, value in translate(kwargs.pop(name)).items():
                    if new in kwargs:
                        raise TypeError(f"{function.__name__}() got both {name}= (its 0.6.0 name) and {new}=")
                    kwargs[new] = value
            return function(*args, **kwargs)

        return call  # type: ignore[return-value]

    return wrap
