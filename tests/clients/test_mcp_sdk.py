"""`POST /v1/mcp` driven by the official MCP Python SDK (PyPI `mcp`, pinned in
requirements.txt): its streamable-HTTP client transport and `ClientSession` against a
real memvault process.

memvault's endpoint is stateless with JSON responses: no `Mcp-Session-Id`, no SSE stream;
the SDK must handshake, list the tools, call them and see their structured results.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone
from typing import Any

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from conftest import new_tenant

TOOLS = {
    "search_memory",
    "get_memory",
    "store_memory",
    "list_collections",
    "related_memory",
    "what_changed",
    "collection_health",
    "summarize_collection",
    "find_duplicates",
    "archive_stale",
}


def _http_client(key: str, statuses: list[int] | None = None) -> httpx2.AsyncClient:
    """An HTTP client that sends `key` and, when asked, records every response status."""

    async def record(response: httpx2.Response) -> None:
        if statuses is not None:
            statuses.append(response.status_code)
            if response.status_code == 401:
                statuses.append(response.headers.get("www-authenticate"))

    return httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {key}"},
        timeout=httpx2.Timeout(60.0),
        event_hooks={"response": [record]},
    )


async def _session_run(base_url: str, key: str, body, statuses: list | None = None) -> Any:
    async with _http_client(key, statuses) as http:
        async with streamable_http_client(f"{base_url}/v1/mcp", http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                return await body(session)


def run(server, key: str, body, statuses: list | None = None) -> Any:
    return asyncio.run(asyncio.wait_for(_session_run(server.base_url, key, body, statuses), 120))


def test_mcp_sdk_handshake_tools_and_calls(server):
    key = new_tenant(server)
    since = (datetime.now(timezone.utc) - timedelta(minutes=1)).isoformat()

    async def body(session: ClientSession) -> None:
        initialized = await session.initialize()
        assert initialized.server_info.name == "memvault"
        assert initialized.protocol_version in ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")

        listed = await session.list_tools()
        assert {tool.name for tool in listed.tools} == TOOLS
        for tool in listed.tools:
            assert tool.input_schema["type"] == "object"

        stored = await session.call_tool(
            "store_memory",
            {"collection": "sdk-notes", "text": "The marrowind lighthouse opens at dawn.", "importance": 0.7},
        )
        assert not stored.is_error, stored
        memory = stored.structured_content
        assert memory["text"] == "The marrowind lighthouse opens at dawn."
        memory_id = memory["id"]
        await session.call_tool(
            "store_memory", {"collection": "sdk-notes", "text": "The marrowind lighthouse opens at dawn."}
        )

        found = await session.call_tool("search_memory", {"query": "marrowind lighthouse", "mode": "text"})
        assert not found.is_error, found
        assert found.structured_content is not None
        assert memory_id in [hit["id"] for hit in found.structured_content["results"]]
        assert found.content[0].type == "text"

        got = await session.call_tool("get_memory", {"collection": "sdk-notes", "memory_id": memory_id})
        assert not got.is_error and got.structured_content["id"] == memory_id

        changed = await session.call_tool("what_changed", {"collection": "sdk-notes", "since": since})
        assert not changed.is_error, changed
        assert memory_id in [item["id"] for item in changed.structured_content["changed"]]

        duplicates = await session.call_tool("find_duplicates", {"collection": "sdk-notes"})
        assert not duplicates.is_error, duplicates
        assert duplicates.structured_content["dry_run"] is True
        assert len(duplicates.structured_content["clusters"]) == 1

        with pytest.raises(MCPError) as unknown:
            await session.call_tool("drop_everything", {})
        assert unknown.value.code == -32602

        with pytest.raises(MCPError) as invalid:
            await session.call_tool("search_memory", {"query": "x", "limit": 0})
        assert invalid.value.code == -32602

        missing = await session.call_tool("get_memory", {"collection": "sdk-notes", "memory_id": "nope"})
        assert missing.is_error
        assert "404" in missing.content[0].text

    run(server, key, body)


def test_mcp_sdk_read_only_key_cannot_store(server):
    owner = new_tenant(server)
    created = httpx2.post(
        f"{server.base_url}/v1/memory/keys",
        headers={"Authorization": f"Bearer {owner}"},
        json={"label": "sdk-reader", "read_only": True},
        timeout=30,
    )
    assert created.status_code == 201, created.text
    reader = created.json()["key"]

    async def body(session: ClientSession) -> None:
        await session.initialize()
        refused = await session.call_tool("store_memory", {"collection": "ro", "text": "Not allowed."})
        assert refused.is_error
        assert "403" in refused.content[0].text
        listed = await session.call_tool("list_collections", {})
        assert listed.structured_content == {"collections": []}

    run(server, reader, body)


def test_mcp_sdk_bad_key_sees_http_401(server):
    statuses: list = []

    async def body(session: ClientSession) -> None:
        await session.initialize()

    with pytest.raises(BaseException):
        run(server, "mv_not_a_real_key_000000000000", body, statuses)
    assert 401 in statuses, statuses
    assert 'Bearer realm="memvault"' in statuses, statuses
