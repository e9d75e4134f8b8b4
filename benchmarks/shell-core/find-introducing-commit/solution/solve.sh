#!/bin/bash
cd /workspace/shop
git log -S FEATURE_FLAG_X --reverse --format=%s | head -n 1 > /workspace/answer.txt
