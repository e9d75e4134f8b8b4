#!/bin/bash
cd /workspace
find data -type f -size +10240c | LC_ALL=C sort > big_files.txt
