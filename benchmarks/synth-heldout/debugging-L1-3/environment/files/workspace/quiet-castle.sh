#!/bin/bash
echo "Total: $(wcc -l < autumn-engine.txt)"
