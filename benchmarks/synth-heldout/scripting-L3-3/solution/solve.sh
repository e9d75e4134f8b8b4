#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
printf '#!/bin/bash\nfor ((i = 1; i <= $1; i++)); do echo "$i"; done\n' > secret_budget.sh
)
cd "$WD"
(
chmod +x secret_budget.sh
)
cd "$WD"
(
./secret_budget.sh 3
)
cd "$WD"
