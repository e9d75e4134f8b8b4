#!/bin/bash
mkdir -p /workspace/site
tar -xzf /workspace/site.tar.gz -C /workspace/site
