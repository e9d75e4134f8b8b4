#!/bin/bash
cd /workspace/billing
git revert --no-edit HEAD
