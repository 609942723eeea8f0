# Convenience targets. The test command CI runs is scripts/test.sh.
.PHONY: fuzz bench-analyze

FUZZ_SECONDS ?= 60

# Fuzz the analyzer's reader, decoder and whole pipeline for FUZZ_SECONDS per target
# (bench/fuzz_trace.sh: installs cargo-fuzz if missing, needs nightly or falls back).
fuzz:
	bash bench/fuzz_trace.sh $(FUZZ_SECONDS)

# Analyzer speed vs tshark, tcptrace and cat on a >= 5 M-packet real capture (root).
bench-analyze:
	python3 bench/analyze_speed.py
