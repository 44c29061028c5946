"""What a run will do before it does it: collection of task directories and generated
suites into TaskItems (collect), pasted node ids and --lf (selection), CI shards (shard) and the
arms' interleaved trial order (arm_trials). May import tasks/, suites/, the sandbox/agents/
meter/grading layer, fs/ and settings; never trial/ or anything above."""
