#!/bin/bash
# One benchmark, four shards, as a Slurm job array: task N runs shard N of 4 into a run
# directory of its own on the shared filesystem; the merge job starts once every task has
# ended (afterany: a failed shard is merged as far as it got) and checks the gates.
#
#   sbatch docs/examples/slurm-array.sh          (from the directory with tasks/ and gates.toml)
#
# See docs/scaling.md, "Many runners".
#SBATCH --job-name=agentbench
#SBATCH --array=1-4
#SBATCH --cpus-per-task=2
#SBATCH --mem=8G
#SBATCH --time=12:00:00
#SBATCH --output=runs/slurm-%A_%a.out
set -u

shards=${SLURM_ARRAY_TASK_COUNT:-4}
dir=runs/shard-${SLURM_ARRAY_TASK_ID}
resume=()
if [ -f "$dir/run.json" ]; then  # a requeued task finishes its shard instead of starting over
    resume=(--agentbench-resume "$dir")
fi

if [ "${SLURM_ARRAY_TASK_ID}" = "${SLURM_ARRAY_TASK_MIN:-1}" ]; then
    sbatch --dependency="afterany:${SLURM_ARRAY_JOB_ID}" --job-name=agentbench-merge \
        --output=runs/slurm-merge-%j.out --wrap \
        "agentbench merge runs/shard-* -o runs/merged.json \
         && agentbench report runs/merged.json --format html -o runs/report.html \
         && agentbench compare bench/baseline.json runs/merged.json --gates gates.toml"
fi

# 1: some trials were not exact, an outcome the gates judge, not a failed task
pytest --agent=codex --sandbox=bwrap --repeats=5 --tasks=tasks \
    --agentbench-concurrency 8 \
    --agentbench-shard "${SLURM_ARRAY_TASK_ID}/${shards}" --agentbench-dir "$dir" \
    "${resume[@]}" || [ $? -eq 1 ]
