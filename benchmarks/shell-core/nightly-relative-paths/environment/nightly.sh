#!/bin/bash
set -e
source lib/helpers.sh
mkdir -p out
summarize data/events.txt > out/summary.txt
log "nightly done"
