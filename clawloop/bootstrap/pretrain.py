"""Teacher-free pretraining of the embedded model: learn to copy before learning tasks.

A from-scratch ~4M-parameter model fine-tuned on a few hundred tasks learns the call format and
the command name but almost never copies a file name from the instruction into the command
(field notes: 0-2.5% correct results on unseen names). This phase, run by the bootstrap right
after the model is built, trains it as a causal LM on procedurally generated text that rewards
copying, so that the loop starts from a model with working induction:

- `chat`: instruction -> tool call pairs in the harness's chat format (clawloop.bootstrap.corpus
  templates), names drawn from word lists *and* random letter strings, so the only way to
  predict the name in the command is to copy it from the instruction;
- `task`: procedurally synthesized tasks (clawloop.phases.synthesize, level 1-2, a seed namespace of
  its own) as whole episodes: system prompt, instruction, the reference commands with
  placeholder observations, submit;
- `shell`: shell transcripts (`$ ls` listings, then commands on listed names, `cat` output that
  is later grepped) - induction over names and lines seen earlier in the context;
- `help`: the shipped `--help` text of common tools (shell syntax and option names);
- `repeat`: a list of random names, then the same names again in another form (as arguments
  of commands, quoted, in a different order by index): half of the tokens can only be
  predicted by copying;
- `echo`: a line of random names and letter strings, then the same line again, verbatim: the
  textbook induction task. Measured on the micro model: without it induction never formed
  in 2M tokens of the other kinds (induction_acc 0.000); pure repeated sequences form it in
  ~0.5M tokens. Only exact repeats of unpredictable spans make copying pay off early.

Nothing here reads benchmarks/ (the held-out suites): data is generated from seeds, word lists
and the shipped help text only (tests check for overlap). The copy probe
(`clawloop.bootstrap.copy_probe`) measures the skill directly on names the generator never draws.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable, Iterator
from typing import Any

from clawloop.bootstrap.copy_probe import probe
from clawloop.bootstrap.corpus import PAIRS, help_text, name_stem, quote, random_word, word
from clawloop.config.bootstrap import PretrainConfig
from clawloop.config.knobs import NO_KNOBS
from clawloop.core.agent.harness import default_system_prompt, system_prompt
from clawloop.core.agent.tool_calls import TOOLS, assistant_message, tool_message
from clawloop.core.progress import Progress
from clawloop.phases.synthesize.skills import families, family

KINDS = ("chat", "task", "shell", "help", "repeat", "echo")


# ---------------------------------------------------------------------------------------- names

_EXTS = ("txt", "csv", "json", "log", "md", "py", "sh", "conf", "yaml", "tsv", "ini", "dat", "bak", "out")


def random_stem(rng: random.Random, p_random: float = 0.5) -> str:
    """A file stem: word-list stems (as synthesis draws them) or random letter strings."""
    if rng.random() >= p_random:
        return name_stem(rng)
    a = random_word(rng)
    shape = rng.randrange(6)
    shapes = (lambda: a, lambda: f"{a}_{random_word(rng)}", lambda: f"{a}-{random_word(rng, 2, 6)}",
              lambda: f"{a}{rng.randrange(0, 100)}", lambda: a.capitalize() + random_word(rng, 2, 5).capitalize(),
              lambda: f"{a} {random_word(rng)}")  # the last needs quoting
    return shapes[shape]()


def random_file(rng: random.Random, p_random: float = 0.5) -> str:
    return f"{random_stem(rng, p_random)}.{rng.choice(_EXTS)}"


# ------------------------------------------------------------------------------------ documents


class Generator:
    """Deterministic stream of pretraining documents (strings) for one seed."""

    def __init__(self, config: PretrainConfig | None = None, tokenizer: Any = None) -> None:
        self.config = config or PretrainConfig()
        self.rng = random.Random(f"clawloop-pretrain-{self.config.seed}")
        self.tokenizer = tokenizer
        kinds = [k for k in KINDS if self.config.mix.get(k, 0) > 0]
        unknown = set(self.config.mix) - set(KINDS)
        if unknown or not kinds:
            raise ValueError(f"pretrain.mix: kinds are {', '.join(KINDS)} with at least one > 0")
        self.kinds, self.weights = kinds, [self.config.mix[k] for k in kinds]
        self._help_chunks: list[str] | None = None
        self._task_index = 0

    # names drawn with this stream's rng
    def _file(self) -> str:
        return random_file(self.rng, self.config.random_names)

    def __iter__(self) -> Iterator[str]:
        while True:
            yield self.document()

    def document(self) -> str:
        kind = self.rng.choices(self.kinds, self.weights)[0]
        return getattr(self, f"_{kind}")()

    # -- kinds
    def _chat(self) -> str:
        rng = self.rng
        instr, cmd = rng.choice(PAIRS)
        p = self.config.random_names
        vals = {"f": self._file(), "g": random_file(rng, p * 0.5), "e": rng.choice(_EXTS),
                "d": rng.choice((random_word(rng), random_stem(rng, p).replace(" ", "_"))),
                "w": rng.choice((word(rng), random_word(rng))), "v": rng.choice((word(rng), random_word(rng))),
                "n": str(rng.randrange(1, 40))}
        if rng.random() < 0.25:
            vals["f"] = f"{rng.choice(('data', 'logs', 'src', random_word(rng)))}/{vals['f']}"
        if ".tar.gz" in cmd:
            vals["g"] = random_stem(rng, p).replace(" ", "_")
        q = {k: quote(v) if k in "fgd" else v for k, v in vals.items()}
        instruction = instr.format(**{k: (f"`{v}`" if k in "fgd" and rng.random() < 0.3 else v)
                                      for k, v in vals.items()})
        if rng.random() < 0.3:
            instruction = instruction.replace(vals["f"], "/workspace/" + vals["f"], 1)
            q["f"] = quote("/workspace/" + vals["f"]) if rng.random() < 0.5 else q["f"]
        command = cmd.format(**q)
        return self._render(instruction, [command], system=rng.random() < self.config.system_prompt)

    def _task(self) -> str:
        fams = list(families())
        for _ in range(20):
            self._task_index += 1
            skill = self.rng.choice(fams)
            level = self.rng.choice((1, 1, 2))
            # a seed namespace of its own: never the loop's (seed, iteration, ...) draws
            trng = random.Random(f"pretrain/{self.config.seed}/{self._task_index}")
            try:
                task = family(skill).generate(level, trng, NO_KNOBS)
            except Exception:  # a generator needing something this machine lacks: skip it
                continue
            steps = list(task.solution.steps) if task.solution else []
            if steps and all(len(s) < 400 for s in steps):
                return self._render(task.instruction, steps, task=task,
                                    system=self.rng.random() < self.config.system_prompt)
        return self._chat()

    def _shell(self) -> str:
        rng = self.rng
        files = [self._file() for _ in range(rng.randint(2, 6))]
        lines = ["$ ls", *files]
        for _ in range(rng.randint(1, 3)):
            f = rng.choice(files)
            op = rng.randrange(5)
            if op == 0:
                content = [random_word(rng) for _ in range(rng.randint(1, 4))]
                lines += [f"$ cat {quote(f)}", *content]
                w = rng.choice(content)
                lines += [f"$ grep {w} {quote(f)}", w]
            elif op == 1:
                g = self._file()
                lines += [f"$ cp {quote(f)} {quote(g)}", f"$ ls {quote(g)}", g]
            elif op == 2:
                lines += [f"$ wc -l {quote(f)}", f"{rng.randint(0, 99)} {f}"]
            elif op == 3:
                d = random_word(rng)
                lines += [f"$ mkdir -p {d} && mv {quote(f)} {d}/", f"$ ls {d}", f]
            else:
                lines += [f"$ rm {quote(f)}", f"$ cat {quote(f)}",
                          f"cat: {f}: No such file or directory"]
        return "\n".join(lines)

    def _repeat(self) -> str:
        rng = self.rng
        names = [self._file() if rng.random() < 0.7 else random_word(rng) for _ in range(rng.randint(3, 8))]
        head = rng.choice(("files:", "$ ls", "names:", "todo:"))
        cmd = rng.choice(("rm", "cat", "touch", "wc -l", "head -n 3", "chmod +x", "gzip", "ls -l"))
        order = list(range(len(names)))
        if rng.random() < 0.5:
            rng.shuffle(order)
        lines = [head, *names, "---"]
        lines += [f"{i + 1}. {names[i]}" if rng.random() < 0.3 else f"$ {cmd} {quote(names[i])}" for i in order]
        return "\n".join(lines)

    def _echo(self) -> str:
        rng = self.rng
        items = [rng.choice((self._file(), random_word(rng, 2, 9), str(rng.randrange(1000))))
                 for _ in range(rng.randint(4, 14))]
        line = rng.choice((" ", ", ", "\n")).join(items)
        return f"{line}\n{rng.choice(('again:', '>', '$ echo', '#'))}\n{line}"

    def _help(self) -> str:
        if self._help_chunks is None:
            text = help_text()
            self._help_chunks = [text[i:i + 800] for i in range(0, len(text), 800)]
        return self.rng.choice(self._help_chunks)

    def _render(self, instruction: str, commands: list[str], *, system: bool, task: Any = None) -> str:
        msgs = [{"role": "user", "content": instruction}]
        if system:
            msgs.insert(0, {"role": "system", "content": _system_prompt(task)})
        for c in commands:
            msgs += [assistant_message(c), tool_message("[exit code 0]")]
        msgs.append(assistant_message(None))
        if self.tokenizer is not None:
            return self.tokenizer.apply_chat_template(msgs, tools=TOOLS if system else None, tokenize=False)
        return json.dumps(msgs, ensure_ascii=False)


def _system_prompt(task: Any = None) -> str:
    """The harness system prompt (of `task`, or of a default task in /workspace)."""
    return system_prompt(task) if task is not None else default_system_prompt()


def documents(config: PretrainConfig, tokenizer: Any = None, n: int | None = None) -> Iterator[str]:
    """`n` documents (infinite when None) of the stream for `config.seed`."""
    g = Generator(config, tokenizer)
    for i, d in enumerate(g):
        if n is not None and i >= n:
            return
        yield d


def blocks(config: PretrainConfig, tokenizer: Any) -> Iterator[tuple[list[int], list[int]]]:
    """Packed training rows (input ids, labels) of exactly seq_len tokens: whole documents,
    each followed by <|endoftext|>, packed greedily; a row is closed when the next document
    does not fit (padded with token 0, labels -100), and a document longer than a row is cut.

    Documents are never split across rows: a name and its copy must share a context, and the
    tool call must sit at the positions it has in an episode (after the ~200-token system
    prompt). Cutting the stream at seq_len=128 hid both, and copying never emerged."""
    sep = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    row: list[int] = []
    for doc in documents(config, tokenizer):
        ids = (tokenizer(doc, add_special_tokens=False)["input_ids"] + [sep])[: config.seq_len]
        if len(row) + len(ids) > config.seq_len:
            pad = config.seq_len - len(row)
            yield row + [0] * pad, row + [-100] * pad
            row = []
        row += ids


WARMUP_ROW = 64
"""Row length of the induction warm-up."""


def induction_row(rng: random.Random, seq_len: int, vocab: tuple[int, int]) -> tuple[list[int], list[int]]:
    """One row of the textbook induction task: spans of random token ids, each followed by
    itself again. Returns (input ids, labels) with the labels of the first copies masked
    (-100): they are noise, only the repeats can be predicted, and only by copying."""
    ids: list[int] = []
    labels: list[int] = []
    while len(ids) < seq_len:
        span = [rng.randrange(*vocab) for _ in range(rng.randint(6, min(40, seq_len // 2)))]
        ids += span + span
        labels += [-100] * len(span) + span
    return ids[:seq_len], labels[:seq_len]


# ------------------------------------------------------------------------------------- training


def pretrain(model: Any, tokenizer: Any, config: PretrainConfig,
             log: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Train `model` in place as a causal LM on the generated stream; returns the record
    (config, curve of loss and probe results, wall time) that model_meta.json keeps."""
    import torch

    if config.threads:
        torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    record: dict[str, Any] = {"config": config.model_dump(), "curve": [], "tokens": 0}
    t0 = time.time()
    cpu0 = time.process_time()

    def emit(step: int, loss: float | None) -> None:
        model.eval()
        point = {"step": step, "loss": loss, "wall_s": round(time.time() - t0, 1),
                 "cpu_s": round(time.process_time() - cpu0, 1), **probe(model, tokenizer, n=config.probe_items)}
        model.train()
        record["curve"].append(point)
        if log:
            log(point)

    emit(0, None)
    if config.steps == 0:
        record["wall_time_s"] = 0.0
        return record
    opt = torch.optim.AdamW(model.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay,
                            betas=(0.9, 0.95))
    warm = max(1, int(config.steps * config.warmup_ratio))

    def lr_at(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        frac = (step - warm) / max(1, config.steps - warm)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)
    stream = blocks(config, tokenizer)
    model.train()
    running: list[float] = []
    irng = random.Random(f"clawloop-induction-{config.seed}")
    # random spans avoid the special/added tokens at the top and the raw bytes at the bottom
    span_vocab = (256, len(tokenizer) - 16)

    def rows(step: int) -> list[tuple[list[int], list[int]]]:
        if step <= config.induction_warmup:
            # short rows (same tokens per step): the match is easy to find among few positions,
            # which is what lets the mechanism form in a few hundred steps
            return [induction_row(irng, WARMUP_ROW, span_vocab)
                    for _ in range(config.batch_size * config.seq_len // WARMUP_ROW)]
        return [induction_row(irng, config.seq_len, span_vocab)
                if config.induction_rows and irng.random() < config.induction_rows else next(stream)
                for _ in range(config.batch_size)]

    bar = Progress("pretrain", total=config.steps, unit="steps")
    for step in bar.track(range(1, config.steps + 1)):
        ids, labels = zip(*rows(step), strict=True)
        batch, target = torch.tensor(ids), torch.tensor(labels)
        out = model(input_ids=batch, labels=target)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        running.append(out.loss.item())
        record["tokens"] += int((target >= 0).sum())
        bar.add_tokens(int((target >= 0).sum()))  # progress hook (issue 21)
        bar.set(loss=round(running[-1], 4))
        if (config.probe_every and step % config.probe_every == 0) or step == config.steps:
            emit(step, round(sum(running) / len(running), 4))
            running = []
    model.eval()
    record["wall_time_s"] = round(time.time() - t0, 1)
    record["cpu_time_s"] = round(time.process_time() - cpu0, 1)
    return record
