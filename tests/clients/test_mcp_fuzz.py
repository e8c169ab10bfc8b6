"""`POST /v1/mcp` fuzzed with hypothesis (schemathesis cannot: the OpenAPI body schema of a
JSON-RPC endpoint does not say which messages are valid).

Messages are drawn from four families: `tools/call` with arguments that satisfy the
tool's own `inputSchema` (from `tools/list`), the same with one argument broken (dropped,
retyped or unknown), other methods with random params, and arbitrary JSON bodies. For
every one the server must answer by the wire rules in server/src/api/mcp/mod.rs:

- never a 5xx, and the server stays up;
- a request (it has an id) gets 200 with one JSON-RPC response echoing the id, or 400 for
  a message that is not one JSON-RPC request;
- a notification or client response gets 202 with no body;
- a JSON-RPC error has one of the documented codes (never -32603, internal error);
- a successful `tools/call` has text content, `isError: false`, and `structuredContent`
  with every key its `outputSchema` requires; a schema-valid call is never -32602 except
  for the documented rules the schema cannot state (blank text or query, a `since` that
  is not RFC 3339).

MEMVAULT_MCP_FUZZ_EXAMPLES sets the number of messages (default 1000).
"""

from __future__ import annotations

import json
import os
import string

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import new_tenant

EXAMPLES = int(os.environ.get("MEMVAULT_MCP_FUZZ_EXAMPLES", "1000"))
CODES = {-32700, -32600, -32601, -32602}
# What a schema-valid call may still be refused for (-32602): the rules the REST API's
# constructors hold that a JSON Schema does not state (blank text, an RFC 3339 time).
UNSTATED_RULES = ("blank", "only whitespace", "must not be empty", "RFC 3339")
COLLECTION = "fuzzed"

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=40)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12,
)


@pytest.fixture(scope="module")
def mcp(server):
    key = new_tenant(server)
    client = httpx.Client(
        base_url=server.base_url,
        headers={"Authorization": f"Bearer {key}"},
        timeout=60,
    )
    created = client.post(
        f"/v1/memory/collections/{COLLECTION}/memories",
        json={"text": "The fuzzer's seed memory about lighthouses."},
    )
    assert created.status_code == 201, created.text
    listed = client.post("/v1/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    tools = {tool["name"]: tool for tool in listed.json()["result"]["tools"]}
    yield client, tools, created.json()["id"]
    client.close()


def from_schema(schema: dict, memory_id: str) -> st.SearchStrategy:
    """Values that satisfy `schema`, for the subset the MCP tools use."""
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([from_schema({**schema, "type": one}, memory_id) for one in kind])
    if kind == "string":
        low, high = schema.get("minLength", 0), min(schema.get("maxLength", 60), 60)
        if schema.get("format") == "date-time":
            return st.datetimes().map(lambda moment: moment.isoformat() + "Z")
        if "pattern" in schema:
            # Collection names: the seeded one or a fresh valid one.
            alphabet = string.ascii_lowercase + string.digits
            return st.just(COLLECTION) | st.text(alphabet, min_size=1, max_size=20)
        text = st.text(min_size=max(low, 1) if low else 0, max_size=max(high, low))
        return st.just(memory_id) | text if high >= len(memory_id) else text
    if kind == "integer":
        return st.integers(schema.get("minimum", -(2**40)), schema.get("maximum", 2**40))
    if kind == "number":
        return st.floats(schema.get("minimum", -1e9), schema.get("maximum", 1e9), allow_nan=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "object" and "properties" in schema:
        return arguments(schema, memory_id)
    if kind == "object":
        return st.dictionaries(st.text(max_size=10), json_scalars, max_size=3)
    return json_values


def arguments(schema: dict, memory_id: str) -> st.SearchStrategy:
    properties = schema.get("properties", {})
    required = set(schema.get("required", []))
    fixed = {name: from_schema(properties[name], memory_id) for name in required}
    optional = {name: from_schema(spec, memory_id) for name, spec in properties.items() if name not in required}
    return st.fixed_dictionaries(fixed, optional=optional)


def broken(valid: dict, schema: dict) -> st.SearchStrategy:
    """`valid` with one thing wrong: a required argument dropped, a value of another type,
    or an argument the tool does not take."""
    options = [st.just({**valid, "no_such_argument": 1})]
    for name in schema.get("required", []):
        options.append(st.just({key: value for key, value in valid.items() if key != name}))
    for name in schema.get("properties", {}):
        options.append(json_values.map(lambda value, name=name: {**valid, name: value}))
    return st.one_of(options)


def tool_calls(tools: dict, memory_id: str, break_one: bool) -> st.SearchStrategy:
    @st.composite
    def call(draw):
        tool = draw(st.sampled_from(sorted(tools)))
        schema = tools[tool]["inputSchema"]
        args = draw(arguments(schema, memory_id))
        if break_one:
            args = draw(broken(args, schema))
        return {"jsonrpc": "2.0", "id": draw(st.integers(0, 2**31) | st.text(max_size=8)),
                "method": "tools/call", "params": {"name": tool, "arguments": args}}, tool, not break_one

    return call()


def other_messages() -> st.SearchStrategy:
    methods = st.sampled_from(["initialize", "ping", "tools/list", "tools/call", "resources/list",
                               "notifications/initialized", "prompts/get"]) | st.text(max_size=20)
    message = st.fixed_dictionaries(
        {},
        optional={
            "jsonrpc": st.just("2.0") | json_scalars,
            "id": st.integers() | st.text(max_size=8) | json_values,
            "method": methods | json_scalars,
            "params": json_values,
            "result": json_values,
            "error": json_values,
        },
    )
    return (message | json_values).map(lambda body: (body, None, False))


def check(response: httpx.Response, message, tool: str | None, valid: bool, tools: dict) -> str:
    """Checks one answer; returns its kind for the tally."""
    status = response.status_code
    assert status < 500, f"{status} for {message!r}: {response.text}"
    assert status in (200, 202, 400), f"{status} for {message!r}: {response.text}"
    if status == 202:
        assert response.content == b"", response.text
        return "202"
    body = response.json()
    assert body.get("jsonrpc") == "2.0", body
    assert ("result" in body) != ("error" in body), body
    if status == 400:
        assert body["error"]["code"] in (-32700, -32600), body
        return f"400 {body['error']['code']}"
    assert isinstance(message, dict) and body["id"] == message.get("id"), (message, body)
    if "error" in body:
        assert body["error"]["code"] in CODES, body
        assert isinstance(body["error"]["message"], str) and body["error"]["message"], body
        if valid:
            reason = body["error"]["message"]
            assert any(rule in reason for rule in UNSTATED_RULES), f"{message!r}: {body}"
        return f"error {body['error']['code']}"
    if tool is None:
        return "result"
    result = body["result"]
    assert isinstance(result["isError"], bool), body
    assert result["content"] and result["content"][0]["type"] == "text", body
    if not result["isError"]:
        structured = result["structuredContent"]
        for key in tools[tool]["outputSchema"].get("required", []):
            assert key in structured, f"{tool} result lacks {key}: {body}"
        return f"{tool} ok"
    return f"{tool} isError"


def test_no_message_breaks_the_mcp_endpoint(mcp, server):
    client, tools, memory_id = mcp
    messages = (
        tool_calls(tools, memory_id, break_one=False)
        | tool_calls(tools, memory_id, break_one=True)
        | other_messages()
    )

    tally: dict[str, int] = {}

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(drawn=messages, raw=st.booleans())
    def one(drawn, raw):
        message, tool, valid = drawn
        if raw and tool is None:
            # Arbitrary bytes too: not UTF-8, or not JSON.
            response = client.post("/v1/mcp", content=json.dumps(message).encode()[:-1] + b"\xff",
                                   headers={"content-type": "application/json"})
            message = None
        else:
            response = client.post("/v1/mcp", json=message)
        kind = check(response, message, tool, valid, tools)
        tally[kind] = tally.get(kind, 0) + 1

    one()
    print("answers:", dict(sorted(tally.items())))
    # The run reached every family, so a pass means something.
    for kind in ("202", "400 -32700", "400 -32600", "error -32602", "store_memory ok", "search_memory ok"):
        assert tally.get(kind, 0) > 0, f"no '{kind}' answer in {tally}"
    assert httpx.get(f"{server.base_url}/v1/memory/health", timeout=10).status_code == 200
