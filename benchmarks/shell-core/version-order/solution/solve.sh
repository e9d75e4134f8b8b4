#!/bin/bash
sort -V -u /workspace/releases.txt > /workspace/releases_sorted.txt
