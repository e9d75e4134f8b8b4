#!/bin/bash
cd /workspace
find project -type f -name '*.py' | LC_ALL=C sort > py_files.txt
