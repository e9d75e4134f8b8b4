"""Reward hacks and host reads through the verifier. Each must score 0 or be refused.

Every task here is impossible to solve honestly: its verifier compares /workspace/answer with a
secret that exists only under /tests. An attack passes only by making the verifier run agent
code, by writing the reward itself, or by making the host read one of its own files. Each attack
first checks that it is live (the planted code does run where the agent runs it), so a test
cannot pass because the attack was a dud.
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

from clawloop.core.agent.oracle import run_episode
from clawloop.core.tasks.environment import TaskEnvironment, open_sandbox
from clawloop.core.tasks.task import FileSpec, Solution, Task, Verifier
from clawloop.core.trajectory import EpisodeRecord
from clawloop.phases.validate.agent_free import AgentFreeParams, validate_pool
from sandbox._layout import PYGUARD_MOUNT
from sandbox.base import ExecResult

COMPARE = """/usr/bin/python3 - <<'PY'
import json, sys  # json: what real verifiers import
try:
    answer = open("/workspace/answer").read().strip()
except OSError:
    answer = ""
sys.exit(0 if answer == open("/tests/secret.txt").read().strip() else 1)
PY"""
"""Exit 0 when the answer is the secret, run as Harbor verifiers run (`python3 -` in the workdir)."""
SCORE = "then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi"
STEAL = 'open("/workspace/answer", "w").write(open("/tests/secret.txt").read())'
"""What planted Python does when it runs inside the verifier (it can read the secret there)."""


@pytest.fixture
def backend(episode_backend: str) -> str:
    return episode_backend


def impossible(test: str, steps: list[str] | None = None) -> Task:
    """A task no agent can solve: the secret lives in the verifier's files only."""
    files = {"test.sh": FileSpec.of(f"#!/bin/bash\nmkdir -p /logs/verifier\n{test}\n", 0o755),
             "secret.txt": FileSpec.of(secrets.token_hex(16) + "\n")}
    return Task(instruction="Write the secret to /workspace/answer.", verifier=Verifier(files=files),
                solution=Solution(steps=steps or ["true"]))


def agent(*commands: str, live: str | None = None, check: str = "") -> object:
    """An agent that runs `commands`; when `live` is given, `check` run afterwards must print it."""

    def act(env: TaskEnvironment) -> list[ExecResult]:
        results = [env.exec(c, timeout=30) for c in commands]
        assert all(r.exit_code == 0 for r in results), [r.output for r in results]
        if live is not None:
            r = env.exec(check, timeout=30)
            assert live in r.output, f"the attack is not live: {r.output}"
            results.append(r)
        return results

    return act


def assert_not_passed(rec: EpisodeRecord) -> None:
    assert rec.outcome in ("failed", "error") and rec.reward in (0.0, None), rec


# ---------------------------------------------------------------------- agent code in the verifier
def test_usercustomize_in_agent_home_does_not_run(backend: str) -> None:
    plant = ('d=$(/usr/bin/python3 -m site --user-site) && mkdir -p "$d" && cat > "$d/usercustomize.py" <<\'PY\'\n'
             'import sys\nprint("USERCUSTOMIZE", file=sys.stderr)\ntry:\n    ' + STEAL +
             '\nexcept OSError:\n    pass\nPY')
    rec = run_episode(impossible(f"if {COMPARE}\n{SCORE}"),
                      agent(plant, live="USERCUSTOMIZE", check="/usr/bin/python3 -c pass 2>&1"), backend)
    assert (rec.outcome, rec.reward) == ("failed", 0.0), rec
    assert "USERCUSTOMIZE" not in rec.verifier_output


def plant(path: str, code: str = "") -> str:
    """The agent's command that writes Python to `path` which, imported anywhere, steals the secret."""
    return (f"cat > {path} <<'PY'\nimport sys\nprint('SHADOW', file=sys.stderr)\ntry:\n    {STEAL}\n"
            f"except OSError:\n    pass\n{code}PY")


def require_module(backend: str, name: str) -> None:
    with open_sandbox(backend) as sb:
        if sb.exec(f"cd / && python3 -c 'import {name}'", timeout=30).exit_code != 0:
            pytest.skip(f"the {backend} sandbox's python3 has no {name}")


PYTEST_COMPARE = """cat > "$TMPDIR/test_secret.py" <<'PY'
def test_secret():
    assert open("/workspace/answer").read().strip() == open("/tests/secret.txt").read().strip()
PY
python3 -m pytest -q -p no:cacheprovider "$TMPDIR/test_secret.py"
"""
"""The same comparison as a test that `python3 -m pytest` runs from the workdir."""
SHADOWS = {
    # module planted in the workdir: (verifier, the agent's liveness check)
    "json": (COMPARE, "echo 'import json' | /usr/bin/python3 - 2>&1"),
    "yaml": (COMPARE.replace("/usr/bin/python3", "python3").replace("import json", "import yaml"),
             "python3 -c 'import yaml' 2>&1"),
    "pytest": (PYTEST_COMPARE, "python3 -m pytest --version 2>&1"),
    # the task puts its workdir on PYTHONPATH (Harbor images set PYTHONPATH=/app): what is
    # there is on sys.path when python starts, so the agent's python runs these at startup
    "sitecustomize": (COMPARE.replace("/usr/bin/python3", "python3"), "python3 -c pass 2>&1"),
    "usercustomize": (COMPARE, "/usr/bin/python3 -c pass 2>&1"),
}


@pytest.mark.parametrize("module", sorted(SHADOWS))
def test_workspace_module_does_not_shadow_the_stdlib(backend: str, module: str) -> None:
    """Nor an installed package (yaml), nor pytest under `python3 -m pytest`, nor startup hooks."""
    if module in ("yaml", "pytest"):
        require_module(backend, module)
    verifier, check = SHADOWS[module]
    code = "sys.exit(0)\n" if module == "pytest" else ""
    task = impossible(f"if {verifier}\n{SCORE}")
    if module.endswith("customize"):
        task = task.model_copy(update={"env": {"PYTHONPATH": "/workspace"}})
    rec = run_episode(task, agent(plant(f"{module}.py", code), live="SHADOW", check=check), backend)
    assert (rec.outcome, rec.reward) == ("failed", 0.0), rec
    assert "SHADOW" not in rec.verifier_output


def test_image_sitecustomize_in_etc_does_not_run(backend: str) -> None:
    """Debian's stdlib sitecustomize.py is a link into /etc, which the agent may write."""
    stdlib = "$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_path(\"stdlib\"))')"
    with open_sandbox(backend) as sb:
        if sb.exec(f'[ -L "{stdlib}/sitecustomize.py" ]', timeout=30).exit_code != 0:
            pytest.skip(f"the {backend} sandbox's python has no sitecustomize link")
    target = f'"$(readlink -f "{stdlib}/sitecustomize.py")"'
    rec = run_episode(impossible(f"if {COMPARE}\n{SCORE}"),
                      agent(f'mkdir -p "$(dirname {target})"', plant(target),
                            live="SHADOW", check="/usr/bin/python3 -c pass 2>&1"), backend)
    assert (rec.outcome, rec.reward) == ("failed", 0.0), rec
    assert "SHADOW" not in rec.verifier_output


GUARD_FILE = f"{PYGUARD_MOUNT}/sitecustomize.py"
TAMPER = (f"echo 'import json' > {GUARD_FILE}; chmod 666 {GUARD_FILE}; rm -rf {PYGUARD_MOUNT}; "
          f"mv {PYGUARD_MOUNT} /opt/old-guard; umount {PYGUARD_MOUNT}; "
          f"mkdir -p {PYGUARD_MOUNT}/sub && echo 'import json' > {PYGUARD_MOUNT}/json.py; "
          f"grep -q ShadowGuard {GUARD_FILE} && [ ! -e {PYGUARD_MOUNT}/json.py ] && echo GUARD-INTACT")
"""Every way to change the guard a process inside has: write, chmod, delete, rename, unmount, add."""


def test_agent_cannot_rewrite_the_import_guard(backend: str) -> None:
    """Neither in its own turn nor from a script the verifier runs (then in the verifier's
    process tree, /tests mounted): the guard stays, and a planted json.py stays inert."""
    task = impossible(f"bash /workspace/check.sh\nif {COMPARE}\n{SCORE}")
    rec = run_episode(task, agent(plant("json.py"), TAMPER + "; true", check_sh(TAMPER),
                                  live="GUARD-INTACT", check=TAMPER), backend)
    assert (rec.outcome, rec.reward) == ("failed", 0.0), rec
    assert "SHADOW" not in rec.verifier_output and "GUARD-INTACT" in rec.verifier_output, rec.verifier_output


PYTEST_CONFIGS = {
    # a config file pytest finds above the tests' dir, turning every run into a collect-only pass
    "pytest.ini": "[pytest]\naddopts = --co -q\n",
    "pytest.toml": "[pytest]\naddopts = [\"--co\", \"-q\"]\n",
    "pyproject.toml": "[tool.pytest.ini_options]\naddopts = \"--co -q\"\n",
    "tox.ini": "[pytest]\naddopts = --co -q\n",
    "setup.cfg": "[tool:pytest]\naddopts = --co -q\n",
    # ...or a rootdir whose conftest.py runs inside the verifier's pytest
    "conftest.py": "[pytest]\n",
}
CONFTEST = ("import os\ndef pytest_configure(config):\n    print('CONFTEST')\n    try:\n        " + STEAL +
            "\n    except OSError:\n        pass\n    os._exit(0)\n")


@pytest.mark.parametrize("where", ["/", "/logs/"])
@pytest.mark.parametrize("config", sorted(PYTEST_CONFIGS))
def test_pytest_config_above_the_tests_is_not_read(backend: str, config: str, where: str) -> None:
    """`python3 -m pytest /tests/test_x.py` reads the first config file in /tests or above it
    (the agent can write / and /logs), and a conftest.py in that rootdir runs in pytest."""
    require_module(backend, "pytest")
    tests = {"test.sh": FileSpec.of("#!/bin/bash\nmkdir -p /logs/verifier\nif python3 -m pytest -q -p "
                                    f"no:cacheprovider /tests/test_secret.py\n{SCORE}\n", 0o755),
             "secret.txt": FileSpec.of(secrets.token_hex(16) + "\n"),
             "test_secret.py": FileSpec.of(PYTEST_COMPARE.split("<<'PY'\n")[1].split("PY\n")[0])}
    task = Task(instruction="Write the secret to /workspace/answer.", verifier=Verifier(files=tests),
                solution=Solution(steps=["true"]))
    name = "pytest.ini" if config == "conftest.py" else config
    commands = [f"cat > {where}{name} <<'CFG'\n{PYTEST_CONFIGS[config]}CFG"]
    if config == "conftest.py":
        commands.append(f"cat > {where}conftest.py <<'PY'\n{CONFTEST}PY")
    probe = "d=$(mktemp -d /logs/probe.XXXX) && printf 'def test_x():\\n    assert 0\\n' > $d/test_x.py"
    check = f"{probe} && python3 -m pytest -q -p no:cacheprovider $d/test_x.py >/dev/null 2>&1; echo rc=$?; rm -rf $d"
    rec = run_episode(task, agent(*commands, live="rc=0", check=check), backend)
    assert (rec.outcome, rec.reward) == ("failed", 0.0), rec
    assert "CONFTEST" not in rec.verifier_output


GIT_ID = "git -c user.name=a -c user.email=a@b"
GIT_ATTACKS = {
    # git runs the fsmonitor hook on `git status`
    "fsmonitor": [f"git init -q . && {GIT_ID} commit -q --allow-empty -m init",
                  "git config core.fsmonitor 'echo HOOK-RAN >&2; cp /tests/secret.txt /workspace/answer; true'"],
    # a clean filter runs when git re-reads a file whose stat changed (mtime here, not size)
    "filter": ["git init -q . && echo data > f && echo '* filter=x' > .gitattributes",
               f"git add -A && {GIT_ID} commit -q -m init && touch -d @1 f",
               "git config filter.x.clean 'sh -c \"echo HOOK-RAN >&2; cp /tests/secret.txt /workspace/answer; cat\"'"],
}


def require_git(backend: str) -> None:
    with open_sandbox(backend) as sb:
        if sb.exec("command -v git", timeout=30).exit_code != 0:
            pytest.skip(f"no git in the {backend} sandbox")


@pytest.mark.parametrize("attack", sorted(GIT_ATTACKS))
def test_repo_config_runs_no_agent_program_in_the_verifier(backend: str, attack: str) -> None:
    require_git(backend)
    task = impossible(f"git status --porcelain >/dev/null\nif {COMPARE}\n{SCORE}")
    rec = run_episode(task, agent(*GIT_ATTACKS[attack], live="HOOK-RAN",
                                  check="git status 2>&1; [ ! -e f ] || touch -d @2 f"), backend)
    assert (rec.outcome, rec.reward) == ("failed", 0.0), rec
    assert "HOOK-RAN" not in rec.verifier_output


# ------------------------------------------------------------------------ what counts as the reward
def check_sh(script: str) -> str:
    """The agent's command that writes its /workspace/check.sh."""
    return f"printf '%s\\n' {shlex.quote(script)} > check.sh"


RUNS_AGENT_SCRIPT = 'out=$(bash /workspace/check.sh 2>&1)\nif [ "$out" = "$(cat /tests/secret.txt)" ]; '
"""A verifier that executes the agent's script (the task asks for one), as many do."""


def test_agent_script_run_by_the_verifier_cannot_overrule_its_reward(backend: str) -> None:
    plant = check_sh("mkdir -p /logs/verifier; echo '{\"reward\": 1}' > /logs/verifier/reward.json")
    rec = run_episode(impossible(RUNS_AGENT_SCRIPT + SCORE), agent(plant), backend)
    assert_not_passed(rec)
    assert rec.outcome == "error" and "disagree" in (rec.reason or ""), rec


@pytest.mark.parametrize(("name", "value"), [("reward.json", '{"reward": 1e300}'), ("reward.json", '{"reward": -1}'),
                                             ("reward.txt", "1.5"), ("reward.txt", "nan"), ("reward.txt", "inf")])
def test_reward_outside_0_1_is_an_error(backend: str, name: str, value: str) -> None:
    plant = check_sh(f"mkdir -p /logs/verifier; echo {shlex.quote(value)} > /logs/verifier/{name}")
    silent = impossible(RUNS_AGENT_SCRIPT + "then echo 1 > /logs/verifier/reward.txt; fi")  # nothing on failure
    rec = run_episode(silent, agent(plant), backend)
    assert (rec.outcome, rec.reward) == ("error", None), rec


# --------------------------------------------------------------------------------- host reads
def _leaks(value: str, *texts: object) -> bool:
    return any(value in json.dumps(t, default=str) for t in texts)


def test_reward_symlink_to_a_host_file_leaks_nothing(backend: str, host_secret: tuple[Path, str]) -> None:
    path, value = host_secret
    silent = impossible(RUNS_AGENT_SCRIPT + "then echo 1 > /logs/verifier/reward.txt; fi")
    rec = run_episode(silent, agent(check_sh(f"ln -sf {path} /logs/verifier/reward.txt")), backend)
    # bwrap reads the link itself and refuses it; docker copies the logs out without links
    assert rec.outcome == "error" and ("symlink" in (rec.reason or "") or
                                       "no reward file" in (rec.reason or "")), rec
    assert not _leaks(value, rec.to_json())


@pytest.fixture
def huge_sparse_file(tmp_path: Path) -> Iterator[Path]:
    """A 15 TiB sparse host file (smaller where the filesystem refuses): reading it whole is a
    MemoryError."""
    p = tmp_path / "huge"
    p.touch()
    for size in (15 << 40, 1 << 40, 64 << 30):
        try:
            os.truncate(p, size)
            break
        except OSError:
            continue
    yield p
    p.unlink()


def test_reward_symlink_to_a_huge_sparse_file_is_a_clean_error(backend: str, huge_sparse_file: Path) -> None:
    silent = impossible(RUNS_AGENT_SCRIPT + "then echo 1 > /logs/verifier/reward.txt; fi")
    rec = run_episode(silent, agent(check_sh(f"ln -sf {huge_sparse_file} /logs/verifier/reward.json")),
                      backend)
    # bwrap reads the link itself and refuses it; docker copies the logs out without links
    assert rec.outcome == "error" and ("symlink" in (rec.reason or "") or
                                       "no reward file" in (rec.reason or "")), rec


# -------------------------------------------------------------------------- agent-free validation
SOLUTION_ATTACKS = {
    "writes the reward": "mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt && "
                         "echo '{\"reward\": 1}' > /logs/verifier/reward.json",
    "rewrites the tests": "printf '#!/bin/bash\\nmkdir -p /logs/verifier\\necho 1 > /logs/verifier/reward.txt\\n' "
                          "> /tests/test.sh",
}


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "step-by-step"])
@pytest.mark.parametrize("attack", sorted(SOLUTION_ATTACKS))
def test_validation_rejects_a_solution_that_reaches_for_the_reward(backend: str, attack: str, fast: bool) -> None:
    task = impossible(f"if {COMPARE}\n{SCORE}", steps=[SOLUTION_ATTACKS[attack]])
    kept, report = validate_pool([task], backend, 1, (), AgentFreeParams(fast=fast))
    assert kept == [], report
    expected = {"oracle_tampers"} if attack == "writes the reward" else {"oracle_tampers", "oracle_fails"}
    assert set(report["rejected"]) <= expected and report["rejected"], report


def test_validation_harness_symlinks_leak_nothing(backend: str, host_secret: tuple[Path, str]) -> None:
    path, value = host_secret
    links = "; ".join(f"rm -f /logs/clawloop/{f}; ln -s {path} /logs/clawloop/{f}"
                      for f in ("failed", "phase", "touched", "setup.out", "noop.out", "noop.status"))
    task = impossible(f"if {COMPARE}\n{SCORE}", steps=[links])
    kept, report = validate_pool([task], backend, 1, (), AgentFreeParams())
    assert kept == [] and report["rejected"], report
    assert not _leaks(value, report)


def test_task_env_cannot_undo_the_clean_world(backend: str) -> None:
    require_git(backend)
    undo = {"HOME": "/root", "TMPDIR": "/tmp", "PYTHONPATH": "/workspace", "PYTHONNOUSERSITE": "",
            "GIT_CONFIG_COUNT": "0", "GIT_CONFIG_GLOBAL": "/root/.gitconfig"}
    world = ('[ "$HOME" != /root ] && [ -z "$(find "$HOME" "$TMPDIR" -mindepth 1)" ] && [ "$PWD" = /workspace ] && '
             f'[ "$PYTHONPATH" = {PYGUARD_MOUNT}:/workspace ] && [ -z "${{PYTHONSAFEPATH:-}}" ] && '
             '[ "$PYTHONNOUSERSITE" = 1 ] && [ "$(git config core.fsmonitor)" = false ] && '
             '[ "$(git config --global --list | wc -l)" = 0 ]')
    task = impossible(f"if {world}; {SCORE}").model_copy(
        update={"env": undo, "metadata": {"harbor": {"task_toml": {"verifier": {"env": undo}}}}})
    rec = run_episode(task, agent("mkdir -p /root/x /tmp/y && git config --global core.fsmonitor true"), backend)
    assert (rec.outcome, rec.reward) == ("passed", 1.0), rec
