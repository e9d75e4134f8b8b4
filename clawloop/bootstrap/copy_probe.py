"""Copy probe: can the model copy names it has never seen from the instruction into the command?

`probe(model, tokenizer)` renders held-out items in the harness chat format (system prompt,
tools, an instruction naming random files, the assistant's tool call) and reads the model's
greedy next-token predictions over the tool call, teacher-forced (one forward pass per batch):

- `name_exact`: share of names in the command whose every token is predicted exactly;
- `command_exact`: share of tool calls (with <|im_end|>) predicted exactly token for token;
- `call_token_acc`: per-token accuracy over the tool calls;
- `induction_acc`: accuracy on the second copy of a repeated random token sequence (the
  textbook induction-head test, independent of the chat format).

Names are random letter strings from a seed namespace no training stream uses, so a hit is a
copy, not a memorised name. Teacher forcing is greedy decoding's upper bound on each span;
an exact span means greedy decoding reproduces it given a correct prefix.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from clawloop.bootstrap.corpus import PAIRS, random_word, tool_call
from clawloop.core.agent.harness import default_system_prompt
from clawloop.core.agent.tool_calls import TOOLS

PROBE_SEED = "clawloop-copy-probe"


@dataclass(frozen=True)
class ProbeItem:
    messages: tuple[dict[str, Any], ...]
    """System (optional) and user turn."""
    target: str
    """The assistant's tool call and `<|im_end|>`, as the chat template renders it."""
    names: tuple[str, ...]
    """Substrings of `target` that must be copied from the instruction."""


def probe_name(rng: random.Random) -> str:
    """A held-out name: random letters (and maybe a digit) with an extension."""
    stem = random_word(rng, 4, 9)
    if rng.random() < 0.3:
        stem += str(rng.randrange(10))
    return f"{stem}.{rng.choice(('txt', 'csv', 'log', 'json', 'md'))}"


def items(n: int = 200, seed: int = 0, system: bool = True) -> list[ProbeItem]:
    """`n` deterministic probe items (corpus templates, held-out random names)."""
    rng = random.Random(f"{PROBE_SEED}-{seed}")
    out = []
    templates = [(i, c) for i, c in PAIRS if "{f}" in i and "{f}" in c]
    for _ in range(n):
        instr, cmd = rng.choice(templates)
        vals = {"f": probe_name(rng), "g": probe_name(rng), "d": probe_name(rng).split(".")[0],
                "w": probe_name(rng).split(".")[0], "v": probe_name(rng).split(".")[0],
                "n": str(rng.randrange(1, 40)), "e": "txt"}
        if ".tar.gz" in cmd:
            vals["g"] = vals["g"].split(".")[0]
        command = cmd.format(**vals)
        names = tuple(vals[k] for k in "fgd" if "{" + k + "}" in instr and "{" + k + "}" in cmd)
        msgs: list[dict[str, Any]] = [{"role": "user", "content": instr.format(**vals)}]
        if system:
            msgs.insert(0, {"role": "system", "content": default_system_prompt()})
        out.append(ProbeItem(tuple(msgs), tool_call(command) + "<|im_end|>", names))
    return out


def _span_positions(offsets: list[tuple[int, int]], start: int, end: int) -> list[int]:
    return [i for i, (a, b) in enumerate(offsets) if b > start and a < end]


def probe(model: Any, tokenizer: Any, n: int = 200, seed: int = 0, batch_size: int = 25,
          induction_len: int = 24) -> dict[str, float]:
    """Teacher-forced copy metrics of `model` on `n` held-out items (see the module docstring)."""
    import torch

    its = items(n, seed)
    names_hit = names_total = cmd_hit = tok_hit = tok_total = 0
    pad = tokenizer.pad_token_id
    with torch.no_grad():
        for b in range(0, len(its), batch_size):
            chunk = its[b:b + batch_size]
            rows, spans = [], []
            for it in chunk:
                system = it.messages[0]["role"] == "system"
                prompt = tokenizer.apply_chat_template(list(it.messages), tools=TOOLS if system else None,
                                                       add_generation_prompt=True, tokenize=False)
                p = tokenizer(prompt, add_special_tokens=False)["input_ids"]
                enc = tokenizer(it.target, add_special_tokens=False, return_offsets_mapping=True)
                t, offs = enc["input_ids"], enc["offset_mapping"]
                name_pos = []
                for name in it.names:
                    a = it.target.find(name)
                    if a >= 0:
                        name_pos.append([len(p) + i for i in _span_positions(offs, a, a + len(name))])
                rows.append(p + t)
                spans.append((len(p), len(p) + len(t), name_pos))
            width = max(len(r) for r in rows)
            ids = torch.full((len(rows), width), pad, dtype=torch.long)
            mask = torch.zeros_like(ids)
            for i, r in enumerate(rows):
                ids[i, : len(r)] = torch.tensor(r)
                mask[i, : len(r)] = 1
            pred = model(input_ids=ids, attention_mask=mask).logits.argmax(-1)
            for i, (s, e, name_pos) in enumerate(spans):
                ok = pred[i, s - 1: e - 1] == ids[i, s:e]  # position j predicts token j+1
                tok_hit += int(ok.sum())
                tok_total += e - s
                cmd_hit += bool(ok.all())
                for pos in name_pos:
                    names_total += 1
                    names_hit += all(bool(pred[i, q - 1] == ids[i, q]) for q in pos)
        # induction: a random token sequence, then the same sequence again
        rng = torch.Generator().manual_seed(1234 + seed)
        low = len(tokenizer) // 8  # skip special and added tokens at both ends
        seq = torch.randint(low, len(tokenizer) - 16, (16, induction_len), generator=rng)
        rep = torch.cat([seq, seq], dim=1)
        pred = model(input_ids=rep).logits.argmax(-1)
        ind = (pred[:, induction_len:-1] == rep[:, induction_len + 1:]).float().mean()
    return {"name_exact": round(names_hit / max(names_total, 1), 4),
            "command_exact": round(cmd_hit / max(len(its), 1), 4),
            "call_token_acc": round(tok_hit / max(tok_total, 1), 4),
            "induction_acc": round(float(ind), 4)}
