#!/bin/bash
cd /workspace
./build.sh > build.log 2>&1
echo $? > status.txt
