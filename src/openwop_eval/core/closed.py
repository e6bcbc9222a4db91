"""The base of the suite's models: a closed, immutable object, and a bounded fraction."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator


def unique_items(items: tuple[Any, ...]) -> tuple[Any, ...]:
    if len(set(items)) != len(items):
        raise ValueError("items must be unique")
    return items


class Closed(BaseModel):
    """A closed object: unknown keys are an error, instances are immutable.

    An optional member may be omitted but not sent as ``null`` (the protocol schemas are not
    nullable); only opaque members (``Any``: inputs, expected values, responses) take null.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _no_null_members(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for name, info in cls.model_fields.items():
                key = info.alias or name
                if key in data and data[key] is None and info.annotation is not Any:
                    raise ValueError(f"{key} may be omitted but not null")
        return data


def optional_fraction(alias: str, description: str) -> Any:
    """A field holding an optional number from 0 to 1 (a score, a bar), absent by default."""
    return Field(None, alias=alias, ge=0, le=1, description=description)
