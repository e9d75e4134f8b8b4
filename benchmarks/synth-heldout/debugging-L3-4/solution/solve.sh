#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
./young_compass.sh
)
cd "$WD"
(
head -n 1 young_compass.sh
)
cd "$WD"
(
sed -i '1s|.*|#!/bin/bash|' young_compass.sh
)
cd "$WD"
(
chmod +x young_compass.sh
)
cd "$WD"
