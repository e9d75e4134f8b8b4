#!/bin/bash
cd /workspace
env -i PATH=/usr/bin:/bin AUDIT_ID=2024-Q3 ./audit_env.sh > audit.txt
