#!/bin/bash
# A toy service: USR1 reloads, TERM shuts down with status 3.
log=/workspace/service.log
trap 'echo "reloaded config" >> "$log"' USR1
trap 'echo "shutting down" >> "$log"; rm -f /workspace/service.ready; exit 3' TERM
echo "started" >> "$log"
touch /workspace/service.ready
while true; do
  sleep 0.1
done
