#!/bin/bash
chmod +x /workspace/deploy.sh
