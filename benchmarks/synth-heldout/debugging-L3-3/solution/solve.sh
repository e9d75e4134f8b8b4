#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
./lunar_zephyr.sh
)
cd "$WD"
(
head -n 1 lunar_zephyr.sh
)
cd "$WD"
(
sed -i '1s|.*|#!/bin/bash|' lunar_zephyr.sh
)
cd "$WD"
(
chmod +x lunar_zephyr.sh
)
cd "$WD"
