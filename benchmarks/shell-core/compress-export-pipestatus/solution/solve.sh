#!/bin/bash
cd /workspace
./export.sh 2> export.err | gzip > export.csv.gz
echo "${PIPESTATUS[0]}" > export.status
