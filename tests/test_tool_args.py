"""A tool's validated arguments (env.domain.Tool.validate): a flat arguments model's
fields taken as they are give exactly what `model_dump()` gives, value and type."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError, create_model, field_validator

from proctor.env.domain import Tool, _ArgsBase

ANNOTATIONS: list[Any] = [
    str,
    int,
    float,
    bool,
    str | None,
    int | float,
    float | None,
    Literal["a", 1, True],
    bool | int | None,
]
VALUES = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.sampled_from(["a", "1", "true", "1.5", "", "x"])
)


def tool(model: type[BaseModel]) -> Tool:
    return Tool("t", "", "read", (), lambda state: None, model, None, False, 0.0)


def typed(value: Any) -> Any:
    """A value with the types of everything in it, so `1` and `True` differ."""
    if isinstance(value, dict):
        return {key: typed(item) for key, item in value.items()}
    return (type(value), value)


# a default of another type than its field's is not validated; model_dump warns of it
@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")
@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(range(len(ANNOTATIONS))), min_size=1, max_size=4),
    st.lists(st.one_of(st.none(), VALUES), max_size=4),
    st.dictionaries(st.sampled_from(["f0", "f1", "f2", "f3", "extra"]), VALUES, max_size=5),
)
def test_flat_arguments_are_what_model_dump_gives(
    kinds: list[int], defaults: list[Any], args: dict[str, Any]
) -> None:
    fields: dict[str, Any] = {}
    for i, kind in enumerate(kinds):
        default = defaults[i] if i < len(defaults) and defaults[i] is not None else ...
        fields[f"f{i}"] = (ANNOTATIONS[kind], default)
    model = create_model("Args", __base__=_ArgsBase, **fields)
    made = tool(model)
    assert made.flat
    try:
        expected = model.model_validate(args).model_dump()
    except ValidationError as exc:
        with pytest.raises(ValidationError) as raised:
            made.validate(args)
        assert raised.value.errors() == exc.errors()
        return
    assert typed(made.validate(args)) == typed(expected)


class Nested(BaseModel):
    x: int


class Upper(_ArgsBase):
    name: str

    @field_validator("name")
    @classmethod
    def shout(cls, value: str) -> Any:
        return [value.upper()]


@pytest.mark.parametrize(
    "model",
    [
        create_model("A", __base__=_ArgsBase, items=(list[int], ...)),
        create_model("B", __base__=_ArgsBase, inner=(Nested, ...)),
        create_model("C", __base__=_ArgsBase, anything=(Any, None)),
        create_model("D", __base__=_ArgsBase, tags=(str, ["a list default"])),
        Upper,
    ],
)
def test_a_model_that_dumps_otherwise_is_not_flat(model: type[BaseModel]) -> None:
    """Containers, nested models, Any, a non-scalar default or a validator of its own:
    `model_dump()` may differ from the fields, so it is still called."""
    assert not tool(model).flat


def test_a_nested_model_argument_still_comes_back_as_a_dict() -> None:
    model = create_model("B", __base__=_ArgsBase, inner=(Nested, ...))
    assert tool(model).validate({"inner": {"x": "3"}}) == {"inner": {"x": 3}}
