#!/bin/bash
# Greets the user named in $1 (default: friend). root gets a special greeting.
name=${1:-friend}
if [ "$name" = "root" ]; then
  echo "Hi admin"
else
  echo "Hi there, $name"

echo "Have a nice day."
