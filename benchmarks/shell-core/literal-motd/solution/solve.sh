#!/bin/bash
cat > /workspace/motd.txt <<'MOTD'
Welcome to $HOSTNAME!
Today's build: `git describe --tags`
Tip: use \n for newlines and "$HOME/bin" for tools.
Cost: $5 per seat
MOTD
