#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
printf '#!/bin/bash\nfor i in $(seq "$2"); do echo "$1"; done\n' > dragon_tunnel.sh
)
cd "$WD"
(
chmod +x dragon_tunnel.sh
)
cd "$WD"
