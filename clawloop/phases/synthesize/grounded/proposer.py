"""The proposer: the loop model writes whole tasks, aimed at the weak skills of the last report.

Each attempt renders `propose.j2` for one (skill, level) target (weak skills weighted by how
often they fail, the dominant failure modes named) and asks the policy for one task in the
tagged format below. A reply that does not parse is rejected with its reason; the rest become
Tasks that go through the same validation as procedural ones (where a test that a no-op passes, or a
solution the test fails, is rejected).

The format (strict: tags on their own, attributes in double quotes):

    <task skill="text_search" level="2">
    <instruction>
    What to do, naming the files to create or change.
    </instruction>
    <file path="server.log" mode="644">            zero or more; relative paths are under the
    exact content                                  workdir; one newline after the opening tag is
    </file>                                        dropped, the rest is the content verbatim
    <test>
    bash run in the workdir after the agent; exit status 0 = solved
    </test>
    <solution>
    <step>grep ERROR server.log > errors.txt</step>  one or more, each one bash tool call
    </solution>
    </task>

Rejection reasons: empty, context (prompt too long), no_task, bad_attribute, no_instruction,
multiple_instructions, bad_file, no_test, no_solution, too_long, invalid_task, duplicate.
"""

from __future__ import annotations

import posixpath
import random
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from clawloop.config.synthesis import ProposerParams
from clawloop.core.agent.harness import render
from clawloop.core.progress import Progress
from clawloop.core.tasks.task import FileSpec, Limits, Provenance, Solution, Task, Verifier
from clawloop.phases.synthesize.grounded.attempts import Attempts, Stats
from clawloop.phases.synthesize.skills import families
from clawloop.phases.synthesize.steering import failure_modes, plan_targets, weak_skills
from clawloop.policy.types import SamplingParams

if TYPE_CHECKING:
    from clawloop.policy.types import Policy

GENERATOR = "proposer@1"
TEST_NAME = "check.sh"
TEST_SH = f"""#!/bin/bash
# Proposed task verifier: reward 1 when the proposed test ({TEST_NAME}) exits 0.
mkdir -p /logs/verifier
if bash /tests/{TEST_NAME}; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""
_RESERVED = ("/tests", "/logs", "/solution", "/proc", "/sys", "/dev", "/opt/clawloop-runtime")
_TASK = re.compile(r"<task\b([^>]*)>(.*?)</task>", re.S)
_ATTR = re.compile(r'(\w+)\s*=\s*"([^"]*)"')
_FILE = re.compile(r"<file\b([^>]*)>(.*?)</file>", re.S)
_STEP = re.compile(r"<step>(.*?)</step>", re.S)
_MODE = re.compile(r"^0?[0-7]{3}$")


class ProposalError(Exception):
    """A reply that is not a well-formed proposal; `reason` is the stats key."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason, self.detail = reason, detail


@dataclass
class Proposal:
    """A parsed proposal."""

    instruction: str
    files: dict[str, FileSpec]
    test: str
    steps: list[str]
    skill: str | None = None
    level: int | None = None
    attrs: dict[str, str] = field(default_factory=dict)


def _path(raw: str, workdir: str) -> str:
    p = raw.strip()
    if not p:
        raise ProposalError("bad_file", "a <file> without a path")
    if ".." in p.split("/") or "\0" in p:
        raise ProposalError("bad_file", f"path {p!r} climbs out with '..'")
    full = posixpath.normpath(p if p.startswith("/") else posixpath.join(workdir, p))
    if full == "/" or any(full == r or full.startswith(r + "/") for r in _RESERVED):
        raise ProposalError("bad_file", f"path {p!r} is in a reserved place")
    return full


def parse_proposal(text: str, *, workdir: str = "/workspace", params: ProposerParams | None = None) -> Proposal:
    """Parse one reply in the proposal format; raises ProposalError(reason, detail)."""
    params = params or ProposerParams()
    if not text.strip():
        raise ProposalError("empty", "the reply is empty")
    m = _TASK.search(text)
    if m is None:
        raise ProposalError("no_task", "no <task ...>...</task> block")
    attrs = dict(_ATTR.findall(m.group(1)))
    body = m.group(2)
    level = None
    if "level" in attrs:
        if not attrs["level"].strip().isdigit() or not 1 <= int(attrs["level"]) <= 5:
            raise ProposalError("bad_attribute", f"level {attrs['level']!r} is not 1-5")
        level = int(attrs["level"])
    files: dict[str, FileSpec] = {}
    for fattrs, content in _FILE.findall(body):
        fa = dict(_ATTR.findall(fattrs))
        path = _path(fa.get("path", ""), workdir)
        if path in files:
            raise ProposalError("bad_file", f"{path} given twice")
        mode = fa.get("mode", "644")
        if not _MODE.match(mode):
            raise ProposalError("bad_file", f"{path}: mode {mode!r} is not octal like 644")
        data = content[1:] if content.startswith("\n") else content
        if len(data.encode()) > params.max_file_bytes:
            raise ProposalError("too_long", f"{path} is over {params.max_file_bytes} bytes")
        files[path] = FileSpec(content=data, mode=int(mode, 8))
    if len(files) > params.max_files:
        raise ProposalError("too_long", f"{len(files)} files (max {params.max_files})")
    rest = _FILE.sub("", body)
    instr = re.findall(r"<instruction>(.*?)</instruction>", rest, re.S)
    if not instr or not instr[0].strip():
        raise ProposalError("no_instruction", "no non-empty <instruction>")
    if len(instr) > 1:
        raise ProposalError("multiple_instructions", f"{len(instr)} <instruction> blocks")
    if len(instr[0].strip()) > params.max_instruction_chars:
        raise ProposalError("too_long", f"instruction over {params.max_instruction_chars} characters")
    tests = re.findall(r"<test>(.*?)</test>", rest, re.S)
    if not tests or not tests[0].strip():
        raise ProposalError("no_test", "no non-empty <test>")
    if len(tests) > 1 or len(tests[0]) > params.max_test_chars:
        raise ProposalError("too_long" if len(tests) == 1 else "no_test", "one <test> of reasonable size expected")
    sol = re.findall(r"<solution>(.*?)</solution>", rest, re.S)
    steps = [s.strip() for s in _STEP.findall(sol[0])] if sol else []
    steps = [s for s in steps if s]
    if not steps:
        raise ProposalError("no_solution", "no <solution> with a non-empty <step>")
    if len(steps) > params.max_steps:
        raise ProposalError("too_long", f"{len(steps)} steps (max {params.max_steps})")
    test = tests[0].lstrip("\n")
    return Proposal(instruction=instr[0].strip(), files=files, test=test if test.endswith("\n") else test + "\n",
                    steps=steps, skill=attrs.get("skill"), level=level, attrs=attrs)


def proposal_task(p: Proposal, *, skill: str, level: int, workdir: str = "/workspace",
                  iteration: int | None = None, seed: int | None = None, modes: tuple[str, ...] = (),
                  known: list[str] | None = None) -> Task:
    """The Task of a parsed proposal (the proposal's skill when it is a known one, else `skill`)."""
    sk = p.skill if p.skill and (known is None or p.skill in known) else skill
    try:
        return Task(
            instruction=p.instruction, files=dict(sorted(p.files.items())), workdir=workdir,
            verifier=Verifier(files={"test.sh": FileSpec(content=TEST_SH, mode=0o755),
                                     TEST_NAME: FileSpec(content=p.test)}),
            solution=Solution(steps=p.steps), skill=sk, level=p.level or level,
            tags=("proposer", *(f"mode:{m}" for m in modes)), source="proposer",
            limits=Limits(max_turns=max(8, 2 * len(p.steps) + 4)),
            provenance=Provenance(routine="proposer", generator=GENERATOR, iteration=iteration, seed=seed),
            metadata={"proposer": {"asked_skill": skill, "asked_level": level, "modes": list(modes)}})
    except ValidationError as e:
        first = e.errors()[0]
        raise ProposalError("invalid_task", f"{'.'.join(map(str, first['loc']))}: {first['msg']}") from None


def prompt(skill: str, level: int, *, weak: list[tuple[str, int, float]], modes: list[str],
           avoid: list[str], workdir: str = "/workspace") -> list[dict[str, Any]]:
    """The conversation asking for one proposal."""
    return [{"role": "user", "content": render("propose.j2", skill=skill, level=level, weak=weak, modes=modes,
                                               avoid=avoid, workdir=workdir)}]


def known_skills(params: ProposerParams) -> list[str]:
    fams = list(families())
    return [s for s in params.skills if s in fams] if params.skills else fams


def propose_tasks(policy: Policy, attempts: Attempts,
                  params: ProposerParams | None = None) -> tuple[list[Task], dict[str, Any]]:
    """`attempts.n` proposals by `policy`; returns (tasks that parsed, stats with rejections by
    reason). `attempts.progress` shows proposals made and tokens/s (clawloop.core.progress)."""
    params = params or ProposerParams()
    seed, report, iteration = attempts.seed, attempts.report, attempts.iteration
    stats = Stats("proposer")
    known = known_skills(params) or ["files"]
    rng = random.Random(f"proposer|{seed}")
    targets = plan_targets(report, known, attempts.n, rng, params.levels)
    weak, modes = weak_skills(report, known), failure_modes(report)
    sampling = SamplingParams(temperature=params.temperature, max_new_tokens=params.max_new_tokens, seed=seed)
    tasks: list[Task] = []
    ids: set[str] = set()
    by_skill: dict[str, list[str]] = {}
    bar = Progress("propose", len(targets), "proposals", enabled=attempts.progress)
    batches = [targets[start:start + params.batch_size] for start in range(0, len(targets), params.batch_size)]
    for batch in bar.track(batches, size=len):
        convs = [prompt(s, lvl, weak=weak, modes=modes, avoid=by_skill.get(s, [])[-params.avoid:] if params.avoid else [],
                        workdir=params.workdir) for s, lvl in batch]
        gens = policy.generate(convs, sampling, tools=None)
        bar.add_tokens(sum(g.completion_tokens for g in gens))
        for (skill, level), gen in zip(batch, gens, strict=True):
            stats.attempts += 1
            if gen.finish_reason == "context":
                stats.reject("context", "the prompt does not fit the model's context")
                continue
            try:
                prop = parse_proposal(gen.text, workdir=params.workdir, params=params)
                task = proposal_task(prop, skill=skill, level=level, workdir=params.workdir, iteration=iteration,
                                     seed=seed, modes=tuple(modes), known=known)
            except ProposalError as e:
                stats.reject(e.reason, f"{e.detail} | reply: {gen.text[:120]!r}")
                continue
            if not stats.first(task.id, ids):
                continue
            tasks.append(task)
            by_skill.setdefault(task.skill, []).append(task.instruction.splitlines()[0][:160])
    stats.produced = len(tasks)
    return tasks, stats.to_json()
