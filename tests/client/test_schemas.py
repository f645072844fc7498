"""Values by schema (`mrtr.forms`) and tool definitions judged (`mrtr.tooldefs`), as pure functions."""

from __future__ import annotations

from typing import Any

import pytest

from mrtr.forms import answer_by_schema, arguments_by_schema, content_problems, fields_of, parse_value, value_by_schema
from mrtr.tooldefs import read_tools, tool_problems


def field(schema: dict[str, Any], required: bool = True) -> Any:
    return fields_of({"type": "object", "properties": {"x": schema}, "required": ["x"] if required else []})[0]


@pytest.mark.parametrize(("schema", "value"), [
    ({"type": "integer", "default": 7}, 7),
    ({"type": "string", "enum": ["b", "a"]}, "b"),
    ({"oneOf": [{"const": "high", "title": "High"}, {"const": "low"}]}, "high"),
    ({"type": "boolean"}, True),
    ({"type": "boolean", "default": False}, False),
    ({"type": "integer", "minimum": 5, "maximum": 9}, 5),
    ({"type": "number", "maximum": 0.5}, 0.5),
    ({"type": "string", "format": "email"}, "user@example.com"),
    ({"type": "string", "minLength": 10}, "examplexxx"),
    ({"type": "string", "maxLength": 3}, "exa"),
    ({"type": "array", "items": {"enum": ["r", "g", "b"]}, "minItems": 2}, ["r", "g"]),
])
def test_a_value_by_schema_fits_its_schema(schema: dict[str, Any], value: Any) -> None:
    assert value_by_schema(field(schema)) == value
    assert content_problems({"type": "object", "properties": {"x": schema}}, {"x": value}) == []


def test_a_same_document_ref_is_followed_and_a_network_one_never_fetched() -> None:
    schema = {"type": "object", "$defs": {"id": {"type": "integer", "minimum": 3}},
              "properties": {"id": {"$ref": "#/$defs/id"}, "p": {"$ref": "http://127.0.0.1:9/never"}},
              "required": ["id", "p"]}
    assert arguments_by_schema(schema) == {"id": 3, "p": "example"}


def test_url_mode_is_declined_by_the_default_and_a_form_accepted() -> None:
    assert answer_by_schema({"method": "elicitation/create", "params": {"mode": "url", "url": "https://x"}}) == {
        "action": "decline"}
    form = {"method": "elicitation/create", "params": {"requestedSchema": {"type": "object", "properties": {
        "ok": {"type": "boolean"}}}}}
    assert answer_by_schema(form) == {"action": "accept", "content": {"ok": True}}


@pytest.mark.parametrize(("schema", "text", "value"), [
    ({"type": "boolean"}, "y", True), ({"type": "boolean"}, "no", False), ({"type": "integer"}, " 42 ", 42),
    ({"type": "number"}, "2.5", 2.5), ({"type": "array"}, "a, b", ["a", "b"]), ({"type": "string"}, " x ", " x "),
])
def test_typed_text_is_read_by_the_fields_type(schema: dict[str, Any], text: str, value: Any) -> None:
    assert parse_value(field(schema), text) == value


def test_text_of_the_wrong_type_says_what_was_expected() -> None:
    with pytest.raises(ValueError, match="x is a whole number"):
        parse_value(field({"type": "integer"}), "many")
    with pytest.raises(ValueError, match="x is yes or no"):
        parse_value(field({"type": "boolean"}), "maybe")


def test_content_problems_name_each_field() -> None:
    schema = {"type": "object", "required": ["a"], "properties": {"a": {"type": "string"},
                                                                  "n": {"type": "integer", "maximum": 3}}}
    assert content_problems(schema, {"n": 4}) == ["a is required", "n must be at most 3"]
    assert content_problems(schema, {"a": 1}) == ["a must be a string"]


def tool(props: dict[str, Any]) -> dict[str, Any]:
    return {"name": "t", "inputSchema": {"type": "object", "properties": props}}


#: Each way an x-mcp-header annotation is invalid (SEP-2243), with the words the refusal uses.
INVALID = {
    "empty": ({"v": {"type": "string", "x-mcp-header": ""}}, "is empty"),
    "object": ({"v": {"type": "object", "x-mcp-header": "V"}}, "this one is object"),
    "array": ({"v": {"type": "array", "x-mcp-header": "V"}}, "this one is array"),
    "null": ({"v": {"type": "null", "x-mcp-header": "V"}}, "this one is null"),
    "number": ({"v": {"type": "number", "x-mcp-header": "V"}}, "this one is number"),
    "untyped": ({"v": {"x-mcp-header": "V"}}, "this one is untyped"),
    "same": ({"a": {"type": "string", "x-mcp-header": "R"}, "b": {"type": "string", "x-mcp-header": "R"}},
             "is also on a"),
    "case": ({"a": {"type": "string", "x-mcp-header": "My"}, "b": {"type": "string", "x-mcp-header": "my"}},
             "is also on a"),
    "space": ({"v": {"type": "string", "x-mcp-header": "My V"}}, "(' ')"),
    "colon": ({"v": {"type": "string", "x-mcp-header": "A:B"}}, "(':')"),
    "non-ascii": ({"v": {"type": "string", "x-mcp-header": "Région"}}, "('é')"),
    "control": ({"v": {"type": "string", "x-mcp-header": "A\t1"}}, "('\\t')"),
    "not a string": ({"v": {"type": "string", "x-mcp-header": 7}}, "must be a string"),
}


@pytest.mark.parametrize("case", sorted(INVALID))
def test_each_invalid_header_annotation_is_refused_with_its_reason(case: str) -> None:
    props, words = INVALID[case]
    problems = tool_problems(tool(props))
    assert len(problems) == 1 and words in problems[0], problems


def test_a_valid_tool_keeps_its_headers_beside_invalid_ones() -> None:
    listed = read_tools({"tools": [tool({"r": {"type": "string", "x-mcp-header": "Region"},
                                         "n": {"type": "integer", "x-mcp-header": "N"},
                                         "f": {"type": "boolean", "x-mcp-header": "F"}}),
                                   {"name": "bad", "inputSchema": {"type": "string"}}, "junk"]})
    assert listed[0].valid and listed[0].headers == {"r": "Region", "n": "N", "f": "F"}
    assert listed[1].problems == ('inputSchema must have "type": "object"',) and not listed[1].headers
    assert listed[2].problems == ("the entry is not an object",)
