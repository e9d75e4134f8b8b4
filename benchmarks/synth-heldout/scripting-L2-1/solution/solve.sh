#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
printf '#!/bin/bash\necho "Hello, $1!"\n' > mossy_sundial.sh
)
cd "$WD"
(
chmod +x mossy_sundial.sh
)
cd "$WD"
