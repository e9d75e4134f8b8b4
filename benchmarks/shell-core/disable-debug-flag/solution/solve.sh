#!/bin/bash
sed -i 's/^debug = true$/debug = false/' /workspace/app.ini
