#!/bin/bash
cd /workspace
./producer.sh | awk '/^warn:/ { print > "warnings.txt"; next } { print > "rest.txt" }'
