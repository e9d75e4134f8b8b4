#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
printf '#!/bin/bash\necho "Hi, $1!"\n' > 'marble (7).sh'
)
cd "$WD"
(
chmod +x 'marble (7).sh'
)
cd "$WD"
