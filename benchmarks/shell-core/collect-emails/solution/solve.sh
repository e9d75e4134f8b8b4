#!/bin/bash
cd /workspace
grep -rhoE '[A-Za-z0-9._+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}' contacts \
  | tr 'A-Z' 'a-z' | LC_ALL=C sort -u > emails.txt
