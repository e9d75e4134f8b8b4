#!/bin/bash
find /workspace/docs -type f -name '*.md' -exec sed -i 's/Acme Widget/Acme Gadget/g' {} +
