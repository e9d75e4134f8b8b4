#!/bin/bash
grep -c '^10\.0\.0\.5 ' /workspace/access.log > /workspace/count.txt
