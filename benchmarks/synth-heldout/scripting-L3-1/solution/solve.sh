#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
printf '#!/bin/bash\nfor ((i = 1; i <= $1; i++)); do echo "$i"; done\n' > 'déjà domain.sh'
)
cd "$WD"
(
chmod +x 'déjà domain.sh'
)
cd "$WD"
(
./'déjà domain.sh' 3
)
cd "$WD"
