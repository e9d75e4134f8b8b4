#!/bin/bash
cd /workspace
( set -a; . ./app.env; set +a; ./show_config.sh ) > config_dump.txt
