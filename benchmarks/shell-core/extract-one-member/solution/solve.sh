#!/bin/bash
cd /workspace
tar -xf bundle.tar config/app.yaml
