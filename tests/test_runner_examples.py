"""The batch-runner examples docs/scaling.md ships: the Kubernetes Indexed Job parsed as YAML
with the fields its shards rely on (kubectl's dry run needs a cluster), the Slurm array script
checked by bash and for the same shard arithmetic; each ends in merge and the gates."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml

from pytest_agentbench import options

EXAMPLES = Path(__file__).resolve().parent.parent / "docs" / "examples"


def _flags() -> set[str]:
    """Every option the plugin declares (options.py names each once, quoted)."""
    return set(re.findall(r'"(--[a-z][a-z-]+)"', Path(options.__file__).read_text()))


def test_the_kubernetes_indexed_job_runs_one_shard_per_index_then_merges() -> None:
    documents = list(yaml.safe_load_all((EXAMPLES / "kubernetes-indexed-job.yaml").read_text()))
    kinds = [document["kind"] for document in documents]
    assert kinds == ["PersistentVolumeClaim", "Job", "Job"]
    claim, shards, merge = documents
    spec = shards["spec"]
    assert spec["completionMode"] == "Indexed"
    assert spec["completions"] == spec["parallelism"] == 4
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    (bench,) = pod["containers"]
    env = {e["name"]: e for e in bench["env"]}
    assert env["SHARDS"]["value"] == str(spec["completions"])
    assert "secretKeyRef" in env["OPENAI_API_KEY"]["valueFrom"]  # the key never inline
    script = bench["args"][0]
    assert "shard=$((JOB_COMPLETION_INDEX + 1))" in script  # 0-based index, 1-based shard
    assert '--agentbench-shard "$shard/$SHARDS"' in script
    assert '--agentbench-dir "$dir"' in script and "dir=/runs/shard-$shard" in script
    used = set(re.findall(r"--[a-z][a-z-]+", script))
    assert used <= _flags() | {"--agent", "--sandbox", "--repeats", "--tasks"}, used
    mounts = {m["name"]: m["mountPath"] for m in bench["volumeMounts"]}
    assert mounts == {"runs": "/runs"}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["runs"]["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    assert "ReadWriteMany" in claim["spec"]["accessModes"]
    after = merge["spec"]["template"]["spec"]
    assert shards["metadata"]["name"] in after["initContainers"][0]["args"][0]
    merging = after["containers"][0]["args"][0]
    assert "agentbench merge /runs/shard-* -o /runs/merged.json" in merging
    assert merging.rstrip().endswith("--gates gates.toml")


def test_the_slurm_array_runs_one_shard_per_task_then_merges() -> None:
    path = EXAMPLES / "slurm-array.sh"
    subprocess.run(["bash", "-n", str(path)], check=True)
    text = path.read_text()
    assert "#SBATCH --array=1-4" in text  # 1-based, as --agentbench-shard
    assert '--agentbench-shard "${SLURM_ARRAY_TASK_ID}/${shards}"' in text
    assert '--dependency="afterany:${SLURM_ARRAY_JOB_ID}"' in text
    assert "agentbench merge runs/shard-* -o runs/merged.json" in text
    assert "--gates gates.toml" in text
