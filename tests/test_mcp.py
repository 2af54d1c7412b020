"""The server as an MCP server (GRADIO_MCP_SERVER=true), driven by the ``mcp`` Python client over streamable
HTTP: exactly the three tools, with their schemas, and ``translate`` answering as the REST route does."""
from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request

import pytest

from helpers.space_fixtures import serving, untrained_model_dir  # noqa: I001 - puts the repository root on sys.path
from space.hosting.limits import Limits

mcp = pytest.importorskip("mcp", reason="the mcp client (gradio[mcp]) is not installed")
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

pytestmark = pytest.mark.slow
TEXT = "A dog runs in the park."


@pytest.fixture(scope="module")
def served(tmp_path_factory, tiny_tokenizer):
    model = untrained_model_dir(tmp_path_factory.mktemp("mcp"), tiny_tokenizer)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GRADIO_MCP_SERVER", "true")
        with serving([model], Limits(max_output_tokens=12)) as running:
            yield running


async def session_call(url: str, work):
    async with streamable_http_client(url) as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return await work(session)


def rest(served, path: str, params: dict) -> dict:
    request = urllib.request.Request(served.url.rstrip("/") + path, data=json.dumps(params).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.loads(response.read())


def test_tools_listed_with_schemas_and_translate_equals_rest(served):
    url = served.url + "gradio_api/mcp/"

    async def work(session):
        tools = (await session.list_tools()).tools
        answer = await session.call_tool("translate", {"text": TEXT, "source": "en", "target": "de"})
        detected = await session.call_tool("detect", {"text": TEXT})
        languages = await session.call_tool("languages", {})
        refused = await session.call_tool("translate", {"text": TEXT, "source": "en", "target": "fr"})
        return tools, answer, detected, languages, refused

    tools, answer, detected, languages, refused = asyncio.run(session_call(url, work))
    by_name = {tool.name: tool for tool in tools}
    assert set(by_name) == {"translate", "detect", "languages"}
    schema = by_name["translate"].inputSchema
    assert set(schema["properties"]) == {"text", "source", "target"}
    assert schema["properties"]["source"]["enum"] == ["auto", "en", "de", "fr", "cs"]
    assert schema["properties"]["target"]["enum"] == ["en", "de", "fr", "cs"]
    assert "Translate text between English" in by_name["translate"].description
    assert not answer.isError
    expected = rest(served, "/translate", {"q": TEXT, "source": "en", "target": "de"})["translatedText"]
    assert answer.content[0].text == expected
    assert json.loads(detected.content[0].text) == rest(served, "/detect", {"q": TEXT})
    assert json.loads(languages.content[0].text) == [{"code": "en", "name": "English", "targets": ["de"]}]
    assert refused.isError and "French (fr) is not available as a target language from English (en)" in \
        refused.content[0].text


def _post_mcp(served, body: bytes):
    request = urllib.request.Request(served.url + "gradio_api/mcp/", data=body, method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


@pytest.mark.parametrize("body, message", [
    (b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":' + b"[" * 100_000 + b"]" * 100_000 + b"}",
     "Parse error: the JSON is nested too deeply"),
    (b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"a":' + b"[" * 40 + b"]" * 40 + b"}}",
     "Invalid Request: the JSON is nested more than 32 deep"),
    (b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"tools/list"}',
     "Parse error: Exceeds the limit (4300 digits) for integer string conversion: value has 5000 digits"),
    (b'{"jsonrpc":"2.0","id":' + b"9" * 30 + b',"method":"tools/list"}',
     "Invalid Request: an id must be a string, an integer of at most 64 bits or null"),
])
def test_a_hostile_json_rpc_body_is_a_one_line_400(served, body, message, caplog):
    import logging

    caplog.set_level(logging.INFO)
    status, answer = _post_mcp(served, body)
    assert status == 400 and json.loads(answer)["error"]["message"] == message, answer[:200]
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert [r.getMessage() for r in caplog.records if r.name == "space.rest.jsonrpc"] == [
        f"MCP /gradio_api/mcp/: 400 {message}"]
