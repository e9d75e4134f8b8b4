#!/bin/bash
cd /workspace
find app -xtype l | LC_ALL=C sort > broken_links.txt
find app -xtype l -delete
