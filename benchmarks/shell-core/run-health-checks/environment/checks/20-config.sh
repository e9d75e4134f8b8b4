#!/bin/bash
echo "checking config"
grep -q '^port=' config.ini
