#!/bin/bash
# fails when the data dir is missing
echo "checking data dir"
test -d data
