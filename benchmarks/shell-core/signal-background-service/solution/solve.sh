#!/bin/bash
cd /workspace
./service.sh &
pid=$!
until [ -e service.ready ]; do sleep 0.05; done
kill -USR1 "$pid"
until grep -q '^reloaded config$' service.log; do sleep 0.05; done
kill -TERM "$pid"
wait "$pid"
echo $? > service.status
