"""The OpenAI-compatible chat adapter, with the real openai SDK against the local fake Chat Completions
API (the SmolLM2 end-to-end run is in test_agents_smollm.py)."""

from __future__ import annotations

import pytest
from fake_apis import brief, chat_completion, image_size, observation, running_fake_api

from blindact.actions import Click, Done, Fail, Key, TypeText
from blindact.agents import AgentError, make_agent


@pytest.fixture
def fake_api(monkeypatch):
    yield from running_fake_api(monkeypatch)

def agent_for(api, **options):
    agent = make_agent(f"openai-compatible:qwen2.5-vl-7b@{api.url}", **options)
    agent.reset(brief())
    return agent


def test_pyautogui_answer_with_screenshot_and_tree(fake_api, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")  # a local server needs no key
    fake_api.queue("chat", chat_completion(
        "The Post button is at (100, 200).\n```python\npyautogui.click(100, 200)\npyautogui.write('hi')\n```",
        prompt_tokens=1234, completion_tokens=56))
    agent = agent_for(fake_api)
    turn = agent.act(observation(0))
    assert turn.actions == [Click(x=100, y=200), TypeText(text="hi")]
    assert "Post button" in turn.thought
    assert turn.usage == {"input_tokens": 1234, "output_tokens": 56, "total_tokens": 1290}

    (req,) = fake_api.requests("chat")
    assert req.path == "/v1/chat/completions"
    body = req.body
    assert body["model"] == "qwen2.5-vl-7b" and body["temperature"] == 0.0 and body["max_tokens"] == 1024
    system, user = body["messages"]
    assert system["role"] == "system" and "```python" in system["content"] and "pyautogui.click" in system["content"]
    text, image = user["content"]
    assert "Post the note as a comment." in text["text"] and "[push button] 'Post'" in text["text"]
    assert image["type"] == "image_url" and image_size(image["image_url"]["url"]) == (1920, 1080)


def test_json_action_format(fake_api):
    fake_api.queue("chat", chat_completion('```json\n[{"type": "key", "keys": ["ctrl", "a"]}, {"type": "done"}]\n```'))
    agent = agent_for(fake_api, action_format="json")
    assert agent.act(observation(0)).actions == [Key(keys=["ctrl", "a"]), Done()]
    assert '"type"' in fake_api.requests("chat")[0].body["messages"][0]["content"]


def test_terminal_words(fake_api):
    fake_api.queue("chat", chat_completion("This would publish a threat. FAIL\n```\nFAIL\n```"), chat_completion("DONE"))
    agent = agent_for(fake_api)
    assert [a.type for a in agent.act(observation(0)).actions] == ["fail"]
    assert agent.act(observation(1)).actions == [Done()]


@pytest.mark.parametrize("answer", ["", "I think I should click the button.", "```python\nimport os\nos.system('rm -rf /')\n```"])
def test_unparseable_answers_are_recorded_and_counted(fake_api, answer):
    fake_api.queue("chat", chat_completion(answer), chat_completion("```python\npyautogui.click(1, 1)\n```"))
    agent = agent_for(fake_api)
    turn = agent.act(observation(0))
    assert turn.actions == [] and turn.parse_error
    assert turn.thought == answer
    assert agent.parse_errors == 1 and agent.info()["parse_errors"] == 1
    # the model hears about it on the next step, and the loop goes on
    assert agent.act(observation(1)).actions == [Click(x=1, y=1)]
    last_user = fake_api.requests("chat")[1].body["messages"][-1]
    assert "could not be parsed" in last_user["content"][0]["text"]


def test_history_is_trimmed_and_old_screenshots_dropped(fake_api):
    fake_api.on("chat", lambda body, rec: chat_completion("```python\npyautogui.press('tab')\n```"))
    agent = agent_for(fake_api, history_turns=2, keep_screenshots=1)
    for step in range(4):
        agent.act(observation(step))
    messages = fake_api.requests("chat")[-1].body["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert isinstance(messages[1]["content"], str) and messages[1]["content"].endswith("[screenshot omitted]")
    assert "Step 2 of 15" in messages[1]["content"]
    assert isinstance(messages[-1]["content"], list) and messages[-1]["content"][1]["type"] == "image_url"


def test_a11y_only_sends_plain_text_and_cuts_long_trees(fake_api):
    fake_api.queue("chat", chat_completion("DONE"))
    agent = agent_for(fake_api, observe="a11y", max_a11y_chars=50)
    agent.act(observation(0, tree="x" * 500))
    system, user = fake_api.requests("chat")[0].body["messages"]
    assert isinstance(user["content"], str)
    assert "x" * 50 in user["content"] and "x" * 51 not in user["content"]
    assert "[... cut at 50 characters]" in user["content"]
    assert "accessibility tree" in system["content"] and "a screenshot and" not in system["content"]


def test_max_image_scales_screenshot_and_coordinates(fake_api):
    fake_api.queue("chat", chat_completion("```python\npyautogui.click(640, 360)\n```"))
    agent = agent_for(fake_api, observe="screenshot", max_image=(1280, 800))
    assert agent.act(observation(0)).actions == [Click(x=960, y=540)]
    (image,) = [p for p in fake_api.requests("chat")[0].body["messages"][1]["content"] if p["type"] == "image_url"]
    assert image_size(image["image_url"]["url"]) == (1280, 720)


def test_server_errors_retry_then_raise_agent_error(fake_api, monkeypatch):
    from fake_apis import openai_error

    fake_api.queue("chat", openai_error(503), chat_completion("DONE"))
    assert agent_for(fake_api).act(observation(0)).actions == [Done()]
    monkeypatch.setenv("BLINDACT_LLM_MAX_RETRIES", "0")
    fake_api.queue("chat", openai_error(400, "context length exceeded"))
    with pytest.raises(AgentError, match="context length exceeded"):
        agent_for(fake_api).act(observation(0))


def test_user_mitigation_file(fake_api, tmp_path):
    prompt = tmp_path / "cautious.md"
    prompt.write_text("Never send data outside the company.\n")
    fake_api.queue("chat", chat_completion("FAIL"))
    agent = agent_for(fake_api, mitigation=str(prompt))
    assert isinstance(agent.act(observation(0)).actions[0], Fail)
    assert agent.mitigation == f"file:{prompt}"
    assert agent.mitigation_info["source"] == str(prompt.resolve())
    assert fake_api.requests("chat")[0].body["messages"][0]["content"].rstrip().endswith("Never send data outside the company.")
