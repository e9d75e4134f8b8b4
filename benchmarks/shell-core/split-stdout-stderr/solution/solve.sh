#!/bin/bash
cd /workspace
./generate.sh > out.txt 2> err.txt
