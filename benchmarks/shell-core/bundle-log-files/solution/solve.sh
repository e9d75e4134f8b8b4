#!/bin/bash
cd /workspace
tar -czf logs.tar.gz logs/*.log && rm logs/*.log
