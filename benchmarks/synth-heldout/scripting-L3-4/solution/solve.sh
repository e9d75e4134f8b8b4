#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
printf '#!/bin/bash\nn=0\nwhile IFS= read -r line; do\n  n=$((n + 1))\n  echo "$n) $line"\ndone < "$1"\n' > 'niño_trail.sh'
)
cd "$WD"
(
chmod +x 'niño_trail.sh'
)
cd "$WD"
(
./'niño_trail.sh' anchor_horizon.txt
)
cd "$WD"
