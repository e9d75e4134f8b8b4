#!/bin/bash
python3 -c 'import json; print(json.load(open("/workspace/package.json"))["version"])' > /workspace/version.txt
