#!/bin/bash
wc -l < bronze_dock.txt
