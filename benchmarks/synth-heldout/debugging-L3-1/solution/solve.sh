#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
./'floral prairie fjörd.sh'
)
cd "$WD"
(
head -n 1 'floral prairie fjörd.sh'
)
cd "$WD"
(
sed -i '1s|.*|#!/bin/bash|' 'floral prairie fjörd.sh'
)
cd "$WD"
(
chmod +x 'floral prairie fjörd.sh'
)
cd "$WD"
