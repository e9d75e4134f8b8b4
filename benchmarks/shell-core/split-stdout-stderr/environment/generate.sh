#!/bin/bash
echo "row 1: alpha"
echo "warning: row 2 skipped (empty)" >&2
echo "row 3: gamma"
echo "warning: row 4 has trailing spaces" >&2
echo "row 5: epsilon"
echo "done: 3 rows written" >&2
