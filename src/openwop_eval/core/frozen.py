"""A quicker ``__init__`` for the frozen, slotted dataclasses built once per trial.

A frozen dataclass's generated ``__init__`` sets each field with
``object.__setattr__(self, "name", value)``: a name lookup per field, half the cost of
building a :class:`~openwop_eval.core.grading.TrialGrade`. :func:`quick_init` generates the
same ``__init__`` (same parameters, same defaults, same result) setting each slot through
its member descriptor instead. The class stays frozen: only ``__init__`` is replaced.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T")


def quick_init(cls: type[T]) -> type[T]:
    """Replace the generated ``__init__`` of a frozen slotted dataclass whose fields all
    take plain defaults (or none); anything else is refused, at import."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in vars(cls):
        raise TypeError(f"{cls.__name__} is not a frozen slotted dataclass")
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__} has a __post_init__")
    namespace: dict[str, Any] = {}
    params_text, body = [], []
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if not f.init or f.kw_only or f.default_factory is not dataclasses.MISSING:
            raise TypeError(f"{cls.__name__}.{f.name}: only plain fields and defaults")
        namespace[f"_set_{f.name}"] = getattr(cls, f.name).__set__
        if f.default is dataclasses.MISSING:
            params_text.append(f.name)
        else:
            namespace[f"_default_{f.name}"] = f.default
            params_text.append(f"{f.name}=_default_{f.name}")
        body.append(f"    _set_{f.name}(self, {f.name})")
    # Field names are identifiers from the class definition, never data: safe to compile.
    source = f"def __init__(self, {', '.join(params_text)}):\n" + "\n".join(body) + "\n"
    exec(compile(source, f"<quick_init {cls.__qualname__}>", "exec"), namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = cls.__init__.__doc__
    init.__annotations__ = dict(cls.__init__.__annotations__)
    cls.__init__ = init  # type: ignore[method-assign]
    return cls
