#!/bin/bash
cd /workspace
find secrets -type d -exec chmod 700 {} +
find secrets -type f -exec chmod 600 {} +
