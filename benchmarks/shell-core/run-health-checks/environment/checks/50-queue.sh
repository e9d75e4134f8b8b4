#!/bin/bash
set -e
false
echo "never reached"
