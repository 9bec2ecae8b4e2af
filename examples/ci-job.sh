#!/bin/sh
# A CI job script that runs the project's tests in a snug sandbox (README, "In CI").
#
# `exec` makes snug the job's own process: when the runner cancels the job it sends TERM to
# the job's process group (GitHub Actions, GitLab, Buildkite), which reaches snug itself;
# snug relays it to the payload, waits out its 1 s grace and writes the report before it
# exits, so the report is complete when the job ends. Without `exec`, the shell dies of the
# TERM at once and the runner takes the job for ended while snug is still in its grace.
#
# SNUG_REPORT (default snug-report.json) and SNUG_TIMEOUT (default 30m) can be set by the
# job; the command defaults to `make test`.
set -eu
[ "$#" -gt 0 ] || set -- make test
exec snug --report "${SNUG_REPORT:-snug-report.json}" --timeout "${SNUG_TIMEOUT:-30m}" -- "$@"
