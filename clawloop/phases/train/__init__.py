"""Training: reference trajectories, data mixing, SFT and multi-turn GRPO (TRL), the playbook.

`jobs.train(job, params, setup)` trains the weights (what `clawloop train` and the train stage
run); torch, transformers and trl are imported only when a function needs them.

What the train stage (`train.train_iteration`) does with each `train.method`: SFT learns from reference
trajectories (the tasks' solutions executed in the sandbox) and the policy's own successful
rollouts on held-in tasks (the probe's, and the last evaluation's pool suite; never a held-out
suite). GRPO trains on the tasks the probe labelled learnable. `playbook` keeps the weights (the
checkpoint is the policy, hard-linked) and evolves the playbook from the report and the same
held-in rollouts (`playbook`); `sft+playbook` does SFT, then the playbook. With
`train.playbook.reflector: model` the policy (the new checkpoint) reads its own held-in episodes
and proposes the tips (`reflect`); then harness edits are tried on a development split of the
validated pool and kept after a paired win there (`harness_search`). The playbook, with what the
harness learned, goes into the checkpoint directory (`playbook.json`, applied by every later
rollout of it) and into the versioned artifact `<out>/../playbook/` (playbook.json, playbook.md,
reflection.json, harness.json; empty for the weight-only methods). After the weights train, `drift`
measures how far they moved: KL(checkpoint || the policy it started from) per assistant token on
`train.drift.conversations` of the conversations it trained on, train.json's `kl_to_start`.
"""
