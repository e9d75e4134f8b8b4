#!/bin/bash
cd /workspace
find repo -type d -name __pycache__ -prune -exec rm -rf {} +
find repo -type f -name '*.pyc' -delete
