#!/bin/bash
cd /workspace
grep -rl 'TODO' src | LC_ALL=C sort > todo_files.txt
