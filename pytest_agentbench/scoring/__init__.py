"""Numbers from Observations: per-task and summary metrics, statistics and intervals
(metrics, stats), the scored document a JSON report holds (document), configurations read back
and merged (configurations, merged), rollups, paired comparison and gates (compare), the arms'
comparison (arm_compare), the metering figures (metering) and the code measures' medians
(measures). May import run/ and everything
below; never report/ or the face."""
