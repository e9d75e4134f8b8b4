"""`clawloop serve`: a local policy behind the OpenAI chat-completions API (clawloop.policy.serve)."""

from __future__ import annotations

import signal

import typer

from clawloop.commands import POLICY_SET_HELP, app, parse_sets
from clawloop.errors import ClawloopError
from clawloop.policy.load import load_policy, parse_spec, with_options
from clawloop.policy.serve import ServeConfig, make_server, url


@app.command()
def serve(
    model: str = typer.Argument(..., help="The policy: DIR or hf:DIR (transformers), llamacpp:DIR, auto:DIR, vllm:DIR."),
    host: str = typer.Option("127.0.0.1", help="Interface to listen on."),
    port: int = typer.Option(8000, help="TCP port (0: a free one, printed at start)."),
    window_ms: float = typer.Option(10.0, help="Keep batching while requests arrive within this many ms."),
    max_wait_ms: float = typer.Option(100.0, help="Most time the first request of a batch waits."),
    max_batch: int = typer.Option(64, help="Most conversations per generate call."),
    threads: int = typer.Option(None, help="CPU threads for generation (default: half the cores)."),
    name: str = typer.Option(None, help="Model id to report (default: the model directory's name)."),
    policy_sets: list[str] = typer.Option([], "--policy-set", help=POLICY_SET_HELP),
    allow_host: list[str] = typer.Option([], "--allow-host", help="A host name clients may call this server by, "
                                         "besides 127.0.0.1, localhost and [::1] (Host and Origin are checked "
                                         "against these); repeatable."),
    token: str = typer.Option(None, envvar="CLAWLOOP_SERVE_TOKEN", show_default=False,
                              help="Require `Authorization: Bearer TOKEN` on every request (better from "
                                   "$CLAWLOOP_SERVE_TOKEN than the command line, which other users see; a "
                                   "client sets it with --policy-set openai.api_key_env=CLAWLOOP_SERVE_TOKEN)."),
) -> None:
    """Serve MODEL at /v1/chat/completions (OpenAI wire format, tools in, tool_calls out), batching
    concurrent requests into one generate call; Ctrl-C or SIGTERM stops it. Requests must be
    `application/json` and name this server in Host (and Origin, when sent): a web page cannot
    drive it."""
    spec = parse_spec(model)
    if spec.backend == "openai":
        raise ClawloopError(f"{model}: serve a local policy (DIR, hf:, llamacpp:, auto:, vllm:), not an endpoint")
    spec = with_options(spec, parse_sets(policy_sets, "--policy-set"))
    if threads is not None:
        spec.hf.engine.threads = spec.llamacpp.threads = threads
    config = ServeConfig(host=host, port=port, window_ms=window_ms, max_wait_ms=max_wait_ms,
                         max_batch=max_batch, model_name=name, allowed_hosts=allow_host, token=token or None)
    policy = load_policy(spec)
    try:
        server = make_server(policy, config)
    except OSError as e:
        raise ClawloopError(f"{host}:{port}: cannot listen ({e.strerror or e})") from None

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    auth = " (bearer token required)" if config.token else ""
    print(f"serving {model} as {server.model!r} at {url(server)}{auth}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        close = getattr(policy, "close", None)
        if close is not None:
            close()
        print(f"stopped: {server.batcher.stats}", flush=True)
