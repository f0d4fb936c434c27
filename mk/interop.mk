# Wire compatibility with the real Redisson (tests/interop, README there).
# `make interop` is NOT part of `make test`: it needs a JDK, Maven and, the
# first time, Maven Central (Redisson is fetched into ~/.m2). It starts its
# own redis-server, runs hilock C processes against Redisson RLocks on the
# same locks, prints one line per scenario and "N passed, N failed".
#
# A JDK (17+) and Maven come from Debian only when `java` or `mvn` is
# missing, so a machine with its own JDK/Maven is left alone.
INTEROP_APT_PACKAGES := default-jdk-headless maven
INTEROP_FILTER ?=

.PHONY: interop

interop: build
	@if ! command -v java >/dev/null 2>&1 || ! command -v mvn >/dev/null 2>&1; then \
		APT_PACKAGES="$(INTEROP_APT_PACKAGES)" sh tools/install-deps.sh; fi
	sh tests/interop/run.sh "$(BUILD)" "$(INTEROP_FILTER)"
