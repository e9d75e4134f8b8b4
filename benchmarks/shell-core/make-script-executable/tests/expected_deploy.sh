#!/bin/bash
echo "deploying build $(cat /workspace/BUILD_ID)"
