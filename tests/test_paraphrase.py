"""The policy's rewording of procedural requests (clawloop.phases.synthesize.paraphrase): what it
keeps, what it refuses, and that only the wording of a task changes."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from scripted_policy import ScriptedPolicy

from clawloop.config.params import load_params
from clawloop.config.synthesis import ParaphraseParams
from clawloop.core.tasks.answer import KEY as ANSWER_KEY
from clawloop.core.tasks.task import Solution, Task, Verifier
from clawloop.phases.synthesize.paraphrase import TAG, clean, must_keep, paraphrase, refusal
from clawloop.phases.synthesize.pool import build_pool
from clawloop.phases.synthesize.synthesize import reword

ORIGINAL = 'Count the lines of logs/app.log that contain "ERROR" and write the number to count.txt.'


def task(instruction: str = ORIGINAL, answer: bool = False) -> Task:
    return Task(instruction=instruction, files={"/workspace/logs/app.log": {"content": "ERROR a\nok\n"}},
                verifier=Verifier(files={"test.sh": {"content": "test -f count.txt\n"}}),
                solution=Solution(steps=["grep -c ERROR logs/app.log > count.txt"]),
                metadata={ANSWER_KEY: {"from": "last_output"}} if answer else {})


def test_must_keep_names_paths_numbers_and_quoted_values() -> None:
    keep = must_keep('Keep the first 3 lines of "my notes.txt" in /srv/out/head.txt; mark them TODO.')
    assert {"my notes.txt", "3", "/srv/out/head.txt", "TODO"} <= set(keep)
    assert "first" not in keep and "lines" not in keep


def test_a_faithful_rewording_is_kept() -> None:
    text = 'How many lines in logs/app.log mention "ERROR"? Put that number into count.txt, please.'
    assert refusal(task(), text, 0.25) is None
    # an absolute path to a file the original named relative to the workdir is the same file
    assert refusal(task(), 'Please put into count.txt how many lines of /workspace/logs/app.log say "ERROR".',
                   0.25) is None


def test_a_rewording_that_changes_what_the_verifier_wants_is_refused() -> None:
    t = task()
    assert refusal(t, 'How many lines in logs/app.log mention "ERROR"? Save it.', 0.25) == "dropped"
    assert refusal(t, 'How many lines in logs/app.log mention "ERROR"? Put it in count.txt and '
                      "result.txt.", 0.25) == "added"
    assert refusal(t, 'Count the lines in logs/app.log with "ERROR" in them, 5 of them, into count.txt.',
                   0.25) == "added"
    assert refusal(t, "Counting: `grep -c ERROR logs/app.log > count.txt` and you are done.", 0.25) == "added"
    assert refusal(t, ORIGINAL, 0.25) == "unchanged"
    assert refusal(t, "", 0.25) == "empty"
    assert refusal(t, ORIGINAL + "\n" + ORIGINAL, 0.25) == "shape"
    assert refusal(t, 'In count.txt: "ERROR" lines, logs/app.log.', 0.25) == "length"


def test_an_answer_task_is_never_reworded_into_a_file_task() -> None:
    t = task('Print how many lines of logs/app.log contain "ERROR".', answer=True)
    assert refusal(t, 'Tell me the number of lines in logs/app.log that have "ERROR" in them.', 0.25) is None
    assert refusal(t, 'Find the lines in logs/app.log with "ERROR" and save how many there are.',
                   0.25) == "answer_form"
    # a "to" in the original does not license saving the answer somewhere
    t = task('Print to the terminal how many lines of logs/app.log contain "ERROR".', answer=True)
    assert refusal(t, 'Look through logs/app.log for "ERROR" lines and store how many there are.',
                   0.25) == "answer_form"


def test_clean_strips_a_lead_in_and_quotes() -> None:
    assert clean('Rewritten request: "Sort names.txt."') == "Sort names.txt."
    assert clean("Here is the rewritten request:\nSort names.txt.") == "Sort names.txt."
    assert clean("Sure! Here it is:\n\n```\nSort names.txt.\n```\nI kept the name.") == "Sort names.txt."


def test_paraphrase_rewords_a_share_and_retries_what_was_refused() -> None:
    tasks = [task(), task('Print how many lines of logs/app.log contain "ERROR".', answer=True),
             task("Delete old.log.\nThen stop.")]  # two lines: not offered
    seen: list[str] = []

    def reply(conv: list[dict]) -> str:
        seen.append(conv[-1]["content"])
        if "count.txt" in conv[-1]["content"]:
            # first try drops the output file, the second keeps everything
            return ('Look at logs/app.log and count the "ERROR" lines.' if len(seen) == 1 else
                    'Put into count.txt the number of lines in logs/app.log that mention "ERROR".')
        return "Save the count of ERROR lines from logs/app.log into a file."  # answer form: refused twice

    out, stats = paraphrase(tasks, ScriptedPolicy(reply), ParaphraseParams(share=1.0, tries=2), seed=0,
                            progress=False)
    assert stats.offered == 2 and stats.kept == 1 and stats.samples == 4
    assert stats.refused == {"dropped": 1, "answer_form": 2}
    assert out[0].instruction.startswith("Put into count.txt") and TAG in out[0].tags
    assert out[0].metadata["paraphrase"]["of"] == ORIGINAL
    # only the wording changed: same workspace, verifier and reference
    assert (out[0].files, out[0].verifier, out[0].solution) == (tasks[0].files, tasks[0].verifier, tasks[0].solution)
    assert out[0].id != tasks[0].id
    assert out[1] is tasks[1] and out[2] is tasks[2]
    assert "logs/app.log" in seen[0] and "different person" in seen[0]


def test_reword_touches_only_the_procedural_tasks_of_a_pool_and_records_it() -> None:
    params = load_params(Path(__file__).parents[1] / "params.yaml")
    synthesis = params.synthesis.model_copy(update={"tasks_per_iteration": 24,
                                                    "paraphrase": ParaphraseParams(share=0.5, min_change=0.05)})
    params = params.model_copy(update={"synthesis": synthesis})
    pool = build_pool(params.synthesis, 1, None, None, lambda routine: (_ for _ in ()).throw(AssertionError))
    grounded = pool.tasks[0].model_copy(update={"provenance": pool.tasks[0].provenance.model_copy(
        update={"routine": "hindsight"})})
    pool = type(pool)(**{**pool.__dict__, "tasks": [grounded, *pool.tasks[1:]]})

    def reply(conv: list[dict]) -> str:
        # a faithful rewording: the request's own words, reordered (keeps every specific token)
        words = conv[-1]["content"].split("\n\n")[1].split()
        random.Random(len(words)).shuffle(words)
        return "Could you do this: " + " ".join(words)

    out = reword(pool, ScriptedPolicy(reply), params, 1)
    assert out.tasks[0] is grounded
    changed = [t for t in out.tasks if TAG in t.tags]
    manifest = out.manifest()["paraphrase"]
    assert manifest["kept"] == len(changed) > 0 and manifest["offered"] <= 23
    assert all(t.provenance.routine == "procedural" for t in changed)
    assert len(out.tasks) == len(pool.tasks)


def test_a_rewording_that_asks_for_another_act_or_echoes_the_prompt_is_refused() -> None:
    # measured on the 0.5B base: "create" became "enter", "put into" became "copy"
    assert refusal(task("Create a directory called quito."), 'Enter a directory named "quito".', 0.25) == "act"
    assert refusal(task("Put each file whose name ends with .tmp into a new folder carpet."),
                   "Copy every file whose name ends with .tmp into a new folder carpet.", 0.25) == "act"
    assert refusal(task("Please set up a folder kiwi and relocate `badge.md` into it."),
                   "To set up a folder `kiwi` and relocate `badge.md` into it, use other words.", 0.25) == "echo"
    # a leading dot is part of the name: `.bak` must survive
    assert ".bak" in must_keep("Move every .bak file into a new folder fig.")
    assert refusal(task("Move every .bak file into a new folder fig."),
                   "Copy every file name, path, number and quoted text exactly as it is written.", 0.25) == "echo"
    assert refusal(task("Move every .bak file into a new folder fig."),
                   "Move all the files into a new folder that you call fig.", 0.25) == "dropped"
    assert refusal(task("Move every .bak file into a new folder fig."),
                   "Every file ending in .bak should be moved to a new folder named fig.", 0.25) is None


def test_the_stage_without_a_policy_says_the_rewording_needs_one(tmp_path: Path) -> None:
    from clawloop.errors import ClawloopError
    from clawloop.phases.synthesize.synthesize import synthesize_iteration

    params = load_params(Path(__file__).parents[1] / "params.yaml")
    params = params.model_copy(update={"synthesis": params.synthesis.model_copy(
        update={"tasks_per_iteration": 8, "paraphrase": ParaphraseParams(share=0.5)})})
    with pytest.raises(ClawloopError, match="--policy: routine paraphrase needs the current policy"):
        synthesize_iteration(params, iteration=1, out=tmp_path / "pool")
    assert not (tmp_path / "pool").exists()


def test_a_rewording_that_drops_the_act_is_refused() -> None:
    # measured: "Remove every file ... not changed in over 7 days" became a question about the files
    t = task("Remove every file in the reef tree that has not been changed in over 7 days.")
    assert refusal(t, "What are the files in the reef tree that have not been changed in over 7 days?", 0.25) == "act"
    assert refusal(t, "In the reef tree, delete any file nobody has changed for over 7 days.", 0.25) is None


def test_a_rewording_that_asks_how_or_echoes_the_prompt_in_other_words_is_refused() -> None:
    # each one a reply the 0.5B base gave at iteration 1, kept by the first version of the checks
    t = task("When you get a chance, rename `/workspace/merry_cactus.md` to `/workspace/daring-shelter.md`.")
    assert refusal(t, "How do I rename `/workspace/merry_cactus.md` to `/workspace/daring-shelter.md`?", 0.25) \
        == "asks_back"
    t = task('Could you remove the files in the cron tree with names starting with "report"?')
    assert refusal(t, 'What filenames do you need removed from the cron tree that start with "report"?', 0.25) \
        == "asks_back"
    t = task("Alphabetize the list in `boulder21.txt`, saving the sorted list as `jolly-echo.txt`. Thanks!")
    assert refusal(t, "Alphabetize the list in `boulder21.txt`, saving the sorted list as `jolly-echo.txt`. This "
                      "will be the sorted list of file names, paths, numbers, and quoted text exactly as they are "
                      "written.", 0.25) == "echo"
    t = task("Create a directory called quito.")
    assert refusal(t, 'Certainly! Make me a directory called "quito", then.', 0.25) == "echo"
    # a question the task itself asks stays a question
    t = task("How many lines of a.log contain ERROR? Print the number.", answer=True)
    assert refusal(t, "Print how many of the lines in a.log have ERROR in them.", 0.25) is None
