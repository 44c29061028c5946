"""Every rendering of a run: the controller's reporter (reporter), the plan printed after
collection (plan), the terminal block, HTML, Markdown and CSV, evidence and breakdowns, the
metering readout, the code measures' table and the progress letters. May import scoring/,
run/ and everything below; never the face (plugin.py, header.py, commands/)."""
