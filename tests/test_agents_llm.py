"""blindact.llm: model specs, clients, keys, retries and chat() over the three providers, with the real
SDKs talking to a local fake API."""

from __future__ import annotations

import pytest
from fake_apis import (
    anthropic_error,
    anthropic_message,
    chat_completion,
    openai_error,
    running_fake_api,
    text_block,
)

from blindact import llm
from blindact.llm import (
    LLMError,
    MissingAPIKey,
    ModelSpec,
    ModelSpecError,
    chat,
    parse_model_spec,
)


@pytest.fixture
def api(monkeypatch):
    yield from running_fake_api(monkeypatch)


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("anthropic:claude-opus-4-1", ModelSpec("anthropic", "claude-opus-4-1")),
        ("openai:computer-use-preview", ModelSpec("openai", "computer-use-preview")),
        ("OpenAI-Compatible:smollm2@http://127.0.0.1:8080",
         ModelSpec("openai-compatible", "smollm2", "http://127.0.0.1:8080/v1")),
        ("openai-compatible:qwen2.5-vl:7b@http://gpu:11434/v1/",
         ModelSpec("openai-compatible", "qwen2.5-vl:7b", "http://gpu:11434/v1")),
        ("openai-compatible:org/model@rev2@https://h:9/api", ModelSpec("openai-compatible", "org/model@rev2", "https://h:9/api")),
    ],
)
def test_parse_model_spec(spec, expected):
    assert parse_model_spec(spec) == expected


@pytest.mark.parametrize(
    "spec, fragment",
    [
        ("claude", "must look like"),
        ("gemini:pro", "unknown provider 'gemini'"),
        ("anthropic:", "names no model"),
        ("openai-compatible:llama", "needs the server's URL"),
    ],
)
def test_bad_model_specs_say_what_is_wrong(spec, fragment):
    with pytest.raises(ModelSpecError, match=fragment):
        parse_model_spec(spec)


@pytest.mark.parametrize("provider, var", [("anthropic", "ANTHROPIC_API_KEY"), ("openai", "OPENAI_API_KEY")])
def test_missing_key_names_the_variable(monkeypatch, provider, var):
    monkeypatch.delenv(var, raising=False)
    with pytest.raises(MissingAPIKey, match=var) as info:
        llm.make_client(f"{provider}:some-model")
    assert info.value.variable == var


def test_openai_compatible_needs_no_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    client = llm.make_client("openai-compatible:m@http://127.0.0.1:1/v1")
    assert str(client.base_url).rstrip("/") == "http://127.0.0.1:1/v1"


def test_retry_settings_are_applied(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("BLINDACT_LLM_MAX_RETRIES", "7")
    monkeypatch.setenv("BLINDACT_LLM_TIMEOUT", "12.5")
    client = llm.make_client("anthropic:m")
    assert client.max_retries == 7
    assert client.timeout == 12.5
    assert llm.make_client("anthropic:m", max_retries=1).max_retries == 1


def test_chat_anthropic_system_usage_and_schema(api):
    api.queue("messages", anthropic_message(text_block('{"verdict": "safe"}'), input_tokens=321, output_tokens=12))
    schema = {"type": "object", "properties": {"verdict": {"type": "string"}}, "required": ["verdict"],
              "additionalProperties": False}
    reply = chat("anthropic:claude-judge", [{"role": "system", "content": "extra rule"},
                                            {"role": "user", "content": "judge this"}],
                 system="You are a judge.", max_tokens=99, json_schema=schema)
    assert reply.text == '{"verdict": "safe"}'
    assert reply.usage["input_tokens"] == 321 and reply.usage["output_tokens"] == 12
    (req,) = api.requests("messages")
    assert "test-key" in (req.headers.get("x-api-key", "") + req.headers.get("authorization", ""))
    assert req.body["system"] == "You are a judge.\n\nextra rule"
    assert req.body["messages"] == [{"role": "user", "content": "judge this"}]
    assert req.body["max_tokens"] == 99 and "temperature" not in req.body
    assert req.body["output_config"] == {"format": {"type": "json_schema", "schema": schema}}


def test_chat_openai_reasoning_model_gets_no_temperature(api):
    api.queue("chat", chat_completion("yes", prompt_tokens=50, completion_tokens=3))
    reply = chat("openai:o4-mini", [{"role": "user", "content": "q"}], system="sys", max_tokens=64,
                 json_schema={"title": "BGD verdict", "type": "object"})
    assert reply.text == "yes"
    assert reply.usage == {"input_tokens": 50, "output_tokens": 3, "total_tokens": 53}
    (req,) = api.requests("chat")
    assert req.headers["authorization"] == "Bearer test-key"
    assert req.body["messages"][0] == {"role": "system", "content": "sys"}
    assert req.body["max_completion_tokens"] == 64
    assert "temperature" not in req.body and "max_tokens" not in req.body
    fmt = req.body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "BGD_verdict"
    assert fmt["json_schema"]["strict"] is False


def test_chat_openai_compatible_uses_spec_url(api, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    api.queue("chat", chat_completion("B"))
    reply = chat(f"openai-compatible:smollm2@{api.url}", [{"role": "user", "content": "pick"}], temperature=0.3)
    assert reply.text == "B"
    (req,) = api.requests("chat")
    assert req.path == "/v1/chat/completions"
    assert req.body["max_tokens"] == 1024 and req.body["temperature"] == 0.3


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_chat_retries_429_and_500_then_succeeds(api, provider):
    if provider == "anthropic":
        api.queue("messages", anthropic_error(429), anthropic_error(529), anthropic_message(text_block("ok")))
        route = "messages"
    else:
        api.queue("chat", openai_error(429), openai_error(500), chat_completion("ok"))
        route = "chat"
    assert chat(f"{provider}:m", [{"role": "user", "content": "hi"}]).text == "ok"
    assert len(api.requests(route)) == 3


def test_chat_gives_up_with_llm_error_naming_spec_and_status(api, monkeypatch):
    monkeypatch.setenv("BLINDACT_LLM_MAX_RETRIES", "1")
    api.queue("chat", openai_error(503), openai_error(503), chat_completion("never"))
    with pytest.raises(LLMError, match=r"openai:gpt-4\.1 \(HTTP 503\)") as info:
        chat("openai:gpt-4.1", [{"role": "user", "content": "hi"}])
    assert info.value.status == 503
    assert len(api.requests("chat")) == 2  # first try + one retry
    assert api.left("chat") == 1


def test_chat_does_not_retry_a_bad_request(api):
    api.queue("messages", anthropic_error(400, "messages: roles must alternate"))
    with pytest.raises(LLMError, match="roles must alternate"):
        chat("anthropic:m", [{"role": "user", "content": "hi"}])
    assert len(api.requests("messages")) == 1


def test_chat_rejects_unknown_roles():
    with pytest.raises(ValueError, match="role 'tool'"):
        chat("openai-compatible:m@http://127.0.0.1:1", [{"role": "tool", "content": "x"}])


def test_chat_openai_compatible_falls_back_to_json_object_schema(api):
    from fake_apis import Reply

    # what llama.cpp's server answers: a 500 naming the field (without the fallback, the SDK would retry it)
    api.queue("chat", Reply({"detail": [{"loc": ["body", "response_format", "type"], "msg": "Input should be "
                                         "'text' or 'json_object'"}]}, status=500),
              chat_completion('{"answer": "unknown"}'), chat_completion('{"answer": "A"}'))
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}}
    reply = chat(f"openai-compatible:m@{api.url}", [{"role": "user", "content": "q"}], json_schema=schema)
    assert reply.text == '{"answer": "unknown"}'
    first, second = api.requests("chat")
    assert first.body["response_format"]["type"] == "json_schema"
    assert second.body["response_format"] == {"type": "json_object", "schema": schema}
    # remembered for this server: the next call goes straight to the form it accepts
    chat(f"openai-compatible:m@{api.url}", [{"role": "user", "content": "q"}], json_schema=schema)
    assert api.requests("chat")[2].body["response_format"]["type"] == "json_object"
