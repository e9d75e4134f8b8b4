#!/bin/bash
# Expensive job: every run is recorded.
runs=$(cat /workspace/.producer_runs 2>/dev/null || echo 0)
echo $((runs + 1)) > /workspace/.producer_runs
echo "info: loading 3 shards"
echo "warn: shard 2 is stale"
echo "info: shard 1 ok"
echo "error: shard 3 checksum mismatch"
echo "info: warn: threshold set to 5"
echo "warn: retrying shard 3"
echo "warning-free section starts"
echo "warn: shard 3 recovered"
echo "info: done"
