"""The run viewer: one web app over run directories and reports, served live on loopback
(server), written as static files (bundle) or inlined into one HTML file (page). The data it
shows is built here (loading, payloads, trial_detail) from the scored document and the run
directories' trial folders. May import report/, scoring/, run/ and everything below; never the
face (plugin.py, commands/)."""
