#!/bin/bash
sed -i -e 's/[[:space:]]*$//' -e '/^# BEGIN generated$/,/^# END generated$/d' /workspace/proxy.conf
