#!/bin/bash
cd /workspace
export LC_ALL=C
tar -tzf release-1.0.tar.gz | grep -v '/$' | cut -d/ -f2- | sort > /tmp/r10.txt
tar -tzf release-1.1.tar.gz | grep -v '/$' | cut -d/ -f2- | sort > /tmp/r11.txt
comm -13 /tmp/r10.txt /tmp/r11.txt > added.txt
