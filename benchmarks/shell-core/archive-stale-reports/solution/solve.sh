#!/bin/bash
cd /workspace/reports
mkdir -p old
touch -d '2023-01-01 00:00:00' /tmp/cutoff
find . -maxdepth 1 -type f ! -newer /tmp/cutoff -exec mv -t old/ {} +
