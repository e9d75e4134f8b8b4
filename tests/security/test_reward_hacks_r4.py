"""Issue #51's reward hacks (findings 7-11): agent code or configuration that the verifier runs.

The rule: the reward is what the verifier itself computed. Agent code and configuration that the
verifier runs may do anything in its sandbox except decide the reward. Each task here is
impossible to solve honestly (the verifier wants a sha256 preimage of a random key, or a secret
only /tests holds); each attack first shows it is live in the agent's own turn, then must score 0
or an error, in an episode and as the reference solution of `tasks validate`.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable

import pytest

from clawloop.core.agent.oracle import run_episode
from clawloop.core.tasks.environment import TaskEnvironment, open_sandbox
from clawloop.core.tasks.task import FileSpec, Solution, Task, Verifier
from clawloop.phases.validate.agent_free import AgentFreeParams, validate_pool
from sandbox.base import ExecResult

from .test_reward_hacks import COMPARE, GIT_ID, SCORE, assert_not_passed, require_git
from .test_verifier_root import require_gcc


@pytest.fixture
def backend(episode_backend: str) -> str:
    return episode_backend


PREIMAGE = ('out=$(cd /workspace && python3 solve.py 2>/dev/null)\n'
            'if [ "$(printf %s "$out" | sha256sum | cut -d" " -f1)" = "$(cat /tests/hash.txt)" ]; ')
"""The verifier runs the agent's program (as many real tasks do) and wants a preimage of a random
key's hash: nothing the program can read gives it."""


def preimage_task(steps: list[str] | None = None, env: dict[str, str] | None = None,
                  test: str = PREIMAGE) -> Task:
    digest = hashlib.sha256(secrets.token_hex(16).encode()).hexdigest()
    files = {"test.sh": FileSpec.of(f"#!/bin/bash\nmkdir -p /logs/verifier\n{test}{SCORE}\n", 0o755),
             "hash.txt": FileSpec.of(digest + "\n")}
    return Task(instruction="Write /workspace/solve.py printing a preimage of the hash.", env=env or {},
                verifier=Verifier(files=files), solution=Solution(steps=steps or ["true"]))


def write(path: str, text: str) -> str:
    return f"cat > {path} <<'EOF'\n{text}EOF"


def actor(plant: list[str], live: str | list[str], marker: str) -> Callable[[TaskEnvironment], list[ExecResult]]:
    """Run the plant commands, then `live` (the attack as the verifier would meet it: one command,
    or several whose last) must print `marker`."""

    def act(env: TaskEnvironment) -> list[ExecResult]:
        results = [env.exec(c, timeout=30) for c in plant]
        assert all(r.exit_code == 0 for r in results), [r.output for r in results]
        results += [env.exec(c, timeout=30) for c in ([live] if isinstance(live, str) else live)]
        assert marker in results[-1].output, f"the attack is not live: {results[-1].output}"
        return results

    return act


def require_command(backend: str, name: str) -> None:
    with open_sandbox(backend) as sb:
        if sb.exec(f"command -v {name}", timeout=30).exit_code != 0:
            pytest.skip(f"no {name} in the {backend} sandbox")


def rejected_by_validation(task: Task, backend: str) -> None:
    for fast in (True, False):
        kept, report = validate_pool([task], backend, 1, (), AgentFreeParams(fast=fast))
        assert kept == [] and report["rejected"], report


# --------------------------------------------------------- 7: the program kills the verifier
KILLER = """import os, signal
os.makedirs("/logs/verifier", exist_ok=True)
with open("/logs/verifier/reward.txt", "w") as f:
    f.write("1\\n")
for pid in os.listdir("/proc"):
    if pid.isdigit() and int(pid) not in (1, os.getpid()):
        try:
            os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass
"""
# in the agent's turn: a shell that would write 0 after the program never does (the agent's own
# command dies with it, so the reward is read by the next one)
KILLER_LIVE = ["cd /workspace && python3 solve.py; echo 0 > /logs/verifier/reward.txt",
               "echo REWARD=$(cat /logs/verifier/reward.txt)"]


def test_7_a_program_that_kills_the_verifier_scores_an_error(backend: str) -> None:
    plant = [write("/workspace/solve.py", KILLER)]
    rec = run_episode(preimage_task(), actor(plant, KILLER_LIVE, "REWARD=1"), backend)
    assert_not_passed(rec)
    assert rec.outcome == "error" and "killed by signal 9" in (rec.reason or ""), rec
    rejected_by_validation(preimage_task(plant), backend)


# ------------------------------------------- 8: a daemon swaps a FIFO for reward.txt
FIFO_SWAP = """import os, time
d = "/logs/verifier"
r = d + "/reward.txt"
os.makedirs(d, exist_ok=True)
try:
    os.unlink(r)
except OSError:
    pass
os.mkfifo(r)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        null = os.open("/dev/null", os.O_RDWR)
        for fd in (0, 1, 2):  # a daemon: the verifier's $(...) does not wait for it
            os.dup2(null, fd)

        def writer_blocked():
            # the verifier's shell, stuck in openat() on the FIFO
            for pid in os.listdir("/proc"):
                try:
                    with open(f"/proc/{pid}/syscall") as f:
                        if f.read().split()[0] == "257":
                            return True
                except (OSError, IndexError):
                    pass
            return False
        end = time.time() + 10
        while not writer_blocked() and time.time() < end:
            time.sleep(0.005)
        os.rename(r, d + "/.moved")
        with open(r, "w") as f:
            f.write("1\\n")
        fd = os.open(d + "/.moved", os.O_RDONLY)
        while os.read(fd, 4096):
            pass
        os.close(fd)
        os.unlink(d + "/.moved")
    os._exit(0)
"""
FIFO_LIVE = ("cd /workspace && python3 solve.py; echo 0 > /logs/verifier/reward.txt; sleep 0.5; "
             "echo REWARD=$(cat /logs/verifier/reward.txt)")


def test_8_a_daemon_swapping_a_fifo_for_the_reward_file_does_not_pay(backend: str) -> None:
    plant = [write("/workspace/solve.py", FIFO_SWAP)]
    rec = run_episode(preimage_task(), actor(plant, FIFO_LIVE, "REWARD=1"), backend)
    assert_not_passed(rec)
    rejected_by_validation(preimage_task(plant), backend)


def test_8_the_reward_dir_refuses_fifos_and_symlinks_a_verifier_makes(backend: str) -> None:
    """The seal itself (Landlock, where the kernel has it), as seen by a verifier."""
    probe = ("mkfifo /logs/verifier/p 2>/dev/null && echo FIFO-MADE; ln -s /tmp /logs/verifier/l 2>/dev/null "
             "&& echo LINK-MADE; mkfifo /tmp/p && echo FIFO-TMP; echo ok > /logs/verifier/f && mv /logs/verifier/f "
             "/logs/verifier/g && rm /logs/verifier/g && echo FILES-OK\necho 0 > /logs/verifier/reward.txt\n")
    rec = run_episode(preimage_task(test=probe + "if false; "), "noop", backend)
    out = rec.verifier_output
    if "FIFO-MADE" in out:
        pytest.skip("no Landlock here: the host's check of the reward dir stands alone")
    assert "LINK-MADE" not in out and "FIFO-TMP" in out and "FILES-OK" in out, out
    assert (rec.outcome, rec.reward) == ("failed", 0.0), rec


# ------------------------------ 9: an empty LD_LIBRARY_PATH entry loads the agent's library
EXPAT_C = r"""
#include <stdio.h>
#include <unistd.h>
__attribute__((constructor)) static void pass(void) {
    fputs("LIB-RAN\n", stderr);
    _exit(0);
}
"""


def test_9_an_empty_search_path_entry_loads_no_agent_library(backend: str) -> None:
    require_gcc(backend)
    env = {"LD_LIBRARY_PATH": "/usr/local/lib:"}  # ENV LD_LIBRARY_PATH=/usr/local/lib:$LD_LIBRARY_PATH
    test = 'if /usr/bin/python3 -c "import sys; sys.exit(1)"; '  # the comparison fails unless hijacked
    # a libexpat.so.1 that needs the real one by path (so python3's symbols resolve) and whose
    # constructor makes the comparison pass
    plant = [write("/tmp/expat.c", EXPAT_C), "echo 'int x;' > /tmp/stub.c",
             "real=$(ldd /usr/bin/python3 | awk '/libexpat/{print $3}') && [ -n \"$real\" ] && "
             "gcc -shared -fPIC -o /tmp/libstub.so /tmp/stub.c -Wl,-soname,$real && "
             "gcc -shared -fPIC -o /workspace/libexpat.so.1 /tmp/expat.c -L/tmp -Wl,--no-as-needed -lstub"]
    live = "/usr/bin/python3 -c 'import sys; sys.exit(1)' 2>&1; echo status=$?"
    rec = run_episode(preimage_task(env=env, test=test), actor(plant, live, "status=0"), backend)
    assert (rec.outcome, rec.reward) == ("failed", 0.0), rec
    assert "LIB-RAN" not in rec.verifier_output
    rejected_by_validation(preimage_task([" && ".join(plant)], env=env, test=test), backend)


# ------------------------------------- 10: /etc configuration the verifier's tools read
ETC_ATTACKS = {
    # file(1) reads /etc/magic: a text file becomes a PDF, no code at all
    "magic": (["printf '0\\tstring\\tagent-text\\tPDF document, version 1.4\\n' >> /etc/magic",
               "echo agent-text > /workspace/report.pdf"],
              'if file -b /workspace/report.pdf | grep -q "^PDF document"; ', "file -b /workspace/report.pdf",
              "PDF document"),
    # pip reads /etc/xdg/pip/pip.conf: an index of the agent's (here: a config value pip reports)
    "xdg-pip": (["mkdir -p /etc/xdg/pip && printf '[global]\\nindex-url = file:///workspace/agent-index\\n' > "
                 "/etc/xdg/pip/pip.conf"],
                'if python3 -m pip config list 2>/dev/null | grep -q agent-index; ',
                "python3 -m pip config list 2>&1", "agent-index"),
    # `service NAME start` runs /etc/init.d/NAME: the agent's script in the verifier
    "init.d": (["mkdir -p /etc/init.d && printf '#!/bin/sh\\necho INITD-RAN\\n' > /etc/init.d/app && "
                "chmod +x /etc/init.d/app"],
               'if /etc/init.d/app start 2>/dev/null | grep -q INITD-RAN; ', "/etc/init.d/app start", "INITD-RAN"),
}


@pytest.mark.parametrize("name", sorted(ETC_ATTACKS))
def test_10_etc_configuration_of_the_verifiers_tools_is_the_images(backend: str, name: str,
                                                                   request: pytest.FixtureRequest) -> None:
    plant, check, live, marker = ETC_ATTACKS[name]
    if name == "magic":
        require_command(backend, "file")
    if backend == "docker":
        request.applymarker(pytest.mark.xfail(strict=True, reason="open on docker: the verifier runs in the "
                                              "container the agent used, its /etc (docs/sandbox.md)"))
    if name == "xdg-pip":
        from .test_reward_hacks import require_module

        require_module(backend, "pip")
    rec = run_episode(preimage_task(test=check), actor(plant, live, marker), backend)
    assert (rec.outcome, rec.reward) == ("failed", 0.0), rec
    rejected_by_validation(preimage_task([" && ".join(plant)], test=check), backend)


def test_10_etc_the_task_setup_wrote_is_what_the_verifier_sees(backend: str) -> None:
    """The same file from the task's setup (its image as built) counts: a task that configures
    /etc for its checks still works."""
    require_command(backend, "file")
    plant, check, _, _ = ETC_ATTACKS["magic"]
    task = preimage_task(test=check).model_copy(update={"setup": [plant[0]]})
    rec = run_episode(task, actor([plant[1]], "file -b /workspace/report.pdf", "PDF document"), backend)
    assert (rec.outcome, rec.reward) == ("passed", 1.0), rec


# ------------------------------------------ 11: git drivers of a repo below the workdir
NESTED_FILTER = ["mkdir -p /workspace/project && cd /workspace/project && git init -q . && echo data > f && "
                 "echo '* filter=x' > .gitattributes",
                 f"cd /workspace/project && git add -A && {GIT_ID} commit -q -m init && touch -d @1 f",
                 "cd /workspace/project && git config filter.x.clean "
                 "'sh -c \"echo HOOK-RAN >&2; cp /tests/secret.txt /workspace/answer; cat\"'"]


def test_11_a_nested_repos_filter_does_not_run_in_the_verifier(backend: str) -> None:
    require_git(backend)
    test = f"(cd /workspace/project && git status --porcelain >/dev/null)\nif {COMPARE}\n"
    files = {"test.sh": FileSpec.of(f"#!/bin/bash\nmkdir -p /logs/verifier\n{test}{SCORE}\n", 0o755),
             "secret.txt": FileSpec.of(secrets.token_hex(16) + "\n")}
    task = Task(instruction="Write the secret to /workspace/answer.", verifier=Verifier(files=files),
                solution=Solution(steps=["true"]))
    live = "cd /workspace/project && git status 2>&1; touch -d @2 f"
    rec = run_episode(task, actor(NESTED_FILTER, live, "HOOK-RAN"), backend)
    assert (rec.outcome, rec.reward) == ("failed", 0.0), rec
    assert "HOOK-RAN" not in rec.verifier_output
    rejected_by_validation(task.model_copy(update={"solution": Solution(steps=[" && ".join(
        f"({c})" for c in NESTED_FILTER)])}), backend)


# ------------------------------------------------------------ what legitimate verifiers keep
def test_a_verifier_that_starts_a_service_still_passes(backend: str) -> None:
    """A service the task's setup installed (/etc/init.d, as built) started by the verifier, left
    running when test.sh exits: killed before the reward is read, noted, and the pass stands."""
    service = ("mkdir -p /etc/init.d && printf '#!/bin/sh\\n(setsid sh -c \"echo up > /tmp/svc.state; "
               "exec sleep 300\" </dev/null >/dev/null 2>&1 &)\\n' > /etc/init.d/app && chmod +x /etc/init.d/app")
    check = ("/etc/init.d/app start; for i in $(seq 100); do [ -s /tmp/svc.state ] && break; sleep 0.02; done\n"
             "if grep -q up /tmp/svc.state; ")
    task = preimage_task(test=check).model_copy(update={"setup": [service]})
    rec = run_episode(task, "noop", backend)
    assert (rec.outcome, rec.reward) == ("passed", 1.0), rec
    if backend == "bwrap":
        assert "left running were killed" in rec.verifier_output, rec.verifier_output
