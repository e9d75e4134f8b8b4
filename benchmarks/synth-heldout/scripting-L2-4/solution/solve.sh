#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
printf '#!/bin/bash\nfor i in $(seq "$2"); do echo "$1"; done\n' > ledger_meadow.sh
)
cd "$WD"
(
chmod +x ledger_meadow.sh
)
cd "$WD"
