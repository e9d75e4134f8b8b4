#!/bin/bash
echo "[1/4] fetching sources"
echo "[2/4] compiling"
echo "cc: warning: unused variable 'tmp'" >&2
echo "[3/4] linking"
echo "ld: error: undefined reference to 'render_frame'" >&2
echo "build failed" >&2
exit 3
