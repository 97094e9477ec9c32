"""ragmeter.reports."""
