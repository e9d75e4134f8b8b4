#!/bin/bash
cd /workspace
find tools -type d -exec chmod 755 {} +
find tools -type f -name '*.sh' -exec chmod 750 {} +
find tools -type f ! -name '*.sh' -exec chmod 640 {} +
