"""`clawloop serve`: a local policy behind the OpenAI chat-completions API, with tools.

    server = make_server(policy, ServeConfig(port=8000)); server.serve_forever()

POST /v1/chat/completions takes the OpenAI wire format (messages with tool calls and tool
results, `tools`, temperature, top_p, max_tokens, seed, stop) and answers with `tool_calls`
(`finish_reason: "tool_calls"`) or content. Conversions are openai_policy's, so `OpenAIPolicy`
→ `clawloop serve` → a local policy gives the harness the replies the local policy gives it.
Requests that arrive together are batched into one `policy.generate` call: the first request of
a batch waits up to `max_wait_ms` while more arrive (each new one within `window_ms` of the
last), so a lockstep rollout's step, sent as concurrent requests, is generated as one batch. A
prompt over the model's context is refused with `context_length_exceeded` (HTTP 400), as OpenAI
and vLLM do. GET /v1/models lists the one model; GET /health gives request and batch counts.
Streaming and n > 1 are refused (HTTP 400).

Only this machine's own clients are served, browsers included, which fetch whatever a page
tells them: a web page may POST `text/plain` to any address without asking (no CORS preflight),
and a DNS name rebound to 127.0.0.1 lets a page read the answers. So a POST must say
`Content-Type: application/json` (which a page cannot send cross-origin without a preflight,
and this server answers none), every request must name this server in `Host`
(127.0.0.1, localhost or [::1] with its port, or a name in `allowed_hosts`), and an `Origin`, when
a browser sends one, must be that too. `token` adds a bearer token for machines with other users.
"""

from __future__ import annotations

import hmac
import json
import queue
import threading
import time
import uuid
from concurrent.futures import Future
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from clawloop.policy.openai import from_openai_messages, reply_message
from clawloop.policy.types import Conversation, Generation, Policy, SamplingParams


class ServeConfig(BaseModel):
    """Where and how `clawloop serve` listens and batches."""

    model_config = ConfigDict(extra="forbid")

    host: str = "127.0.0.1"
    """Interface to listen on (127.0.0.1: this machine only)."""
    port: int = Field(8000, ge=0, le=65535)
    """TCP port; 0 picks a free one (printed at start)."""
    window_ms: float = Field(10.0, ge=0)
    """A batch keeps collecting while each new request arrives within this many ms of the last."""
    max_wait_ms: float = Field(100.0, ge=0)
    """Most time the first request of a batch waits for others."""
    max_batch: int = Field(64, gt=0)
    """Most conversations in one generate call."""
    model_name: str | None = None
    """The model id reported (None: the policy's policy_id); requests may name any model."""
    allowed_hosts: list[str] = Field(default_factory=list)
    """Host names accepted in Host and Origin besides 127.0.0.1, localhost and [::1] (and `host`
    itself when it is one address): what clients on other machines call this one."""
    token: str | None = None
    """When set, every request must carry `Authorization: Bearer TOKEN`."""


MAX_BODY_BYTES = 16 << 20
"""Largest request body read (413 above it, before a byte is read): a long agent conversation is
well under 1 MiB, and every body is held in memory whole while it is parsed."""
DRAINED_BYTES = 64 << 10
"""A refused request's body up to this size is still read (and dropped) after the answer: closing
a connection with unread bytes resets it, and the client would lose the answer."""
READ_TIMEOUT_S = 30.0
"""Most seconds a connection may wait for a request's next bytes, and most a whole body may take
to arrive: a client that stalls (or trickles) is cut off instead of holding a thread forever."""

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
_WILDCARDS = ("", "0.0.0.0", "::")


def _host_port(value: str) -> tuple[str, int | None] | None:
    """(host, port) of a Host header value ("[::1]:8000", "localhost"); None when malformed."""
    try:
        parts = urlsplit(f"//{value}")
        return (parts.hostname or "").lower(), parts.port
    except ValueError:  # a bad port, an unclosed bracket
        return None


class BadRequest(Exception):
    """A request the server refuses (HTTP 400), with the OpenAI error code."""

    def __init__(self, message: str, code: str = "invalid_request") -> None:
        super().__init__(message)
        self.code = code


@dataclass
class _Job:
    conversation: Conversation
    sampling: SamplingParams
    tools: list[dict[str, Any]] | None
    future: Future[Generation] = field(default_factory=Future)

    @property
    def key(self) -> str:
        """Jobs with equal keys share one generate call (seeds differ per request: the first wins)."""
        return json.dumps([self.sampling.model_dump(exclude={"seed"}), self.tools], sort_keys=True)


class Batcher:
    """One worker thread that turns queued requests into batched `policy.generate` calls."""

    def __init__(self, policy: Policy, config: ServeConfig) -> None:
        self.policy, self.config = policy, config
        self.jobs: queue.Queue[_Job | None] = queue.Queue()
        self.stats = {"requests": 0, "batches": 0, "largest_batch": 0}
        self._thread = threading.Thread(target=self._run, name="clawloop-serve-batcher", daemon=True)
        self._thread.start()

    def generate(self, conversation: Conversation, sampling: SamplingParams,
                 tools: list[dict[str, Any]] | None) -> Generation:
        """Queue one conversation and wait for its reply (raises what generate raised)."""
        job = _Job(conversation, sampling, tools)
        self.jobs.put(job)
        return job.future.result()

    def close(self) -> None:
        self.jobs.put(None)
        self._thread.join(timeout=5)

    def _collect(self, first: _Job) -> list[_Job]:
        batch = [first]
        start = last = time.monotonic()
        window, most = self.config.window_ms / 1000, self.config.max_wait_ms / 1000
        while len(batch) < self.config.max_batch:
            timeout = min(last + window, start + most) - time.monotonic()
            if timeout <= 0:
                break
            try:
                job = self.jobs.get(timeout=timeout)
            except queue.Empty:
                break
            if job is None:
                self.jobs.put(None)
                break
            batch.append(job)
            last = time.monotonic()
        return batch

    def _run(self) -> None:
        while (first := self.jobs.get()) is not None:
            groups: dict[str, list[_Job]] = {}
            for job in self._collect(first):
                groups.setdefault(job.key, []).append(job)
            for jobs in groups.values():
                self.stats["requests"] += len(jobs)
                self.stats["batches"] += 1
                self.stats["largest_batch"] = max(self.stats["largest_batch"], len(jobs))
                try:
                    gens = self.policy.generate([j.conversation for j in jobs], jobs[0].sampling,
                                                tools=jobs[0].tools)
                    for j, g in zip(jobs, gens, strict=True):
                        j.future.set_result(g)
                except Exception as e:  # every request of the batch gets the error
                    for j in jobs:
                        if not j.future.done():
                            j.future.set_exception(e)


def parse_request(body: Any) -> tuple[Conversation, SamplingParams, list[dict[str, Any]] | None]:
    """(conversation, sampling, tools) of a chat-completions request body; BadRequest if malformed."""
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        raise BadRequest("messages: expected a non-empty list of message objects")
    if body.get("stream"):
        raise BadRequest("stream: streaming is not supported")
    if body.get("n", 1) != 1:
        raise BadRequest("n: only n=1 is supported")
    stop = body.get("stop") or []
    try:
        sampling = SamplingParams(
            temperature=body.get("temperature", 1.0), top_p=body.get("top_p", 1.0),
            max_new_tokens=body.get("max_tokens") or body.get("max_completion_tokens") or 256,
            seed=body.get("seed"), stop=[stop] if isinstance(stop, str) else stop)
    except ValidationError as e:
        err = e.errors()[0]
        raise BadRequest(f"{'.'.join(map(str, err['loc']))}: {err['msg']}") from None
    tools = body.get("tools") or None
    if tools is not None and not (isinstance(tools, list) and all(isinstance(t, dict) for t in tools)):
        raise BadRequest("tools: expected a list of tool objects")
    return from_openai_messages(messages), sampling, tools


def completion(gen: Generation, model: str) -> dict[str, Any]:
    """The chat-completions response of one generation."""
    message = reply_message(gen.text)
    reason = "tool_calls" if message.get("tool_calls") else ("length" if gen.finish_reason == "length" else "stop")
    return {"id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "message": message, "finish_reason": reason}],
            "usage": {"prompt_tokens": gen.prompt_tokens, "completion_tokens": gen.completion_tokens,
                      "total_tokens": gen.prompt_tokens + gen.completion_tokens}}


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    timeout: float = READ_TIMEOUT_S  # set on the connection by socketserver: each read waits at most this

    def log_message(self, format: str, *args: Any) -> None:  # quiet: one line per request is noise
        pass

    def _send(self, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str, code: str) -> None:
        kind = "invalid_request_error" if status < 500 else "server_error"
        self._send(status, {"error": {"message": message, "type": kind, "code": code}})

    def _refused(self) -> bool:
        """Answer and return True when the request does not come from a client of this server
        (see the module doc): a foreign Host or Origin, a missing or wrong token."""
        config = self.server.config
        names = {*LOCAL_HOSTS, *(h.lower() for h in config.allowed_hosts)}
        if config.host not in _WILDCARDS:
            names.add(config.host.lower().strip("[]"))
        port = self.server.server_address[1]
        hp = _host_port(self.headers.get("Host") or "")
        if hp is None or hp[0] not in names or (hp[1] or 80) != port:
            self._error(403, f"Host {self.headers.get('Host')!r}: not this server (DNS rebinding?)", "forbidden_host")
            return True
        origin = self.headers.get("Origin")
        if origin is not None:
            try:
                o = urlsplit(origin)
                ok = o.scheme in ("http", "https") and (o.hostname or "").lower() in names and (
                    o.port or (443 if o.scheme == "https" else 80)) == port
            except ValueError:
                ok = False
            if not ok:  # a page elsewhere (or "null": a file or sandboxed frame) drives a browser here
                self._error(403, f"Origin {origin!r}: cross-origin requests are refused", "forbidden_origin")
                return True
        if config.token is not None:
            sent = self.headers.get("Authorization") or ""
            scheme, _, value = sent.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), config.token.encode()):
                self._error(401, "a bearer token is required (Authorization: Bearer TOKEN)", "invalid_api_key")
                return True
        return False

    def _too_large(self, length: int) -> bool:
        """Answer 413 and return True when the body is over MAX_BODY_BYTES."""
        if length <= MAX_BODY_BYTES:
            return False
        self._error(413, f"the request body ({length} bytes) is over {MAX_BODY_BYTES >> 20} MiB", "too_large")
        return True

    def do_GET(self) -> None:
        if self._refused():
            return
        path = self.path.split("?")[0].rstrip("/")
        if path in ("/v1/models", "/models"):
            self._send(200, {"object": "list", "data": [{"id": self.server.model, "object": "model",
                                                         "owned_by": "clawloop"}]})
        elif path == "/health":
            self._send(200, {"status": "ok", "model": self.server.model, **self.server.batcher.stats})
        else:
            self._error(404, f"{path}: not found", "not_found")

    def _read_body(self, length: int, *, answer: bool = True) -> bytes | None:
        """The body's `length` bytes, read within `timeout` (READ_TIMEOUT_S) in all; None when the
        client stalls, trickles or goes (answered 408 when `answer`)."""
        deadline, chunks, left = time.monotonic() + self.timeout, [], length
        try:
            while left:
                if time.monotonic() > deadline:
                    raise TimeoutError
                chunk = self.rfile.read1(min(left, 1 << 16))
                if not chunk:  # the client closed before sending it all
                    return None
                chunks.append(chunk)
                left -= len(chunk)
        except TimeoutError:
            if answer:
                self._error(408, f"the request body did not arrive within {self.timeout:g} s", "timeout")
            return None
        return b"".join(chunks)

    def do_POST(self) -> None:
        path = self.path.split("?")[0].rstrip("/")
        # Who is asking and how much it sends are checked before the body is read. Every refusal
        # closes the connection (its body may be unread); a small body is read after the answer
        # all the same, so the client gets the answer rather than a connection reset.
        closing, self.close_connection = self.close_connection, True
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0:
            self._error(400, "Content-Length: not a byte count", "invalid_request")
            return
        if self._refused() or self._too_large(length):
            if length <= DRAINED_BYTES:
                self._read_body(length, answer=False)
            return
        raw = self._read_body(length) if length else b""
        if raw is None:
            return
        self.close_connection = closing
        if path not in ("/v1/chat/completions", "/chat/completions"):
            self._error(404, f"{path}: not found (POST /v1/chat/completions)", "not_found")
            return
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if ctype != "application/json":  # text/plain is what a web page may send without asking
            self._error(415, f"Content-Type {ctype or '(none)'!r}: expected application/json", "unsupported_media_type")
            return
        try:
            conversation, sampling, tools = parse_request(json.loads(raw or b"null"))
        except ValueError:
            self._error(400, "the request body is not valid JSON", "invalid_json")
            return
        except BadRequest as e:
            self._error(400, str(e), e.code)
            return
        try:
            gen = self.server.batcher.generate(conversation, sampling, tools)
        except Exception as e:
            self._error(500, f"generation failed: {type(e).__name__}: {str(e)[:300]}", "generation_failed")
            return
        if gen.finish_reason == "context":
            self._error(400, f"the prompt ({gen.prompt_tokens} tokens) exceeds the model's maximum context "
                        "length", "context_length_exceeded")
            return
        self._send(200, completion(gen, self.server.model))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    batcher: Batcher
    model: str
    config: ServeConfig

    def server_close(self) -> None:
        super().server_close()
        self.batcher.close()


def make_server(policy: Policy, config: ServeConfig | None = None) -> _Server:
    """An HTTP server (not yet serving: call serve_forever) for `policy`, anything with
    `generate(conversations, sampling, tools=)` (clawloop.policy.types.Policy)."""
    config = config or ServeConfig()
    server = _Server((config.host, config.port), _Handler)
    server.batcher = Batcher(policy, config)
    server.config = config
    server.model = config.model_name or str(getattr(policy, "policy_id", "clawloop"))
    return server


def url(server: ThreadingHTTPServer) -> str:
    """The base URL clients use (…/v1)."""
    host, port = server.server_address[:2]
    return f"http://{host}:{port}/v1"
