#!/bin/bash
v=$(cat VERSION)
[ "$v" = "2.0" ] && exit 0
echo "unexpected version $v" >&2
exit 42
