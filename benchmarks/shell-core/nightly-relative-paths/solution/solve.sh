#!/bin/bash
cd /workspace
sed -i 's|^set -e$|set -e\ncd "$(dirname "$(readlink -f "$0")")"|' nightly.sh
