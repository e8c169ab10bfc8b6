"""The chat proxy driven by the official `openai` Python client.

The client's `base_url` is `{server}/v1/proxy` and its API key a memvault key; the
server's platform LLM is a module-scoped fake OpenAI-compatible upstream.
"""

from __future__ import annotations

import json
import secrets
import time

import httpx
import openai
import pytest
from openai import OpenAI

from conftest import FakeUpstream, completion, new_tenant

MODEL = "gpt-4o-mini"


@pytest.fixture(scope="module")
def upstream():
    fake = FakeUpstream()
    yield fake
    fake.close()


@pytest.fixture(scope="module")
def proxy_server(start_server, upstream):
    return start_server(
        {
            "MEMVAULT__LLM__BASE_URL": upstream.base_url,
            "MEMVAULT__LLM__MODEL": MODEL,
            "MEMVAULT__LLM__MAX_RETRIES": "0",
        }
    )


@pytest.fixture()
def tenant_key(proxy_server) -> str:
    return new_tenant(proxy_server)


def client_for(server, key: str) -> OpenAI:
    return OpenAI(base_url=f"{server.base_url}/v1/proxy", api_key=key, max_retries=0, timeout=60)


def remember(server, key: str, collection: str, text: str) -> None:
    response = httpx.post(
        f"{server.base_url}/v1/memory/collections/{collection}/memories",
        headers={"Authorization": f"Bearer {key}"},
        json={"text": text},
        timeout=60,
    )
    assert response.status_code == 201, response.text


def chats(upstream: FakeUpstream, marker: str):
    """Upstream chat requests (not extraction) whose messages mention `marker`."""
    return [
        request
        for request in upstream.requests
        if isinstance(request.body, dict)
        and "response_format" not in request.body
        and marker in json.dumps(request.body["messages"])
    ]


def test_memories_are_injected_and_the_answer_carries_the_extension(proxy_server, upstream, tenant_key):
    collection = "proxy-" + secrets.token_hex(4)
    remember(proxy_server, tenant_key, collection, "Ana lives in Porto and works as a nurse.")
    marker = secrets.token_hex(6)
    upstream.script.append((200, completion("Ana lives in Porto.", model=MODEL)))

    client = client_for(proxy_server, tenant_key)
    response = client.chat.completions.create(
        model=MODEL,
        messages=[
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": f"Where does Ana live? {marker}"},
        ],
        temperature=0.1,
        extra_body={"collection": collection, "memory_limit": 3, "store": False},
    )

    assert response.choices[0].message.content == "Ana lives in Porto."
    assert response.object == "chat.completion"
    assert response.usage.total_tokens == 18
    extension = response.model_extra["memvault"]
    assert extension == response.to_dict()["memvault"]
    assert extension["stored"] is False
    assert [memory["text"] for memory in extension["memories_used"]] == [
        "Ana lives in Porto and works as a nurse."
    ]
    assert extension["memories_used"][0]["collection"] == collection

    (seen,) = chats(upstream, marker)
    messages = seen.body["messages"]
    assert messages[0] == {"role": "system", "content": "You are terse."}
    assert messages[1]["role"] == "system"
    assert "Ana lives in Porto and works as a nurse." in messages[1]["content"]
    assert messages[2]["role"] == "user"
    assert seen.body["temperature"] == 0.1
    assert seen.body["model"] == MODEL
    for field in ("collection", "memory_limit", "store"):
        assert field not in seen.body
    headers = {name.lower(): value for name, value in seen.headers.items()}
    assert "authorization" not in headers
    assert all(tenant_key not in value for value in headers.values())
    assert tenant_key not in json.dumps(seen.body)


def test_store_queues_the_user_message_for_extraction(proxy_server, upstream, tenant_key):
    collection = "proxy-store-" + secrets.token_hex(4)
    fact = {
        "type": "preference",
        "text": "My favorite color is teal.",
        "subject": "user",
        "attribute": "favorite_color",
        "value": "teal",
        "valid_until": None,
    }
    # The chat first, then the extraction job's JSON-mode call.
    upstream.script.append((200, completion("Noted.", model=MODEL)))
    upstream.script.append((200, completion(json.dumps({"facts": [fact]}), model=MODEL)))

    client = client_for(proxy_server, tenant_key)
    response = client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "My favorite color is teal."}],
        extra_body={"collection": collection},
    )
    extension = response.model_extra["memvault"]
    assert extension["stored"] is True
    job_id = extension["job_id"]

    deadline = time.monotonic() + 60
    while True:
        job = httpx.get(
            f"{proxy_server.base_url}/v1/memory/extract/job/{job_id}",
            headers={"Authorization": f"Bearer {tenant_key}"},
            timeout=30,
        ).json()
        if job["complete"]:
            break
        assert time.monotonic() < deadline, job
        time.sleep(0.2)
    assert job["state"] == "done", job
    assert [item["text"] for item in job["facts"]] == ["My favorite color is teal."]


def test_an_upstream_failure_is_a_502_status_error(proxy_server, upstream, tenant_key):
    upstream.script.append((500, {"error": {"message": "upstream exploded"}}))
    client = client_for(proxy_server, tenant_key)
    with pytest.raises(openai.InternalServerError) as raised:
        client.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": "hello"}],
            extra_body={"store": False},
        )
    assert raised.value.status_code == 502
    assert isinstance(raised.value, openai.APIStatusError)
    assert "HTTP 500" in raised.value.response.json()["detail"]


def test_a_bad_key_is_an_authentication_error(proxy_server):
    client = client_for(proxy_server, "mv_not_a_real_key")
    with pytest.raises(openai.AuthenticationError) as raised:
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    assert raised.value.status_code == 401


def test_streaming_is_refused(proxy_server, tenant_key):
    client = client_for(proxy_server, tenant_key)
    with pytest.raises(openai.UnprocessableEntityError) as raised:
        client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "hi"}], stream=True
        )
    assert "non-streaming" in raised.value.response.json()["detail"]
