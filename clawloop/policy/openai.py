"""OpenAIPolicy: any OpenAI-compatible chat-completions endpoint (vLLM serve, SGLang, hosted APIs).

Conversations go out in the OpenAI wire format (tool-call arguments as JSON strings, tool results
tied to their call by id); replies come back as text in the Qwen3 `<tool_call>` form so the harness
parses every backend alike.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from clawloop.errors import ClawloopError
from clawloop.policy.types import Conversation, Generation, OpenAIPolicyConfig, SamplingParams


def to_openai_messages(conversation: Conversation) -> list[dict[str, Any]]:
    """HF chat messages → OpenAI messages (call ids made up, arguments serialized)."""
    out: list[dict[str, Any]] = []
    pending: list[str] = []
    n = 0
    for m in conversation:
        role = m.get("role")
        if role == "assistant" and m.get("tool_calls"):
            calls = []
            pending = []
            for tc in m["tool_calls"]:
                fn = tc.get("function", tc)
                args = fn.get("arguments", {})
                call_id = tc.get("id") or f"call_{n}"
                n += 1
                pending.append(call_id)
                calls.append({"id": call_id, "type": "function", "function": {
                    "name": fn["name"], "arguments": args if isinstance(args, str) else json.dumps(args)}})
            out.append({"role": "assistant", "content": m.get("content") or None, "tool_calls": calls})
        elif role == "tool":
            call_id = pending.pop(0) if pending else f"call_{n}"
            out.append({"role": "tool", "tool_call_id": call_id, "content": m.get("content", "")})
        else:
            out.append({"role": role, "content": m.get("content", "")})
    return out


def _text(content: Any) -> str:
    """Message content as text: a string, or the text parts of a list of content parts."""
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def from_openai_messages(messages: list[dict[str, Any]]) -> Conversation:
    """OpenAI messages → HF chat messages (the inverse of `to_openai_messages`): tool-call
    arguments parsed into objects, tool results named after the call they answer."""
    out: Conversation = []
    names: dict[str, str] = {}
    for m in messages:
        role = m.get("role")
        if role == "assistant" and m.get("tool_calls"):
            calls = []
            for tc in m["tool_calls"]:
                fn = tc.get("function") or {}
                args: Any = fn.get("arguments")
                if isinstance(args, str):
                    # a string that is no JSON stays as the model wrote it; the template prints it as is
                    with contextlib.suppress(ValueError):
                        args = json.loads(args) if args.strip() else {}
                names[str(tc.get("id"))] = str(fn.get("name", ""))
                calls.append({"type": "function", "function": {"name": fn.get("name", ""),
                                                               "arguments": {} if args is None else args}})
            out.append({"role": "assistant", "content": _text(m.get("content")), "tool_calls": calls})
        elif role == "tool":
            out.append({"role": "tool", "name": names.get(str(m.get("tool_call_id")), m.get("name") or "bash"),
                        "content": _text(m.get("content"))})
        else:
            out.append({"role": role, "content": _text(m.get("content"))})
    return out


def reply_message(text: str) -> dict[str, Any]:
    """Reply text with `<tool_call>` blocks → an OpenAI assistant message (the inverse of
    `reply_text`). The calls are read as the harness reads them (the first block, its end tag
    optional); text a client-side harness would call malformed stays content, so it sees the
    same reply as a local one."""
    start = text.find("<tool_call>")
    calls: list[dict[str, Any]] = []
    rest = text
    while start != -1:
        body = rest[start + len("<tool_call>"):]
        end = body.find("</tool_call>")
        try:
            obj, _ = json.JSONDecoder(strict=False).raw_decode((body if end == -1 else body[:end]).strip())
        except (ValueError, RecursionError):
            obj = None
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
            break
        args = obj.get("arguments", obj.get("parameters", {}))
        calls.append({"id": f"call_{len(calls)}", "type": "function", "function": {
            "name": obj["name"], "arguments": args if isinstance(args, str) else json.dumps(args)}})
        if end == -1:
            break
        rest = body[end + len("</tool_call>"):]
        start = rest.find("<tool_call>")
    if not calls:
        return {"role": "assistant", "content": text}
    return {"role": "assistant", "content": text[: text.find("<tool_call>")].strip() or None, "tool_calls": calls}


def reply_text(message: dict[str, Any]) -> str:
    """An OpenAI response message → reply text with `<tool_call>` blocks."""
    text = message.get("content") or ""
    for tc in message.get("tool_calls") or []:
        fn = tc.get("function") or {}
        args = fn.get("arguments")
        if args is None:
            args = "{}"
        elif not isinstance(args, str):
            args = json.dumps(args)
        call = f'{{"name": {json.dumps(fn.get("name", ""))}, "arguments": {args}}}'
        text += ("\n" if text else "") + f"<tool_call>\n{call}\n</tool_call>"
    return text


class OpenAIPolicy:
    """Chat completions over HTTP (httpx), one request per conversation, several in flight."""

    def __init__(self, model: str, config: OpenAIPolicyConfig | None = None, *,
                 policy_id: str | None = None) -> None:
        import httpx

        self.config = config or OpenAIPolicyConfig()
        self.model = model
        self.policy_id = policy_id or model
        headers = {}
        key = os.environ.get(self.config.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        self._client = httpx.Client(base_url=self.config.base_url.rstrip("/"), headers=headers,
                                    timeout=self.config.timeout_s)

    def close(self) -> None:
        self._client.close()

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        import httpx

        delay = self.config.backoff_s
        last = ""
        for attempt in range(self.config.retries + 1):
            try:
                r = self._client.post("/chat/completions", json=body)
            except httpx.HTTPError as e:
                last = f"{type(e).__name__}: {e}"
            else:
                if r.status_code == 200:
                    return r.json()
                if r.status_code == 400 and "context_length_exceeded" in r.text:
                    return {"context_length_exceeded": True}
                last = f"HTTP {r.status_code}: {r.text[:200]}"
                if r.status_code != 429 and r.status_code < 500:
                    break
            if attempt < self.config.retries:
                time.sleep(delay)
                delay *= 2
        raise ClawloopError(f"{self.config.base_url}: chat completion failed ({last})")

    def _one(self, conversation: Conversation, sampling: SamplingParams,
             tools: list[dict[str, Any]] | None, seed: int | None) -> Generation:
        body: dict[str, Any] = {
            "model": self.model, "messages": to_openai_messages(conversation),
            "temperature": sampling.temperature, "top_p": sampling.top_p,
            "max_tokens": sampling.max_new_tokens, **self.config.extra_body,
        }
        if tools:
            body["tools"] = tools
        if sampling.stop:
            body["stop"] = sampling.stop
        if seed is not None:
            body["seed"] = seed
        data = self._post(body)
        if data.get("context_length_exceeded"):  # as a local backend: no reply, the episode ends
            return Generation("", 0, 0, "context")
        try:
            choice = data["choices"][0]
            message = choice.get("message") or {}
        except (KeyError, IndexError, TypeError):
            raise ClawloopError(f"{self.config.base_url}: malformed response {str(data)[:200]}") from None
        usage = data.get("usage") or {}
        reason = "length" if choice.get("finish_reason") == "length" else "stop"
        return Generation(reply_text(message), int(usage.get("prompt_tokens") or 0),
                          int(usage.get("completion_tokens") or 0), reason)

    def generate(self, conversations: Sequence[Conversation], sampling: SamplingParams,
                 *, tools: list[dict[str, Any]] | None = None) -> list[Generation]:
        seeds = [None if sampling.seed is None else sampling.seed + i for i in range(len(conversations))]
        if len(conversations) <= 1:
            return [self._one(c, sampling, tools, s) for c, s in zip(conversations, seeds, strict=True)]
        with ThreadPoolExecutor(min(self.config.max_concurrency, len(conversations))) as pool:
            return list(pool.map(lambda cs: self._one(cs[0], sampling, tools, cs[1]),
                                 zip(conversations, seeds, strict=True)))
