#!/bin/bash
awk '$2 == "ERROR"' /workspace/server.log > /workspace/errors.txt
