#!/bin/bash
printf '%s\n' "$APP_MODE" > /workspace/mode.txt
