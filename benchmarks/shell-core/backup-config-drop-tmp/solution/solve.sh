#!/bin/bash
cp -a config config.bak
find config -type f -name '*.tmp' -delete
