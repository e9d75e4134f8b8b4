#!/bin/bash
name="$1"
echo "Report for $nmae"
