#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
printf '#!/bin/bash\nfor ((i = 1; i <= $1; i++)); do echo "$i"; done\n' > plain_satchel.sh
)
cd "$WD"
(
chmod +x plain_satchel.sh
)
cd "$WD"
(
./plain_satchel.sh 3
)
cd "$WD"
