#!/bin/bash
cd /workspace
sed -i 's/^  echo "Hi there, \$name"$/&\nfi/' greet.sh
