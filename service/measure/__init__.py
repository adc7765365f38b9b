"""Measuring: building session engines with their token counter and prices, the o200k tokenizer set-up and counter, calibration."""
