"""LlamaCppPolicy: rollouts on llama.cpp's server, the fast path for small models on a CPU.

The checkpoint is converted to GGUF once (clawloop.policy.gguf_export, cached by content hash)
and served by a private `llama-server` process on a UNIX socket in a temporary directory, so no
TCP port is opened and sandboxed agents cannot reach it. Prompts are rendered and tokenized with
the checkpoint's own HF tokenizer exactly as HFPolicy does and sent as token ids; the reply comes
back as token ids and is decoded by the same tokenizer, so llama.cpp's tokenizer never decides
anything. The server batches the requests of one `generate` call (one per conversation, sent
concurrently) with continuous batching and keeps each slot's KV cache for the next turn.

`scripts/setup.sh` builds `llama-server` from the llama.cpp sources that the pinned
`llama-cpp-python` sdist vendors (scripts/llama-cpp-requirements.txt) into `.runtime-llama/`.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from clawloop.errors import ClawloopError
from clawloop.policy.gguf_export import cached_gguf
from clawloop.policy.types import (
    END_OF_TURN,
    Conversation,
    Generation,
    LlamaCppPolicyConfig,
    SamplingParams,
    cut_at_stop,
)

SERVER_ENV = "CLAWLOOP_LLAMA_SERVER"
SETUP_HINT = "run scripts/setup.sh (it builds llama-server), or set CLAWLOOP_LLAMA_SERVER to one"


def find_server(configured: str | None = None) -> Path:
    """The llama-server binary: the configured path, $CLAWLOOP_LLAMA_SERVER, or the one setup built."""
    candidates = [configured, os.environ.get(SERVER_ENV)]
    candidates.append(str(Path(__file__).resolve().parents[2] / ".runtime-llama" / "bin" / "llama-server"))
    candidates.append(shutil.which("llama-server"))
    for c in candidates:
        if c and Path(c).is_file() and os.access(c, os.X_OK):
            return Path(c)
    raise ClawloopError(f"rollout.backend llamacpp: llama-server not found; {SETUP_HINT}")


def extra_buffer_args(cpuinfo: str = "/proc/cpuinfo") -> list[str]:
    """`--no-repack` on a CPU with AMX: there llama-server (the pinned build, GGML_NATIVE) died with
    SIGSEGV loading a q8_0 GGUF into its AMX buffers (Xeon Sapphire Rapids, 2026-12-02), while f32
    loaded; elsewhere repacking stays on (it speeds up q4_0/q8_0 on AVX2)."""
    try:
        flags = Path(cpuinfo).read_text(errors="replace")
    except OSError:
        return []
    return ["--no-repack"] if re.search(r"\bamx_(int8|tile)\b", flags) else []


class LlamaCppPolicy:
    """A checkpoint served by a private llama-server; same replies as HFPolicy, much sooner."""

    def __init__(self, model_dir: str | Path, config: LlamaCppPolicyConfig | None = None, *,
                 policy_id: str | None = None) -> None:
        import httpx
        from transformers import AutoTokenizer

        self.config = c = config or LlamaCppPolicyConfig()
        self.model_dir = Path(model_dir)
        self.policy_id = policy_id or self.model_dir.name
        binary = find_server(c.server)
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
        except OSError as e:
            raise ClawloopError(f"{model_dir}: cannot load tokenizer ({e})") from None
        start = time.perf_counter()
        self.gguf = cached_gguf(model_dir, qtype=c.gguf_type)
        self.convert_s = time.perf_counter() - start
        self.stop_ids = [i for i in {self.tokenizer.convert_tokens_to_ids(END_OF_TURN),
                                     self.tokenizer.eos_token_id} if isinstance(i, int)]
        self.max_context = c.context_per_slot
        threads = c.threads or max(1, (os.cpu_count() or 2) // 2)
        self._dir = tempfile.mkdtemp(prefix="clawloop-llama-")
        self.socket = os.path.join(self._dir, "server.sock")
        self.log_path = os.path.join(self._dir, "server.log")
        cmd = [str(binary), "-m", str(self.gguf), "--host", self.socket, "-t", str(threads),
               "-tb", str(threads), "-np", str(c.parallel), "-c", str(c.parallel * c.context_per_slot),
               "--no-kv-unified", "--no-webui", "-ngl", "0", *extra_buffer_args()]
        with open(self.log_path, "wb") as log:
            # Own process group: stopping the policy (or a timeout) kills the whole server.
            self.process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
        atexit.register(self.close)
        self.client = httpx.Client(transport=httpx.HTTPTransport(uds=self.socket),
                                   base_url="http://llama", timeout=c.request_timeout_s)
        self._wait_ready(start)
        self.start_s = time.perf_counter() - start
        self._calls = itertools.count()
        self._pool = ThreadPoolExecutor(max_workers=c.parallel, thread_name_prefix="llama")

    def _wait_ready(self, start: float) -> None:
        import httpx

        while time.perf_counter() - start < self.config.start_timeout_s + self.convert_s:
            if self.process.poll() is not None:
                raise ClawloopError(f"llama-server exited with {self.process.returncode} while loading "
                                    f"{self.gguf}: {self._log_tail()}")
            try:
                if self.client.get("/health").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        self.close()
        raise ClawloopError(f"llama-server did not start within {self.config.start_timeout_s:.0f} s: "
                            f"{self._log_tail()}")

    def _log_tail(self, n: int = 400) -> str:
        try:
            return Path(self.log_path).read_text(errors="replace")[-n:].strip().replace("\n", " | ")
        except OSError:
            return "(no log)"

    def render(self, conversation: Conversation, tools: list[dict[str, Any]] | None) -> str:
        """The prompt text of one conversation, ending with the assistant header."""
        return self.tokenizer.apply_chat_template(conversation, tools=tools, tokenize=False,
                                                  add_generation_prompt=True)

    def generate(self, conversations: Sequence[Conversation], sampling: SamplingParams,
                 *, tools: list[dict[str, Any]] | None = None) -> list[Generation]:
        prompts = [list(self.tokenizer(self.render(c, tools), add_special_tokens=False)["input_ids"])
                   for c in conversations]
        call = next(self._calls)
        futures = [self._pool.submit(self._complete, p, sampling, None if sampling.seed is None
                                     else (sampling.seed * 1_000_003 + call) * 1009 + i)
                   for i, p in enumerate(prompts)]
        return [f.result() for f in futures]

    def _complete(self, prompt: list[int], sampling: SamplingParams, seed: int | None) -> Generation:
        if len(prompt) + 1 > self.max_context:
            return Generation("", len(prompt), 0, "context", tuple(prompt), ())
        body = {
            "prompt": prompt, "n_predict": min(sampling.max_new_tokens, self.max_context - len(prompt)),
            "temperature": sampling.temperature, "top_p": sampling.top_p, "top_k": 0, "min_p": 0.0,
            "typical_p": 1.0, "repeat_penalty": 1.0, "cache_prompt": True, "return_tokens": True,
            "seed": -1 if seed is None else seed % (2**31), "stream": False,
        }
        try:
            r = self.client.post("/completion", content=json.dumps(body))
        except Exception as e:  # noqa: BLE001 (a dead server surfaces as many httpx errors)
            raise ClawloopError(f"llama-server request failed ({type(e).__name__}: {e}); "
                                f"server log: {self._log_tail()}") from None
        if r.status_code != 200:
            raise ClawloopError(f"llama-server answered {r.status_code}: {r.text[:300]}")
        data = r.json()
        tokens = [int(t) for t in data.get("tokens", [])]
        stopped = data.get("stop_type") == "eos"
        if stopped and tokens and tokens[-1] in self.stop_ids:
            body_ids = tokens[:-1]
        else:
            body_ids = tokens
            if stopped:
                tokens = [*tokens, self.stop_ids[0]]
        text = self.tokenizer.decode(body_ids, skip_special_tokens=False)
        reason = "stop" if stopped else "length"
        if sampling.stop:
            text, hit = cut_at_stop(text, sampling.stop)
            reason = "stop" if hit else reason
        return Generation(text, len(prompt), len(tokens), reason, tuple(prompt), tuple(tokens))

    def close(self) -> None:
        """Stop the server (its whole process group) and remove its socket directory."""
        proc = getattr(self, "process", None)
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=5)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        if getattr(self, "_dir", None):
            shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> LlamaCppPolicy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
