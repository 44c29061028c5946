"""The loopback metering proxy: neutral token counts, injected faults and the HTTP status that
ended a trial, read from the wire between an agent CLI and its provider (docs/metering.md). May
import tasks/ (the Observation's `metered` type), fs/ and settings; its readout lives in
scoring/metering.py and report/metering.py."""
