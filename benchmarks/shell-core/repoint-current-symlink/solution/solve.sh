#!/bin/bash
cd /workspace
ln -sfn releases/v2.4.0 current
