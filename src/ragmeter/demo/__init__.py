"""ragmeter.demo."""
