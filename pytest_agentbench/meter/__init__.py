"""The loopback metering proxy: neutral token counts, injected faults and the HTTP status that
ended a trial, read from the wire between an agent CLI and its provider (docs/metering.md)."""
