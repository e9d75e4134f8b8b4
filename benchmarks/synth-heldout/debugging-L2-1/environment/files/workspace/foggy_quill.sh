#!/bin/bash
city="$1"
echo "Report for $ctiy"
